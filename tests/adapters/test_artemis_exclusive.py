"""DELIVERY-26 on Artemis: a queue declared single_active_consumer is an exclusive queue (createQueue
with "exclusive": true, offered from 2.32.0). Against the adapter's own brokers, 2.40.0 and 2.56.0 one
after the other (no skips: without mvn or java the fixture fails)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario

pytestmark = pytest.mark.broker("artemis")

SCENARIO = Path(__file__).parent / "scenarios" / "artemis-exclusive-queue-handover.yaml"


@pytest.fixture(scope="module", params=["2.40.0", "2.56.0"])
def artemis(request: pytest.FixtureRequest) -> Iterator[ArtemisAdapter]:
    adapter = ArtemisAdapter(version=request.param)
    yield adapter
    adapter.shutdown()


@pytest.mark.rules("DELIVERY-26")
def test_the_closed_exclusive_consumers_messages_go_to_the_next(artemis: ArtemisAdapter,
                                                                namespace: str) -> None:
    """The scenario (its model side: tests/model/test_consumer_priority.py) holds on the broker."""
    outcome = run_scenario(load(SCENARIO), artemis, strict=True, namespace=namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()
    assert artemis.server_version == artemis.version


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

