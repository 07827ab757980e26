"""DELIVERY-26 on Artemis: a queue declared single_active_consumer is an exclusive queue (createQueue
with "exclusive": true, offered from 2.32.0). Against the adapter's own brokers, 2.40.0 and 2.56.0 one
after the other (no skips: without mvn or java the fixture fails)."""

from __future__ import annotations

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from tests.adapters.artemis_releases import holds_on_the_model_and_the_broker

pytestmark = pytest.mark.broker("artemis")




@pytest.mark.rules("DELIVERY-26")
def test_the_closed_exclusive_consumers_messages_go_to_the_next(artemis: ArtemisAdapter,
                                                                namespace: str) -> None:
    """The scenario (its model side: tests/model/test_consumer_priority.py) holds on the broker."""
    holds_on_the_model_and_the_broker(artemis, namespace, "artemis-exclusive-queue-handover", strict=True)


@pytest.mark.rules("DELIVERY-26")
def test_an_exclusive_queue_has_no_pull_consumer(artemis: ArtemisAdapter, namespace: str) -> None:
    """As the model has it (Unsupported): no pull consumer on a single_active_consumer queue; a
    prefetching one is served."""
    artemis.open(namespace)
    try:
        assert artemis.declare_queue(QueueConfig("q", single_active_consumer=True)).is_ok
        refused = artemis.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
        assert refused.type == "fail" and refused.error.startswith("unsupported")
        assert artemis.open_consumer(ConsumerConfig("d", "q", window_bytes=-1, max_unacked=1)).is_ok
        assert artemis.send("q", Message("m1")).value == "accepted"
        assert artemis.receive("d").value == "m1"
    finally:
        artemis.close()

