"""Edges of the queue model the seed stories do not reach: transactions, misuse, events, evictions
of messages held in odd places."""

from __future__ import annotations

import attrs
import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse
from mqconform.reference_model.profiles import profile

rules = pytest.mark.rules


def pull(broker: Broker, name: str = "c", queue: str = "q") -> None:
    broker.open_consumer(ConsumerConfig(name, queue, window_bytes=0))


@rules("DELIVERY-8", "DELIVERY-10", "REDELIVERY-3")
def test_commit_acknowledges_the_tx_acked_messages_only_then() -> None:
    b = Broker()
    b.declare_queue(QueueConfig("q"))
    pull(b)
    b.send("q", Message("m1"))
    b.send("q", Message("m2"))
    b.receive("c"), b.receive("c")
    assert b.ack("c", "m1", tx=True) == "ok"
    c = b.counters("q")
    assert (c.delivering_count, c.acknowledged) == (2, 0)  # C3: acked in a tx still delivering
    b.commit("c")
    c = b.counters("q")
    assert (c.delivering_count, c.acknowledged, c.message_count) == (1, 1, 1)
    assert b.unacked_ids("c") == ["m2"]


def test_misuse_of_declarations_is_an_exception_not_an_outcome() -> None:
    b = Broker()
    b.declare_address(AddressConfig("a"))
    with pytest.raises(ModelMisuse, match="already exists"):
        b.declare_address(AddressConfig("a"))
    with pytest.raises(ModelMisuse, match="full_policy"):
        b.declare_address(AddressConfig("x", full_policy="SPILL"))  # type: ignore[arg-type]
    with pytest.raises(ModelMisuse, match="page_size_bytes"):
        b.declare_address(AddressConfig("y", page_size_bytes=0))
    with pytest.raises(ModelMisuse, match="ring_size"):
        b.declare_queue(QueueConfig("q", ring_size=-5))
    b.declare_queue(QueueConfig("q"))
    pull(b)
    with pytest.raises(ModelMisuse, match="already exists"):
        pull(b)
    with pytest.raises(ModelMisuse, match="ring size"):
        b.set_ring_size("q", -2)
    with pytest.raises(ModelMisuse, match="size"):
        b.send("q", Message("neg", size=-1))
    with pytest.raises(ModelMisuse, match="unknown address"):
        b.paging("nowhere")
    assert b.queue_address("q") == "q"
    assert b.nack("c", "never-received") == "failed"


@rules("RING-3", "REDELIVERY-6")
def test_events_record_what_the_model_did_on_its_own() -> None:
    b = Broker()
    b.record_events = True
    b.declare_queue(QueueConfig("q", ring_size=1, max_delivery_attempts=1))
    b.send("q", Message("m1"))
    b.send("q", Message("m2"))
    pull(b)
    b.receive("c")
    b.nack("c", "m2")  # a nack keeps the increment: 1 >= max attempts 1, dead-lettered
    kinds = [(e.kind, e.msg_id) for e in b.events]
    assert ("replaced", "m1") in kinds and ("killed", "m2") in kinds


@rules("RING-18")
def test_stored_eviction_reaches_buffered_and_tx_acked_messages() -> None:
    b = Broker(profile("jetstream").evolve(features=profile("artemis").features))
    b.declare_queue(QueueConfig("q", ring_size=2))
    b.open_consumer(ConsumerConfig("c", "q", window_messages=5))
    b.send("q", Message("m1"))
    b.send("q", Message("m2"))  # both dispatched to the consumer's buffer, not yet received
    b.send("q", Message("m3"))  # the oldest stored message goes, although it is buffered
    assert b.counters("q").replaced == 1
    assert b.receive("c") == "m2"
    assert b.ack("c", "m2", tx=True) == "ok"
    b.send("q", Message("m4"))  # now the oldest stored one is tx-acked m2
    assert b.counters("q").replaced == 2
    assert b.ack("c", "m1") == "ok"  # a late ack of an evicted message is a no-op answered ok


@rules("RING-19", "DELIVERY-20")
def test_stored_eviction_of_an_orphaned_pel_entry() -> None:
    b = Broker(profile("redis-streams"))
    b.declare_queue(QueueConfig("q", ring_size=1))
    pull(b)
    b.send("q", Message("m1"))
    b.receive("c")
    b.close("c")  # m1 stays pending in the PEL with no consumer
    b.send("q", Message("m2"))
    c = b.counters("q")
    assert (c.replaced, c.delivering_count, c.message_count) == (1, 0, 1)


@rules("REDELIVERY-11")
def test_credit_returns_at_half_the_window_and_a_rollback_returns_the_buffers() -> None:
    b = Broker()
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=400))
    for n in range(6):
        b.send("q", Message(f"m{n}"))
    assert b.counters("q").delivering_count == 4  # credit 400 -> 0: four dispatched
    b.receive("c")
    assert b.counters("q").delivering_count == 4  # 100 consumed < 200
    b.rollback("c")  # clear(): the three buffered count as consumed: 400 >= 200 returns 400
    c = b.counters("q")
    assert (c.delivering_count, c.pending_count) == (4, 2)
    one = Broker()
    one.declare_queue(QueueConfig("q"))
    one.open_consumer(ConsumerConfig("c", "q", window_bytes=1))
    one.send("q", Message("a")), one.send("q", Message("b"))
    assert one.counters("q").delivering_count == 1  # window 1: one buffered
    assert one.receive("c") == "a" and one.counters("q").delivering_count == 2  # refilled at once


@rules("REDELIVERY-29", "REDELIVERY-30")
def test_a_consumer_close_leaves_the_session_transaction_and_a_session_close_rolls_it_back() -> None:
    b = Broker()
    b.declare_queue(QueueConfig("q", redelivery_delay_ms=50))
    b.declare_queue(QueueConfig("other"))
    pull(b)
    b.send("q", Message("m1"))
    b.receive("c")
    b.ack("c", "m1", tx=True)
    b.close("c")
    with pytest.raises(ModelMisuse, match="holds messages of queue 'q'"):
        pull(b, queue="other")
    pull(b)  # the session goes on: its tx-acked message is in the new consumer's transaction
    b.send("q", Message("m2"))
    assert b.receive("c") == "m2"
    b.close_session("c")
    c = b.counters("q")
    assert (c.pending_count, c.scheduled_count, c.delivering_count) == (1, 1, 0)
    assert b.delivery_count("q", "m1") == 1 and b.delivery_count("q", "m2") == 0
    assert "c" not in b.consumers and not b.sessions
    classic = Broker(profile("activemq-classic"))  # close_keeps_tx off: the close returns all
    classic.declare_queue(QueueConfig("q"))
    pull(classic)
    classic.send("q", Message("m1"))
    classic.receive("c")
    classic.ack("c", "m1", tx=True)
    classic.close("c")
    assert classic.counters("q").pending_count == 1 and not classic.sessions


@rules("DELIVERY-13", "REDELIVERY-10")
def test_a_sorted_return_goes_to_the_head_when_its_sequence_is_not_above_the_heads() -> None:
    b = Broker()
    b.declare_queue(QueueConfig("q", redelivery_delay_ms=10))
    pull(b)
    for n in (1, 2, 3):
        b.send("q", Message(f"m{n}"))
    b.receive("c")
    b.rollback("c")  # m1 delayed; comes back at the head
    b.receive("c")  # m2
    b.advance(10)
    assert b.pending_ids("q") == ["m1", "m3"]
    b.close("c")  # m2 (sequence 2) is above the head m1 (1): by sequence, not at the head
    assert b.pending_ids("q") == ["m1", "m2", "m3"]


@rules("DELIVERY-13", "REDELIVERY-10", "REDELIVERY-23")
def test_a_sorted_return_goes_among_earlier_head_inserts_by_sequence() -> None:
    """LinkedListImpl#addSorted: not <= the head and not >= the tail, a message goes in front of the
    first message after the head whose sequence is not lower, also among earlier head inserts."""
    from mqconform.reference_model.pending import PendingList

    @attrs.frozen
    class Item:
        id: str
        sequence: int

    pending: PendingList[Item] = PendingList(1, lambda _: 0, lambda item: item.sequence)
    pending.add_tail(Item("m8", 8), 8, 1)
    for n in (7, 6, 5, 3, 2, 1):  # returned newest first: each goes to the head
        pending.add_sorted(Item(f"m{n}", n), n, 1)
    pending.add_sorted(Item("m4", 4), 4, 1)
    pending.add_sorted(Item("m9", 9), 9, 1)  # above the tail: appended
    pending.add_sorted(Item("m0", 0), 0, 1)  # not above the head: the head
    assert [item.id for item in pending] == [f"m{n}" for n in range(10)]
    pending.add_sorted(Item("m45", 4), 4, 1)  # a tie goes in front of the message with the same sequence
    order = [item.id for item in pending]
    assert order.index("m45") == order.index("m4") - 1
