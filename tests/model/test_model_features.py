"""Artemis-only queue features: page limits, last-value and non-destructive queues, cumulative core
acks and retroactive addresses (artemis-semantics.md P13-P16, R12-R14, C4, C7)."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import PROFILES, profile

rules = pytest.mark.rules


def paged_address(**limits: object) -> Broker:
    """Address `a` (max 200 bytes, pages of 200 bytes, read budget 200) with queue `q`."""
    b = Broker()
    b.declare_address(AddressConfig("a", max_size_bytes=200, page_size_bytes=200,
                                    max_read_page_bytes=200, **limits))  # type: ignore[arg-type]
    b.declare_queue(QueueConfig("q", address="a"))
    return b


def drain_one(b: Broker, consumer: str = "c") -> str:
    got = b.receive(consumer)
    assert got is not None
    assert b.ack(consumer, got) == "ok"
    return got


# ---------------------------------------------------------------- page limits
@rules("PAGING-14", "PAGING-16")
def test_page_limit_bytes_counts_page_files_and_clears_at_cleanup() -> None:
    b = paged_address(page_limit_bytes=400, page_full_policy="DROP")  # at most 400 // 200 = 2 pages
    results = [b.send("a", Message(f"m{i}")) for i in range(1, 9)]
    # m1, m2 in memory (m2 crosses: page mode, page file 1 opened); m3..m6 fill pages 1 and 2;
    # m7 opens page 3 > 2: written, then page-full; m8 is dropped.
    assert results == ["accepted", "accepted"] + ["paged"] * 5 + ["dropped"]
    assert b.addresses["a"].page_full and b.paging("a")
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert [drain_one(b) for _ in range(3)] == ["m1", "m2", "m3"]
    assert b.addresses["a"].page_full  # page 1 still holds m4
    assert drain_one(b) == "m4"  # page 1 deleted: 2 page files left, within the limit
    assert not b.addresses["a"].page_full
    assert b.send("a", Message("m9")) == "paged"


@rules("PAGING-15", "PAGING-16")
def test_page_limit_messages_checks_the_counter_and_releases_only_at_cleanup() -> None:
    b = Broker()
    b.declare_address(AddressConfig("a", max_size_bytes=100, max_read_page_bytes=100,
                                    page_limit_messages=2, page_full_policy="FAIL"))
    b.declare_queue(QueueConfig("q", address="a"))
    assert [b.send("a", Message(i)) for i in ("m1", "m2", "m3", "m4")] == [
        "accepted", "paged", "paged", "failed"]  # the counter reaches 2 at m3
    assert b.queues["q"].page_counter == 2
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert drain_one(b) == "m1"
    assert drain_one(b) == "m2"  # counter 1 < 2, but no page was cleaned up yet
    assert b.send("a", Message("m5")) == "failed"
    assert drain_one(b) == "m3"  # the page is deleted, paging stops: page-full cleared
    assert not b.paging("a") and not b.addresses["a"].page_full
    assert b.send("a", Message("m6")) == "accepted"
    assert b.counters("q").message_count == 1


@rules("PAGING-14")
def test_page_limit_below_one_page_blocks_at_once() -> None:
    b = paged_address(page_limit_bytes=100, page_full_policy="DROP")  # 100 // 200 = 0 pages
    assert [b.send("a", Message(i)) for i in ("m1", "m2", "m3")] == ["accepted", "accepted", "dropped"]
    assert b.counters("q").paged_count == 0


@rules("PAGING-13")
@pytest.mark.parametrize("limits", [{"page_full_policy": "DROP"}, {"page_limit_messages": 1},
                                    {"page_limit_bytes": 0}])
def test_page_limit_or_policy_alone_is_ignored(limits: dict[str, object]) -> None:
    b = paged_address(**limits)
    assert [b.send("a", Message(f"m{i}")) for i in range(6)] == ["accepted", "accepted"] + ["paged"] * 4
    assert not b.addresses["a"].page_full


@rules("PAGING-13")
def test_page_limits_need_the_artemis_profile() -> None:
    for name, options in PROFILES.items():
        if name == "artemis":
            continue
        b = Broker(options)
        with pytest.raises(Unsupported):
            b.declare_address(AddressConfig("a", page_limit_messages=1, page_full_policy="DROP"))
    with pytest.raises(ModelMisuse):
        Broker().declare_address(AddressConfig("a", page_full_policy="PAGE"))  # type: ignore[arg-type]


# ---------------------------------------------------------------- last-value queues
def lvq(**queue: object) -> Broker:
    b = Broker()
    b.declare_queue(QueueConfig("q", last_value_key="k", **queue))  # type: ignore[arg-type]
    return b


def kv(msg_id: str, key: str | None, **kw: object) -> Message:
    return Message(msg_id, properties={} if key is None else {"k": key}, **kw)  # type: ignore[arg-type]


@rules("RING-15")
def test_last_value_supersedes_with_reason_replaced() -> None:
    b = lvq()
    for message in (kv("a1", "A"), kv("b1", "B"), kv("x", None), kv("a2", "A"), kv("a3", "A")):
        b.send("q", message)
    assert b.pending_ids("q") == ["b1", "x", "a3"]
    c = b.counters("q")
    assert (c.replaced, c.acknowledged, c.added, c.message_count) == (2, 0, 5, 3)


@rules("RING-15", "RING-3")
def test_last_value_and_ring_share_the_replaced_counter() -> None:
    b = lvq(ring_size=2)
    for message in (kv("a1", "A"), kv("b1", "B"), kv("c1", "C"), kv("c2", "C")):
        b.send("q", message)
    # c1 evicts a1 (ring); c2 evicts b1 (ring, the list holds c1, c2) and supersedes c1 (last value)
    assert b.pending_ids("q") == ["c2"]
    assert b.counters("q").replaced == 3


@rules("RING-15", "DELIVERY-1")
def test_delivering_value_is_not_replaced_and_not_counted() -> None:
    b = lvq()
    b.open_consumer(ConsumerConfig("c", "q", window_messages=1))
    b.send("q", kv("a1", "A"))
    b.send("q", kv("a2", "A"))  # a1 is delivering: no longer the tracked value
    c = b.counters("q")
    assert (c.delivering_count, c.pending_count, c.replaced) == (1, 1, 0)
    assert c.message_count == 1  # LastValueQueue#getMessageCount subtracts delivering
    b.send("q", kv("a3", "A"))
    assert b.pending_ids("q") == ["a3"] and b.counters("q").replaced == 1
    assert b.receive("c") == "a1"
    assert b.ack("c", "a1") == "ok"


@rules("RING-15", "RING-13")
def test_returned_value_is_kept_only_without_a_newer_one() -> None:
    b = lvq()
    b.open_consumer(ConsumerConfig("c", "q", window_messages=2))
    b.send("q", kv("a1", "A"))
    b.send("q", kv("b1", "B"))
    b.send("q", kv("a2", "A"))  # pending: the consumer's window is full
    b.close("c")  # a1 returns behind a newer A: pruned; b1 is the only B: kept, at the head
    assert b.pending_ids("q") == ["b1", "a2"]
    assert b.counters("q").replaced == 1


@rules("RING-15", "SCHED-4")
def test_due_scheduled_value_supersedes_the_pending_one() -> None:
    b = lvq()
    b.send("q", kv("a1", "A", scheduled_at_ms=100))
    b.send("q", kv("a2", "A"))
    assert b.pending_ids("q") == ["a2"]
    b.advance(100)
    assert b.pending_ids("q") == ["a1"] and b.counters("q").replaced == 1


@rules("RING-15", "RING-9", "LASTVALUE-6")
def test_individually_cancelled_value_is_current_when_its_value_has_none() -> None:
    """A nacked message follows the close rule (LastValueQueue#addHead, trackLastValueIfAbsent): a1 is
    A's current message again and stays. Artemis 2.24 to 2.56 does not track it (QueueImpl#cancel:
    internalAddSorted) and prunes it: the bug model artemis-last-value-nack-pruned-before-credit."""
    def after(options: object) -> tuple[list[str], int]:
        b = Broker(options)  # type: ignore[arg-type]
        b.declare_queue(QueueConfig("q", last_value_key="k"))
        b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
        b.send("q", kv("a1", "A"))
        assert b.receive("c") == "a1"
        assert b.nack("c", "a1") == "ok"
        return b.pending_ids("q"), b.counters("q").replaced

    assert after(profile("artemis")) == (["a1"], 0)
    assert after(profile("artemis").evolve(nack_pass_before_credit=True)) == ([], 1)


# ---------------------------------------------------------------- non-destructive queues
def ndq(**queue: object) -> Broker:
    b = Broker()
    b.declare_queue(QueueConfig("q", non_destructive=True, **queue))  # type: ignore[arg-type]
    return b


@rules("DELIVERY-12", "DELIVERY-1")
def test_non_destructive_keeps_delivered_messages_and_counts_them_twice() -> None:
    b = ndq()
    b.send("q", Message("m1"))
    b.send("q", Message("m2"))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert b.receive("c") == "m1"
    c = b.counters("q")
    assert (c.pending_count, c.delivering_count, c.message_count) == (2, 1, 3)
    assert b.ack("c", "m1") == "ok"
    c = b.counters("q")
    assert (c.pending_count, c.delivering_count, c.acknowledged) == (2, 0, 0)
    assert b.receive("c") == "m2"
    assert b.receive("c") is None  # its iterator is at the end
    b.close("c")  # the cancelled m2 is not re-added: it never left
    assert b.pending_ids("q") == ["m1", "m2"] and b.counters("q").delivering_count == 0
    assert b.delivery_count("q", "m2") == 0


@rules("DELIVERY-12")
def test_every_consumer_walks_the_whole_list() -> None:
    b = ndq()
    b.send("q", Message("m1"))
    b.open_consumer(ConsumerConfig("c1", "q"))
    b.open_consumer(ConsumerConfig("c2", "q", selector="t = 'x'"))
    b.send("q", Message("m2", properties={"t": "x"}))
    assert (b.receive("c1"), b.receive("c1"), b.receive("c1")) == ("m1", "m2", None)
    assert (b.receive("c2"), b.receive("c2")) == ("m2", None)
    assert b.delivery_count("q", "m2") == 2
    b.rollback("c1")
    assert b.counters("q").delivering_count == 1 and b.delivery_count("q", "m2") == 1
    assert b.ack("c2", "m2", tx=True) == "ok"
    b.commit("c2")
    assert b.counters("q").delivering_count == 0 and b.pending_ids("q") == ["m1", "m2"]
    with pytest.raises(Unsupported):
        b.nack("c2", "m2")


@rules("RING-12", "DELIVERY-12")
def test_non_destructive_ring_evicts_delivered_messages() -> None:
    b = ndq(ring_size=2)
    b.open_consumer(ConsumerConfig("c", "q"))
    for i in ("m1", "m2", "m3"):
        b.send("q", Message(i))
    # m3 evicts the list head m1 although the consumer holds it (RingQueueTest#testNonDestructive)
    assert b.pending_ids("q") == ["m2", "m3"]
    c = b.counters("q")
    assert (c.replaced, c.delivering_count) == (1, 3)
    assert b.receive("c") == "m1" and b.ack("c", "m1") == "ok"
    assert b.counters("q").delivering_count == 2


@rules("DELIVERY-12", "RING-15")
def test_non_destructive_last_value_queue_keeps_only_the_latest() -> None:
    b = ndq(last_value_key="k")
    b.open_consumer(ConsumerConfig("c", "q"))
    b.send("q", kv("a1", "A"))
    b.send("q", kv("a2", "A"))  # a1 is delivering to c but still listed and superseded
    assert b.pending_ids("q") == ["a2"]
    c = b.counters("q")
    assert (c.replaced, c.delivering_count, c.message_count) == (1, 2, 1)
    b.advance(0)
    b.open_consumer(ConsumerConfig("late", "q", window_bytes=0))
    assert b.receive("late") == "a2"


@rules("DELIVERY-12", "SCHED-4")
def test_non_destructive_due_message_reaches_every_iterator() -> None:
    b = ndq()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("m1"))
    b.send("q", Message("s", scheduled_at_ms=10))
    b.advance(10)
    assert (b.receive("c"), b.receive("c")) == ("s", "m1")


# ---------------------------------------------------------------- cumulative core ack
@rules("DELIVERY-11")
def test_cumulative_ack_acknowledges_everything_received_up_to_the_id() -> None:
    b = Broker()
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("c", "q", cumulative_ack=True))
    for i in ("m1", "m2", "m3", "m4"):
        b.send("q", Message(i))
    assert [b.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    assert b.ack("c", "m2") == "ok"
    c = b.counters("q")
    assert (c.acknowledged, c.delivering_count) == (2, 2)  # m3 received, m4 buffered: still delivering
    assert b.unacked_ids("c") == ["m3"]
    assert b.ack("c", "m1") == "failed"
    assert b.ack("c", "m3", tx=True) == "ok"
    b.commit("c")
    assert b.counters("q").acknowledged == 3


@rules("DELIVERY-11")
def test_cumulative_ack_is_artemis_and_hornetq_only() -> None:
    for name in ("artemis", "hornetq"):
        assert profile(name).has("cumulative_ack")
    b = Broker(profile("rabbitmq-classic"))
    b.declare_queue(QueueConfig("q"))
    with pytest.raises(Unsupported):
        b.open_consumer(ConsumerConfig("c", "q", cumulative_ack=True))


# ---------------------------------------------------------------- retroactive addresses
@rules("RING-16")
def test_retroactive_address_copies_its_last_messages_to_new_queues() -> None:
    b = Broker()
    b.declare_address(AddressConfig("a", retroactive_message_count=2))
    b.send("a", Message("m1", properties={"t": "x"}))  # no queue yet: kept for later queues only
    b.send("a", Message("m2"))
    b.send("a", Message("m3", properties={"t": "x"}))
    b.declare_queue(QueueConfig("all", address="a"))
    b.declare_queue(QueueConfig("xs", address="a", filter="t = 'x'"))
    assert b.pending_ids("all") == ["m2", "m3"]  # the ring of 2 dropped m1
    assert b.pending_ids("xs") == ["m3"]
    assert b.counters("all").added == 2
    b.send("a", Message("m4"))
    b.declare_queue(QueueConfig("late", address="a", ring_size=1))
    assert b.pending_ids("late") == ["m4"] and b.counters("late").replaced == 1


@rules("RING-16")
def test_retroactive_needs_artemis_and_a_sane_count() -> None:
    with pytest.raises(Unsupported):
        Broker(profile("hornetq")).declare_address(AddressConfig("a", retroactive_message_count=1))
    with pytest.raises(ModelMisuse):
        Broker().declare_address(AddressConfig("a", retroactive_message_count=-1))
    for name in PROFILES:
        if name != "artemis":
            with pytest.raises(Unsupported):
                Broker(profile(name)).declare_queue(QueueConfig("q", last_value_key="k"))
