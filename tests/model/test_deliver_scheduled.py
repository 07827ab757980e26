"""SCHED-16: one scheduled message delivered now through management (Artemis
QueueControl#deliverScheduledMessage), in the model."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import Unsupported
from mqconform.reference_model.profiles import profile


def scheduled(**queue: object) -> Broker:
    """q with m1, m2 pending and s1 (due 100), s2 (due 50) scheduled."""
    broker = Broker(profile("artemis"))
    broker.declare_queue(QueueConfig("q", **queue))  # type: ignore[arg-type]
    for msg in (Message("m1"), Message("s1", scheduled_at_ms=100), Message("m2"),
                Message("s2", scheduled_at_ms=50)):
        broker.send("q", msg)
    return broker


@pytest.mark.rules("SCHED-16")
def test_a_delivered_scheduled_message_goes_to_the_head_and_its_due_time_does_nothing() -> None:
    b = scheduled()
    assert b.deliver_scheduled("q", "s1") is True
    assert b.pending_ids("q") == ["s1", "m1", "m2"]
    c = b.counters("q")
    assert (c.scheduled_count, c.pending_count, c.message_count, c.added) == (1, 3, 4, 4)
    assert b.deliver_scheduled("q", "s2") is True  # the later one ends in front of the earlier one
    assert b.pending_ids("q") == ["s2", "s1", "m1", "m2"]
    b.advance(200)
    assert b.pending_ids("q") == ["s2", "s1", "m1", "m2"]
    assert b.counters("q").added == 4


@pytest.mark.rules("SCHED-16")
def test_an_id_the_scheduler_does_not_hold_changes_nothing() -> None:
    b = scheduled()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert b.receive("c") == "m1"
    before = (b.counters("q"), b.pending_ids("q"))
    for msg_id in ("m1", "m2", "never"):  # delivering, pending, unknown
        assert b.deliver_scheduled("q", msg_id) is False
    assert (b.counters("q"), b.pending_ids("q")) == before
    assert b.deliver_scheduled("q", "s2") is True and b.deliver_scheduled("q", "s2") is False


@pytest.mark.rules("SCHED-16", "SCHED-8")
def test_a_full_ring_replaces_the_delivered_message() -> None:
    b = scheduled(ring_size=2)
    assert b.deliver_scheduled("q", "s1") is True
    c = b.counters("q")
    assert b.pending_ids("q") == ["m1", "m2"]
    assert (c.scheduled_count, c.pending_count, c.replaced, c.added) == (1, 2, 1, 4)


@pytest.mark.rules("SCHED-16")
def test_a_pull_consumer_receives_it_first() -> None:
    b = scheduled()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert b.deliver_scheduled("q", "s2") is True
    assert [b.receive("c") for _ in range(3)] == ["s2", "m1", "m2"]


@pytest.mark.rules("SCHED-16")
def test_a_profile_without_the_operation_refuses_it() -> None:
    b = Broker(profile("hornetq"))
    b.declare_queue(QueueConfig("q"))
    with pytest.raises(Unsupported):
        b.deliver_scheduled("q", "m1")


@pytest.mark.rules("SCHED-16", "LASTVALUE-10")
def test_on_a_last_value_queue_it_becomes_its_values_current_message() -> None:
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q", last_value_key="k"))
    b.send("q", Message("s1", scheduled_at_ms=100, properties={"k": "a"}))
    b.send("q", Message("m1", properties={"k": "a"}))
    b.send("q", Message("m2", properties={"k": "b"}))
    assert b.deliver_scheduled("q", "s1") is True  # LastValueQueue#addHead(ref, scheduling=true)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert [b.receive("c"), b.receive("c"), b.receive("c")] == ["s1", "m2", None]
