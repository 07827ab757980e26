"""DELIVERY-48: one message moved by id to another queue through management (Artemis
QueueControl#moveMessage), in the model."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import profile


def two_queues(**target: object) -> Broker:
    """q with m1 (priority 4), m2 (priority 9), m3 pending; q2 with t1 pending."""
    broker = Broker(profile("artemis"))
    broker.declare_queue(QueueConfig("q"))
    broker.declare_queue(QueueConfig("q2", **target))  # type: ignore[arg-type]
    for msg in (Message("m1"), Message("m2", priority=9), Message("m3", ttl_ms=50)):
        broker.send("q", msg)
    broker.send("q2", Message("t1"))
    return broker


@pytest.mark.rules("DELIVERY-48")
def test_a_moved_message_is_acknowledged_here_and_added_there_at_the_tail() -> None:
    b = two_queues()
    assert b.move_message("q", "m1", "q2") is True
    assert b.pending_ids("q") == ["m2", "m3"]
    assert b.pending_ids("q2") == ["t1", "m1"]
    source, target = b.counters("q"), b.counters("q2")
    assert (source.message_count, source.pending_count, source.acknowledged, source.added) == (2, 2, 1, 3)
    assert (target.message_count, target.pending_count, target.acknowledged, target.added) == (2, 2, 0, 2)


@pytest.mark.rules("DELIVERY-48", "DELIVERY-3")
def test_the_copy_keeps_its_priority_and_loses_its_ttl() -> None:
    b = two_queues()
    assert b.move_message("q", "m3", "q2") is True
    assert b.move_message("q", "m2", "q2") is True
    assert b.pending_ids("q2") == ["m2", "t1", "m3"]
    b.advance(100)  # m3's TTL (50 ms) would have expired it in q
    assert b.counters("q2").expired == 0
    b.open_consumer(ConsumerConfig("c", "q2", window_bytes=0))
    assert [b.receive("c") for _ in range(4)] == ["m2", "t1", "m3", None]
    assert b.delivery_count("q2", "m2") == 1


@pytest.mark.rules("DELIVERY-48")
def test_a_held_gone_or_unknown_message_is_not_moved() -> None:
    b = two_queues()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    held = b.receive("c")
    assert held == "m2"
    before = (b.counters("q"), b.pending_ids("q"), b.counters("q2"), b.pending_ids("q2"))
    for msg_id in (held, "never"):
        assert b.move_message("q", msg_id, "q2") is False
    assert (b.counters("q"), b.pending_ids("q"), b.counters("q2"), b.pending_ids("q2")) == before
    assert b.move_message("q", "m1", "q2") is True and b.move_message("q", "m1", "q2") is False
    assert b.ack("c", held) == "ok"  # the held one is still the consumer's


@pytest.mark.rules("DELIVERY-48")
def test_a_message_buffered_by_a_pushing_consumer_is_not_moved() -> None:
    b = two_queues()
    b.open_consumer(ConsumerConfig("c", "q"))  # the default window: all three dispatched
    assert b.move_message("q", "m1", "q2") is False
    assert b.counters("q").delivering_count == 3


@pytest.mark.rules("DELIVERY-48")
def test_the_target_filter_is_not_applied() -> None:
    b = two_queues(filter="colour = 'red'")
    assert b.move_message("q", "m1", "q2") is True
    assert b.pending_ids("q2") == ["m1"]  # t1 was filtered out at its send, m1 is not


@pytest.mark.rules("DELIVERY-48")
def test_misuse_and_profiles_without_the_operation() -> None:
    b = two_queues()
    with pytest.raises(ModelMisuse):
        b.move_message("q", "m1", "nowhere")
    h = Broker(profile("hornetq"))
    h.declare_queue(QueueConfig("q"))
    with pytest.raises(Unsupported):
        h.move_message("q", "m1", "q")


@pytest.mark.rules("DELIVERY-48")
def test_a_scheduled_message_is_not_moved_as_before_2_53() -> None:
    b = two_queues()
    b.send("q", Message("s1", scheduled_at_ms=100))
    assert b.move_message("q", "s1", "q2") is False
    assert b.counters("q").scheduled_count == 1
