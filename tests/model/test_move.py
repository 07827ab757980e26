"""DELIVERY-48: one message moved by id to another queue through management (Artemis
QueueControl#moveMessage), in the model."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.options import ModelOptions
from mqconform.reference_model.profiles import profile


def two_queues(options: ModelOptions | None = None, **target: object) -> Broker:
    """q with m1 (priority 4), m2 (priority 9), m3 pending; q2 with t1 pending."""
    broker = Broker(options or profile("artemis"))
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


def before_2_53() -> Broker:
    """two_queues() on the model of the releases before 2.53.0 (option move_listed off)."""
    return two_queues(options=profile("artemis").evolve(move_listed=False))


@pytest.mark.rules("DELIVERY-48", "SCHED-6")
def test_a_scheduled_message_is_not_moved_before_2_53() -> None:
    b = before_2_53()
    b.send("q", Message("s1", scheduled_at_ms=100))
    before = (b.counters("q"), b.counters("q2"), b.pending_ids("q2"))
    assert b.move_message("q", "s1", "q2") is False
    assert (b.counters("q"), b.counters("q2"), b.pending_ids("q2")) == before
    assert b.counters("q").scheduled_count == 1


@pytest.mark.rules("DELIVERY-48", "SCHED-6", "SCHED-4")
def test_from_2_53_a_scheduled_message_is_moved_and_stays_scheduled_there() -> None:
    """ARTEMIS-5376: out of q's scheduler, acknowledged; the copy keeps its delivery time, so it waits in
    q2's scheduler (counted added and scheduled there) and fires there at that time, to the head."""
    b = two_queues()
    b.send("q", Message("s1", scheduled_at_ms=100))
    assert b.move_message("q", "s1", "q2") is True
    source, target = b.counters("q"), b.counters("q2")
    assert (source.message_count, source.scheduled_count, source.acknowledged, source.added) == (3, 0, 1, 4)
    assert (target.message_count, target.scheduled_count, target.pending_count, target.added) == (2, 1, 1, 2)
    assert b.pending_ids("q2") == ["t1"]
    b.advance(99)
    assert b.pending_ids("q2") == ["t1"]
    b.advance(1)
    assert b.pending_ids("q2") == ["s1", "t1"] and b.counters("q2").scheduled_count == 0
    assert "s1" not in b.pending_ids("q") and b.counters("q").scheduled_count == 0


@pytest.mark.rules("DELIVERY-48", "SCHED-4")
def test_a_message_once_scheduled_fires_at_once_at_the_targets_head() -> None:
    """A message whose delivery time has passed (it fired, it is pending) is moved on every release;
    its copy carries that time, so it goes through q2's scheduler and fires at once, to the head."""
    for broker in (two_queues(), before_2_53()):
        broker.send("q", Message("s1", scheduled_at_ms=10))
        broker.advance(10)
        assert broker.pending_ids("q") == ["m2", "s1", "m1", "m3"]
        assert broker.move_message("q", "s1", "q2") is True
        assert broker.pending_ids("q2") == ["s1", "t1"]
        assert broker.counters("q2").scheduled_count == 0 and broker.counters("q2").added == 2


def paged_broker(options: ModelOptions) -> Broker:
    """Address a (max 200 bytes, PAGE, a read budget of 200 bytes) with queue q holding p1, p2 in memory
    and p3, p4 paged; q2 on an address of its own."""
    b = Broker(options)
    b.declare_address(AddressConfig("a", max_size_bytes=200, page_size_bytes=200, full_policy="PAGE",
                                    max_read_page_bytes=200))
    b.declare_queue(QueueConfig("q", address="a"))
    b.declare_queue(QueueConfig("q2"))
    assert [b.send("a", Message(f"p{n}", size=100)) for n in (1, 2, 3, 4)] == [
        "accepted", "accepted", "paged", "paged"]
    return b


@pytest.mark.rules("DELIVERY-48", "PAGING-2")
def test_from_2_53_a_paged_message_is_moved_before_it_is_depaged() -> None:
    b = paged_broker(profile("artemis"))
    assert b.move_message("q", "p4", "q2") is True
    q = b.counters("q")
    assert (q.message_count, q.paged_count, q.pending_count, q.acknowledged) == (3, 1, 2, 1)
    assert b.pending_ids("q2") == ["p4"] and b.counters("q2").added == 1
    old = paged_broker(profile("artemis").evolve(move_listed=False))
    assert old.move_message("q", "p4", "q2") is False
    assert old.counters("q").paged_count == 2


@pytest.mark.rules("DELIVERY-48", "REDELIVERY-7")
def test_from_2_53_a_delayed_redelivery_is_moved_without_a_delivery_time() -> None:
    """A nacked message waiting out the queue's redelivery delay is in the scheduler; its copy has no
    delivery time of its own (the delay is the reference's), so it is pending at q2's tail."""
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q", redelivery_delay_ms=50))
    b.declare_queue(QueueConfig("q2"))
    b.send("q", Message("m1"))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok"
    assert b.counters("q").scheduled_count == 1
    assert b.move_message("q", "m1", "q2") is True
    assert b.pending_ids("q2") == ["m1"] and b.counters("q").message_count == 0
