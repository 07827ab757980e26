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
        overflow(priority="exclusive")
    other = Broker(ARTEMIS)
    with pytest.raises(Unsupported):
        other.join("q", "s", priority="overflow")


def pinned(*ids: str, clients: int = 2) -> Broker:
    broker = Broker(JETSTREAM)
    broker.declare_address(AddressConfig("s", retention="limits"))
    assert broker.join("q", "s", priority="pinned_client") == "created"
    for n in range(1, clients + 1):
        broker.open_consumer(ConsumerConfig(f"c{n}", "q", window_bytes=0))
    for msg_id in ids:
        assert broker.send("s", Message(msg_id)) == "accepted"
    return broker


@pytest.mark.rules("DELIVERY-45", "DELIVERY-46")
def test_the_first_client_served_is_pinned_and_the_others_wait() -> None:
    broker = pinned("m1", "m2", "m3")
    assert broker.receive("c2") == "m1"  # pinned
    assert broker.receive("c1") is None and broker.fetch("c1", 2) == []
    assert broker.fetch("c2", 2) == ["m2", "m3"]
    assert broker.nack("c2", "m2") == "ok"
    assert broker.receive("c1") is None
    assert broker.receive("c2") == "m2"


@pytest.mark.rules("DELIVERY-46")
def test_no_pin_before_a_message_is_there() -> None:
    broker = pinned()
    assert broker.receive("c1") is None and broker.fetch("c1", 2) == []
    broker.send("s", Message("m1"))
    assert broker.receive("c2") == "m1"
    broker.send("s", Message("m2"))
    assert broker.receive("c1") is None


@pytest.mark.rules("DELIVERY-45", "DELIVERY-47")
def test_after_an_unpin_the_old_client_is_refused_once_and_may_be_pinned_again() -> None:
    broker = pinned("m1", "m2", "m3", "m4")
    assert broker.receive("c1") == "m1"
    broker.unpin("q")
    assert broker.receive("c1") is None  # it named the old id: refused, it forgets it
    assert broker.receive("c1") == "m2"  # without an id: pinned again
    broker.unpin("q")
    assert broker.receive("c2") == "m3"  # c2 pinned
    assert broker.fetch("c1", 2) == []  # the old id, refused at once
    assert broker.receive("c1") is None  # now without an id: it waits
    assert broker.fetch("c2", 3) == ["m4"]


@pytest.mark.rules("DELIVERY-47")
def test_an_old_id_is_kept_while_no_pin_holds_and_no_message_is_there() -> None:
    broker = pinned("m1")
    assert broker.receive("c1") == "m1"
    broker.unpin("q")
    assert broker.fetch("c1", 1) == [] and broker.receive("c1") is None  # nothing there: waits
    broker.send("s", Message("m2"))
    assert broker.fetch("c1", 1) == []  # now refused (423 Nats-Wrong-Pin-Id)
    assert broker.fetch("c1", 1) == ["m2"]


@pytest.mark.rules("DELIVERY-46", "DELIVERY-47", "DELIVERY-44")
def test_a_request_turned_away_in_next_waiting_moves_a_redelivery_to_the_back() -> None:
    """nextWaiting returns no request (cycled while a pin holds; 423 for an old id with no pin), so
    loopAndGatherMsgs puts the redelivery it took back at the end; a 423 at the request moves none."""
    broker = pinned("m1", "m2", "m3", "m4")
    assert broker.fetch("c1", 4) == ["m1", "m2", "m3", "m4"]
    for msg_id in ("m1", "m2", "m3", "m4"):
        assert broker.nack("c1", msg_id) == "ok"
    assert broker.fetch("c2", 2) == []  # no id while c1's pin holds: m1 to the back
    broker.unpin("q")
    assert broker.receive("c1") is None  # the old id, no pin: 423, m2 to the back
    assert broker.receive("c2") == "m3"  # c2 pinned
    assert broker.fetch("c1", 1) == []  # no id while c2's pin holds: m4 to the back
    broker.unpin("q")
    assert broker.receive("c1") == "m1"  # c1 pinned
    assert broker.fetch("c2", 1) == []  # the old id while c1's pin holds: 423 at once, nothing moves
    assert broker.fetch("c1", 2) == ["m2", "m4"]


def test_unpin_needs_a_pinned_client_queue() -> None:
    with pytest.raises(ModelMisuse):
        overflow().unpin("q")
    with pytest.raises(Unsupported):
        Broker(ARTEMIS).unpin("q")


@pytest.mark.rules("DELIVERY-39", "DELIVERY-44")
def test_a_redelivery_a_budget_does_not_fit_goes_to_the_back_of_the_redelivery_queue() -> None:
    broker = overflow(priority=None)
    for msg_id, size in (("m1", 1), ("m2", 2), ("m3", 1)):
        broker.send("s", Message(msg_id, size=size))
    assert broker.fetch("c", 3) == ["m1", "m2", "m3"]
    for msg_id in ("m1", "m2", "m3"):
        assert broker.nack("c", msg_id) == "ok"
    assert broker.fetch("c", 3, max_bytes=2) == ["m1"]  # m2 does not fit: behind m3 now
    assert broker.fetch("c", 3) == ["m3", "m2"]
