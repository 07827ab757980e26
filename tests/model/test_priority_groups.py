"""DELIVERY-41..44: the overflow priority policy of pull requests (reference_model/priority_groups.py)."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import ARTEMIS, JETSTREAM


def overflow(*ids: str, priority: str | None = "overflow") -> Broker:
    broker = Broker(JETSTREAM)
    broker.declare_address(AddressConfig("s", retention="limits"))
    assert broker.join("q", "s", priority=priority) == "created"
    broker.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for msg_id in ids:
        assert broker.send("s", Message(msg_id)) == "accepted"
    return broker


@pytest.mark.rules("DELIVERY-41", "DELIVERY-44")
def test_min_pending_counts_the_message_about_to_be_delivered() -> None:
    broker = overflow("m1", "m2", "m3", "m4")
    assert broker.fetch("c", 1, min_pending=5) == []  # 4 pending
    assert broker.fetch("c", 4, min_pending=3) == ["m1", "m2"]  # m3: 2 pending with it
    assert broker.consumer_state("q")["num_pending"] == 2  # m3 stays first
    assert broker.fetch("c", 4, min_pending=2) == ["m3"]
    assert broker.fetch("c", 4) == ["m4"]  # no threshold: an ordinary pull


@pytest.mark.rules("DELIVERY-41", "DELIVERY-44")
def test_a_redelivery_counts_beside_the_messages_never_delivered() -> None:
    broker = overflow("m1", "m2", "m3")
    assert broker.fetch("c", 1) == ["m1"]
    assert broker.nack("c", "m1") == "ok"
    # num_pending 2 (m2, m3), the redelivery of m1 counts beside them: 3
    assert broker.fetch("c", 1, min_pending=4) == []
    assert broker.fetch("c", 1, min_pending=3) == ["m1"]
    assert broker.delivery_count("q", "m1") == 2


@pytest.mark.rules("DELIVERY-44")
def test_a_redelivery_not_given_goes_to_the_back_of_the_redelivery_queue() -> None:
    broker = overflow("m1", "m2", "m3")
    assert broker.fetch("c", 2) == ["m1", "m2"]
    assert broker.nack("c", "m1") == "ok" and broker.nack("c", "m2") == "ok"
    assert broker.fetch("c", 2, min_pending=9) == []  # m1 declined: behind m2 now
    assert broker.delivery_count("q", "m1") == 1
    assert broker.fetch("c", 3) == ["m2", "m1", "m3"]


@pytest.mark.rules("DELIVERY-42")
def test_min_ack_pending_counts_what_is_delivered_and_not_acknowledged() -> None:
    broker = overflow("m1", "m2", "m3", "m4")
    assert broker.fetch("c", 1, min_ack_pending=1) == []
    assert broker.receive("c") == "m1"
    assert broker.fetch("c", 3, min_ack_pending=1) == ["m2", "m3", "m4"]
    assert broker.ack("c", "m1") == "ok"
    broker.send("s", Message("m5"))
    assert broker.fetch("c", 1, min_ack_pending=4) == []  # 3 held
    assert broker.fetch("c", 1, min_ack_pending=3) == ["m5"]


@pytest.mark.rules("DELIVERY-43")
def test_either_threshold_is_enough() -> None:
    broker = overflow("m1", "m2")
    assert broker.fetch("c", 1, min_pending=9, min_ack_pending=1) == []
    assert broker.fetch("c", 1, min_pending=2, min_ack_pending=9) == ["m1"]
    assert broker.fetch("c", 1, min_pending=9, min_ack_pending=1) == ["m2"]


def test_thresholds_need_an_overflow_queue_and_the_feature() -> None:
    broker = overflow("m1", priority=None)
    with pytest.raises(ModelMisuse):
        broker.fetch("c", 1, min_pending=1)
    assert broker.fetch("c", 1) == ["m1"]
    with pytest.raises(ModelMisuse):
        overflow().fetch("c", 1, min_pending=-1)
    with pytest.raises(ModelMisuse):
        overflow(priority="pinned_client")
    other = Broker(ARTEMIS)
    with pytest.raises(Unsupported):
        other.join("q", "s", priority="overflow")
