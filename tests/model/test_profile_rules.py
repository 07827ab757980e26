"""The queue model's profile options against the broker rules of spec/ (broker-semantics.md) and the
remaining Artemis/HornetQ rules of artemis-semantics.md that the seed examples do not reach.

Each test names the rules it checks; the conformance machines check the same rules against adapters.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import Unsupported
from mqconform.reference_model.paging_advice import ACK_BATCH_SIZE, ack_batch_deadlock
from mqconform.reference_model.profiles import ARTEMIS, HORNETQ, profile

rules = pytest.mark.rules


def make(name: str = "artemis", **queue: object) -> Broker:
    broker = Broker(profile(name))
    broker.declare_queue(QueueConfig("q", **queue))  # type: ignore[arg-type]
    return broker


def pull(broker: Broker, name: str = "c", **kw: object) -> None:
    broker.open_consumer(ConsumerConfig(name, "q", window_bytes=0, **kw))  # type: ignore[arg-type]


def send(broker: Broker, *ids: str, to: str = "q", **kw: object) -> list[str]:
    return [broker.send(to, Message(i, **kw)) for i in ids]  # type: ignore[arg-type]


def places(broker: Broker, queue: str) -> dict[str, str]:
    return {ref.id: ref.place for ref in broker.queues[queue].refs.values()}


# ---------------------------------------------------------------- delivery
@rules("DELIVERY-13")
def test_tail_inserts_number_messages_and_returns_keep_their_sequence() -> None:
    b = make()
    pull(b)
    send(b, "m1", "m2", "m3")
    seqs = {ref.id: ref.sequence for ref in b.queues["q"].refs.values()}
    assert seqs["m1"] < seqs["m2"] < seqs["m3"]
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    b.close("c")  # sorted return by the sequence each message already has
    assert {r.id: r.sequence for r in b.queues["q"].refs.values()} == seqs
    assert b.pending_ids("q") == ["m1", "m2", "m3"]


@rules("DELIVERY-14")
@pytest.mark.parametrize("name", ["rabbitmq-classic", "rabbitmq-quorum", "jetstream", "redis-streams",
                                  "activemq-classic", "mosquitto"])
def test_profiles_without_priorities_deliver_in_arrival_order(name: str) -> None:
    b = make(name)
    pull(b)
    for i, prio in enumerate([0, 9, 4, 7, 1]):
        b.send("q", Message(f"m{i}", priority=prio))
    assert [b.receive("c") for _ in range(5)] == [f"m{i}" for i in range(5)]


_OPS = st.lists(st.tuples(st.sampled_from(["send", "receive", "ack", "close", "rollback", "nack",
                                           "advance"]), st.integers(0, 3)), max_size=40)


@rules("DELIVERY-15", "RING-17")
@settings(max_examples=150, deadline=None)
@given(ops=_OPS, ring=st.integers(0, 3), delay=st.sampled_from([0, 5]))
def test_every_message_is_in_exactly_one_place_and_pending_stays_within_the_ring(
        ops: list[tuple[str, int]], ring: int, delay: int) -> None:
    b = make(ring_size=ring, redelivery_delay_ms=delay)
    pull(b)
    ids = itertools.count()
    nacked = False
    for op, arg in ops:
        unacked = b.unacked_ids("c")
        if op == "send":
            b.send("q", Message(f"m{next(ids)}", scheduled_at_ms=b.now_ms + arg if arg == 3 else None))
        elif op == "receive":
            b.receive("c")
        elif op in ("ack", "nack") and unacked:
            target = unacked[arg % len(unacked)]
            if op == "ack":
                b.ack("c", target)
            else:
                nacked = True
                b.nack("c", target)
        elif op == "close":
            b.close("c")
            pull(b)
        elif op == "rollback":
            b.rollback("c")
        elif op == "advance":
            b.advance(arg * 3)
        queue = b.queues["q"]
        live = [r for r in queue.refs.values()]
        assert all(r.place in ("pending", "delivering", "scheduled", "paged") for r in live)
        c = b.counters("q")
        counted = {"pending": c.pending_count, "delivering": c.delivering_count,
                   "scheduled": c.scheduled_count, "paged": c.paged_count}
        for place, n in counted.items():
            assert sum(r.place == place for r in live) == n, place
        assert c.added == c.message_count + c.acknowledged + c.replaced + c.killed
        if not nacked:  # RING-17's exception: an individual cancel bypasses the ring (RING-9)
            assert c.pending_count <= ring


@rules("DELIVERY-16", "DELIVERY-17", "DELIVERY-18", "DELIVERY-19")
@pytest.mark.parametrize("name", ["rabbitmq-classic", "jetstream", "mosquitto", "activemq-classic"])
def test_prefetch_caps_unacknowledged_deliveries(name: str) -> None:
    b = make(name)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=-1, max_unacked=2))
    send(b, "m1", "m2", "m3", "m4")
    assert b.counters("q").delivering_count == 2  # dispatch stops at the cap until acks arrive
    assert b.receive("c") == "m1" and b.receive("c") == "m2" and b.receive("c") is None
    assert b.ack("c", "m1") == "ok"
    assert b.receive("c") == "m3"


@rules("DELIVERY-20", "REDELIVERY-22")
def test_redis_entries_stay_pending_whatever_happens_to_the_consumer() -> None:
    b = make("redis-streams")
    pull(b)
    send(b, "m1", "m2")
    assert b.receive("c") == "m1"
    assert b.delivery_count("q", "m1") == 1
    b.close("c")  # the connection goes: the entry stays in the PEL, nothing comes back by itself
    pull(b, "c2")
    assert b.receive("c2") == "m2" and b.receive("c2") is None
    assert b.counters("q").delivering_count == 2 and b.delivery_count("q", "m1") == 1


# ---------------------------------------------------------------- ring
@rules("RING-11")
def test_paged_messages_count_in_message_count_not_against_the_ring() -> None:
    b = Broker()
    b.declare_address(AddressConfig("a", max_size_messages=2, max_read_page_messages=2))
    b.declare_queue(QueueConfig("q", address="a", ring_size=2))
    assert send(b, "m1", "m2", "m3", "m4", to="a") == ["accepted", "accepted", "paged", "paged"]
    c = b.counters("q")
    assert (c.message_count, c.pending_count, c.paged_count, c.replaced) == (4, 2, 2, 0)
    pull(b)
    assert b.receive("c") == "m1"
    assert b.ack("c", "m1") == "ok"  # memory frees, m3 depages by tail add: RING-3 applies to it
    c = b.counters("q")
    assert c.pending_count <= 2 and c.message_count == c.pending_count + c.paged_count


@rules("RING-18", "RING-20")
def test_jetstream_discard_old_terminates_the_unacked_oldest_and_a_late_ack_is_a_no_op() -> None:
    b = make("jetstream", ring_size=3)
    pull(b)
    send(b, "m1", "m2", "m3")
    assert [b.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    b.send("q", Message("m4"))
    c = b.counters("q")
    assert (c.message_count, c.replaced) == (3, 1)
    assert b.ack("c", "m1") == "ok"  # the server answers; nothing changes
    assert b.counters("q").acknowledged == 0
    b.close("c")
    pull(b)
    b.advance(0)
    got = [b.receive("c") for _ in range(4)]
    assert "m1" not in got


@rules("RING-19", "RING-20")
def test_redis_maxlen_trims_entries_still_in_the_pel() -> None:
    b = make("redis-streams", ring_size=3)
    pull(b)
    send(b, "m1", "m2", "m3")
    assert [b.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    b.send("q", Message("m4"))
    c = b.counters("q")
    assert (c.message_count, c.replaced) == (3, 1)


@rules("RING-21", "RING-25", "RING-20")
def test_mosquitto_full_queue_drops_the_newest_and_the_publisher_hears_nothing() -> None:
    b = make("mosquitto", ring_size=2)
    pull(b, max_unacked=1)
    assert send(b, "m1", "m2", "m3") == ["accepted", "accepted", "accepted"]
    assert b.receive("c") == "m1"
    # in flight + queued = 2 = the limit: m3 was dropped, the oldest kept
    assert b.counters("q").message_count == 2
    assert b.ack("c", "m1") == "ok" and b.receive("c") == "m2" and b.receive("c") is None


@rules("RING-22")
def test_reject_publish_refuses_before_enqueue_but_a_requeue_may_overshoot() -> None:
    b = Broker(profile("rabbitmq-classic").evolve(overflow="reject_new"))
    b.declare_queue(QueueConfig("q", ring_size=2))
    pull(b)
    assert send(b, "m1", "m2") == ["accepted", "accepted"]
    assert b.receive("c") == "m1"  # ready 1: one more fits
    assert send(b, "m3", "m4") == ["accepted", "failed"]
    b.close("c")  # the requeue is never refused: 3 ready, above the limit
    assert b.counters("q").pending_count == 3 - 0 or b.counters("q").pending_count == 2


@rules("RING-23")
def test_quorum_reject_publish_overshoots_and_unblocks_at_eighty_percent() -> None:
    b = Broker(profile("rabbitmq-quorum").evolve(overflow="reject_new", reject_check="after",
                                                 unblock_ratio=0.8))
    b.declare_queue(QueueConfig("q", ring_size=5))
    pull(b)
    assert send(b, *[f"m{i}" for i in range(6)]) == ["accepted"] * 6  # accepted past the limit
    assert send(b, "x1") == ["failed"]
    b.receive("c")
    b.ack("c", "m0")  # ready 5 > 4 = trunc(5 x 0.8): still rejecting
    assert send(b, "x2") == ["failed"]
    b.receive("c")
    b.ack("c", "m1")  # ready 4 <= 4: accepted again
    assert send(b, "x3") == ["accepted"]


@rules("RING-24")
def test_jetstream_discard_new_refuses_when_full_counting_unacked() -> None:
    b = Broker(profile("jetstream").evolve(overflow="reject_new", evict_unacked=False))
    b.declare_queue(QueueConfig("q", ring_size=3))
    pull(b)
    send(b, "m1", "m2", "m3")
    b.receive("c")
    assert send(b, "m4") == ["failed"]  # stored = 3 although one is only delivering
    assert b.ack("c", "m1") == "ok"
    assert send(b, "m5") == ["accepted"]


# ---------------------------------------------------------------- redelivery
@rules("REDELIVERY-4")
def test_session_recover_keeps_the_increment_of_the_oldest_only() -> None:
    b = make()
    pull(b)
    send(b, "m1", "m2")
    b.receive("c"), b.receive("c")
    b.ack("c", "m1", tx=True)  # recover: the oldest delivering message is acked into the tx
    b.rollback("c")
    assert b.delivery_count("q", "m1") == 1 and b.delivery_count("q", "m2") == 0
    b.receive("c"), b.receive("c")
    b.rollback("c")  # a transacted rollback keeps none of the unacked ones' increments
    assert b.delivery_count("q", "m1") == 1 and b.delivery_count("q", "m2") == 0


@rules("REDELIVERY-12", "REDELIVERY-13")
def test_quorum_counts_every_return_and_allows_limit_plus_one_deliveries() -> None:
    b = make("rabbitmq-quorum", max_delivery_attempts=2)
    pull(b)
    b.send("q", Message("m1"))
    deliveries = 0
    while b.receive("c") == "m1":
        deliveries += 1
        b.close("c")
        pull(b)
        if deliveries > 5:
            break
    assert deliveries == 3  # delivery-limit 2: at most 3 deliveries
    assert b.counters("q").killed == 1


@rules("REDELIVERY-14")
def test_quorum_nack_without_a_delivery_limit_goes_to_the_tail() -> None:
    b = make("rabbitmq-quorum", max_delivery_attempts=-1)
    pull(b)
    send(b, "m1", "m2", "m3")
    assert b.receive("c") == "m1"
    assert b.nack("c", "m1") == "ok"
    assert b.pending_ids("q") == ["m2", "m3", "m1"]


@rules("REDELIVERY-14")
def test_quorum_nack_with_a_delivery_limit_goes_to_the_returns_queue_served_first() -> None:
    b = make("rabbitmq-quorum", max_delivery_attempts=1)
    pull(b)
    send(b, "m1")
    assert b.receive("c") == "m1"
    send(b, "m2")
    assert b.nack("c", "m1") == "ok"
    assert b.receive("c") == "m1"  # rabbit_fifo returns queue, ahead of m2


@rules("RING-3", "RING-14")
def test_rabbitmq_offers_a_new_message_to_a_waiting_consumer_before_the_length_limit() -> None:
    b = make("rabbitmq-classic", ring_size=0)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=-1, max_unacked=1))
    send(b, "m1", "m2")
    c = b.counters("q")
    assert (c.delivering_count, c.pending_count, c.replaced) == (1, 0, 1)  # m1 delivered, m2 dropped
    assert b.receive("c") == "m1"


@rules("RING-14", "REDELIVERY-14")
def test_rabbitmq_requeue_reaches_a_consumer_with_room_before_drop_head() -> None:
    b = make("rabbitmq-quorum", ring_size=1)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=-1, max_unacked=1))
    send(b, "m1")
    assert b.receive("c") == "m1"
    send(b, "m2")
    assert b.nack("c", "m1") == "ok"  # checked out again at once; m2 stays ready
    c = b.counters("q")
    assert (c.message_count, c.delivering_count, c.replaced) == (2, 1, 0)
    assert b.receive("c") == "m1"


@rules("RING-14")
def test_classic_requeue_drops_the_head_before_a_consumer_with_room_is_served() -> None:
    # rabbit_amqqueue_process v3.10.8 requeue_and_run: requeue (m1 back at the head), maybe_drop_head
    # (2 ready > 1: m1 dropped), then run_message_queue (m2 delivered); a counterexample a real broker gave
    b = make("rabbitmq-classic", ring_size=1)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=-1, max_unacked=1))
    send(b, "m1")
    assert b.receive("c") == "m1"
    send(b, "m2")
    assert b.nack("c", "m1") == "ok"
    c = b.counters("q")
    assert (c.message_count, c.pending_count, c.delivering_count, c.replaced) == (1, 0, 1, 1)
    assert b.receive("c") == "m2"


@rules("REDELIVERY-15")
def test_classic_close_requeues_at_the_original_position_without_a_counter() -> None:
    b = make("rabbitmq-classic")
    pull(b)
    send(b, "m1", "m2", "m3")
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    b.close("c")
    assert b.pending_ids("q") == ["m1", "m2", "m3"]
    assert not Broker(profile("rabbitmq-classic")).options.has("delivery_count")


@rules("REDELIVERY-16")
def test_activemq_stomp_nack_is_a_poison_ack() -> None:
    b = Broker(profile("activemq-classic"))
    b.declare_queue(QueueConfig("q", dead_letter="DLQ"))
    b.declare_queue(QueueConfig("DLQ"))
    pull(b)
    b.send("q", Message("m1"))
    b.receive("c")
    assert b.nack("c", "m1") == "ok"
    assert b.counters("q").killed == 1 and b.pending_ids("DLQ") == ["m1"]
    assert b.receive("c") is None


@rules("REDELIVERY-17")
def test_activemq_close_returns_messages_ahead_of_others() -> None:
    b = make("activemq-classic")
    pull(b)
    send(b, "m1", "m2", "m3")
    assert b.receive("c") == "m1"
    b.close("c")
    pull(b)
    assert b.receive("c") == "m1" and b.receive("c") == "m2"


@rules("REDELIVERY-17")
def test_activemq_close_counts_redeliveries_and_never_dead_letters() -> None:
    b = make("activemq-classic", max_delivery_attempts=3)
    pull(b)
    b.send("q", Message("m1"))
    for _ in range(6):  # STOMP has no broker-side maximumRedeliveries: it keeps coming back
        assert b.receive("c") == "m1"
        b.close("c")
        pull(b)
    assert b.delivery_count("q", "m1") == 6 and b.counters("q").killed == 0


@rules("REDELIVERY-19", "REDELIVERY-20")
def test_jetstream_redelivers_after_ack_wait_ahead_of_new_and_never_undoes_the_count() -> None:
    b = make("jetstream", redelivery_delay_ms=30_000)  # ack_wait modelled as the redelivery delay
    pull(b)
    send(b, "m1", "m2", "m3", "m4")
    assert [b.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    b.nack("c", "m3")
    b.nack("c", "m2")
    assert [b.receive("c") for _ in range(2)] == ["m3", "m2"]  # NAK order, ahead of m4
    b.close("c")  # no redelivery on disconnect: nothing pending until ack_wait passes
    pull(b)
    assert b.receive("c") == "m4"
    assert b.delivery_count("q", "m1") == 1
    b.advance(30_000)
    assert b.receive("c") in ("m1", "m2", "m3")


@rules("REDELIVERY-21")
def test_jetstream_profile_has_no_dead_letter_but_bounds_deliveries() -> None:
    opts = profile("jetstream")
    assert not opts.has("dead_letter")
    b = make("jetstream", max_delivery_attempts=2)
    pull(b)
    b.send("q", Message("m1"))
    b.receive("c")
    b.nack("c", "m1")
    assert b.receive("c") == "m1" and b.delivery_count("q", "m1") == 2


@rules("REDELIVERY-23")
def test_mosquitto_resends_in_flight_messages_on_reconnect_in_original_order() -> None:
    b = make("mosquitto")
    pull(b)
    send(b, "m1", "m2", "m3")
    assert [b.receive("c") for _ in range(2)] == ["m1", "m2"]
    b.close("c")
    pull(b)
    assert [b.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    assert not profile("mosquitto").has("delivery_count") and not profile("mosquitto").has("nack")


# ---------------------------------------------------------------- scheduling
@rules("SCHED-7")
def test_a_paged_scheduled_message_is_scheduled_only_when_depaged() -> None:
    b = Broker()
    b.declare_address(AddressConfig("a", max_size_messages=1, max_read_page_messages=1))
    b.declare_queue(QueueConfig("q", address="a"))
    assert send(b, "m1", to="a") == ["accepted"]
    assert b.send("a", Message("s1", scheduled_at_ms=50)) == "paged"
    c = b.counters("q")
    assert (c.paged_count, c.scheduled_count) == (1, 0)
    pull(b)
    b.receive("c")
    b.ack("c", "m1")
    c = b.counters("q")
    assert (c.paged_count, c.scheduled_count) == (0, 1)


@rules("SCHED-9", "SCHED-10")
@settings(max_examples=60, deadline=None)
@given(times=st.lists(st.integers(1, 60), min_size=1, max_size=6), steps=st.lists(st.integers(0, 25),
                                                                                  max_size=6))
def test_scheduled_messages_wait_for_their_time_then_leave_the_scheduler(times: list[int],
                                                                        steps: list[int]) -> None:
    b = make()
    b.open_consumer(ConsumerConfig("c", "q", window_messages=100))
    for i, t in enumerate(times):
        b.send("q", Message(f"s{i}", scheduled_at_ms=t))
    for step in [*steps, 100]:
        b.advance(step)
        for i, t in enumerate(times):
            place = b.queues["q"].refs[f"s{i}"].place
            assert (place == "scheduled") == (b.now_ms < t)
    assert b.counters("q").scheduled_count == 0 and b.counters("q").delivering_count == len(times)


@rules("SCHED-11")
def test_a_later_due_message_overtakes_an_earlier_one_still_pending() -> None:
    b = make()
    send(b, "n1")
    b.send("q", Message("a", scheduled_at_ms=10))
    b.send("q", Message("b", scheduled_at_ms=20))
    b.advance(10)
    assert b.pending_ids("q") == ["a", "n1"]
    b.advance(10)
    assert b.pending_ids("q") == ["b", "a", "n1"]


@rules("SCHED-12")
def test_activemq_scheduled_message_is_re_sent_to_the_tail() -> None:
    b = make("activemq-classic")
    b.send("q", Message("s", scheduled_at_ms=10))
    send(b, "n1")
    b.advance(10)
    assert b.pending_ids("q") == ["n1", "s"]


@rules("SCHED-13")
@pytest.mark.parametrize("name", ["rabbitmq-classic", "rabbitmq-quorum", "jetstream", "redis-streams",
                                  "mosquitto"])
def test_profiles_without_scheduled_delivery_refuse_a_delivery_time(name: str) -> None:
    b = make(name)
    with pytest.raises(Unsupported):
        b.send("q", Message("s", scheduled_at_ms=10))


# ---------------------------------------------------------------- paging
@rules("PAGING-18", "PAGING-20")
def test_hornetq_depages_whole_pages_only_when_memory_is_released() -> None:
    b = Broker(HORNETQ)
    b.declare_address(AddressConfig("a", max_size_bytes=200, page_size_bytes=200))
    b.declare_queue(QueueConfig("q", address="a"))
    assert send(b, "m1", "m2", "m3", "m4", "m5", to="a") == ["accepted", "accepted", "paged", "paged",
                                                              "paged"]
    pull(b)
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    assert b.counters("q").paged_count == 3  # nothing acked: nothing depages, the consumer looks hung
    assert b.receive("c") is None
    b.ack("c", "m1")
    b.ack("c", "m2")
    c = b.counters("q")
    assert c.paged_count == 1 and c.pending_count == 2  # the whole first page (m3, m4) came in


@rules("PAGING-29")
def test_hornetq_24_depages_per_queue_while_its_pending_bytes_are_below_max_size() -> None:
    b = Broker(profile("hornetq-2.4"))
    b.declare_address(AddressConfig("a", max_size_bytes=200, page_size_bytes=100, max_read_page_bytes=1000))
    b.declare_queue(QueueConfig("q", address="a"))
    assert send(b, "m1", "m2", "m3", "m4", to="a") == ["accepted", "accepted", "paged", "paged"]
    pull(b)
    assert b.receive("c") == "m1"  # m1 left the queue's count at dispatch: m2 (100) < 200 depages m3
    c = b.counters("q")
    assert (c.pending_count, c.delivering_count, c.paged_count) == (2, 1, 1)  # not the read budget
    assert b.pending_ids("q") == ["m2", "m3"]
    assert b.receive("c") == "m2" and b.receive("c") == "m3"  # nothing acked, still depaging
    assert b.counters("q").paged_count == 0 and b.receive("c") == "m4"


@rules("PAGING-21")
def test_page_size_below_the_ack_batch_size_deadlocks() -> None:
    assert ACK_BATCH_SIZE == 1048576
    assert ack_batch_deadlock(AddressConfig("a", max_size_bytes=10, page_size_bytes=512 * 1024))
    assert not ack_batch_deadlock(AddressConfig("a", max_size_bytes=10))  # 10 MiB pages
    assert not ack_batch_deadlock(AddressConfig("a", page_size_bytes=1024), ack_batch_size=0)
    assert not ack_batch_deadlock(AddressConfig("a", page_size_bytes=1024))  # paging off


@rules("PAGING-22", "PAGING-23")
def test_hornetq_has_no_fail_policy_and_the_documented_defaults() -> None:
    b = Broker(HORNETQ)
    with pytest.raises(Unsupported):
        b.declare_address(AddressConfig("a", max_size_bytes=10, full_policy="FAIL"))
    default = AddressConfig("a")
    assert (default.max_size_bytes, default.page_size_bytes, default.full_policy) == (-1, 10485760, "PAGE")


@rules("PAGING-24", "PAGING-26")
def test_block_at_ten_mib_never_pages_and_resumes() -> None:
    b = Broker(HORNETQ)
    b.declare_address(AddressConfig("a", max_size_bytes=10485760, full_policy="BLOCK"))
    b.declare_queue(QueueConfig("q", address="a"))
    assert b.send("a", Message("big", size=10485760)) == "accepted"  # the crossing message goes in
    assert b.send("a", Message("m2")) == "blocked"
    assert not b.paging("a") and b.counters("q").paged_count == 0
    pull(b)
    b.receive("c")
    b.ack("c", "big")
    assert b.pending_ids("q") == ["m2"]


@rules("PAGING-25")
def test_limits_are_per_address() -> None:
    b = Broker()
    for name in ("a1", "a2"):
        b.declare_address(AddressConfig(name, max_size_messages=2, full_policy="DROP"))
        b.declare_queue(QueueConfig(f"q-{name}", address=name))
    assert send(b, "x1", "x2", "x3", to="a1") == ["accepted", "accepted", "dropped"]
    assert send(b, "y1", "y2", to="a2") == ["accepted", "accepted"]


@rules("PAGING-27", "PAGING-28")
@pytest.mark.parametrize("policy", ["DROP", "FAIL", "BLOCK", "PAGE"])
def test_full_policies_discard_before_routing_and_the_paging_flag(policy: str) -> None:
    b = Broker(ARTEMIS)
    b.declare_address(AddressConfig("a", max_size_messages=1, full_policy=policy))  # type: ignore[arg-type]
    b.declare_queue(QueueConfig("q1", address="a"))
    b.declare_queue(QueueConfig("q2", address="a"))
    b.send("a", Message("m1"))
    result = b.send("a", Message("m2"))
    expected = {"DROP": "dropped", "FAIL": "failed", "BLOCK": "blocked", "PAGE": "paged"}[policy]
    assert result == expected
    in_queues = [q for q in ("q1", "q2") if "m2" in b.queues[q].refs]
    assert in_queues == (["q1", "q2"] if policy == "PAGE" else [])
    assert b.paging("a") == (policy != "BLOCK")  # full under DROP/FAIL, page mode under PAGE


# ---------------------------------------------------------------- beanstalkd
@rules("DELIVERY-35", "REDELIVERY-35")
def test_beanstalkd_reserves_by_priority_then_put_order_and_returns_keep_their_place() -> None:
    b = make("beanstalkd")
    pull(b, "c")
    pull(b, "d")
    send(b, "m1", "m2", priority=4)
    send(b, "m3", priority=9)
    send(b, "m4", priority=4)
    assert [b.receive("c"), b.receive("c")] == ["m3", "m1"]
    b.nack("c", "m1")  # release <id> <pri> 0: back ahead of m2, its reserve counted
    assert b.delivery_count("q", "m1") == 1 and b.pending_ids("q") == ["m1", "m2", "m4"]
    assert b.receive("d") == "m1"
    b.close("d")  # the close gives it back at the same place, the count kept
    assert b.delivery_count("q", "m1") == 2 and b.pending_ids("q") == ["m1", "m2", "m4"]


@rules("REDELIVERY-36")
def test_beanstalkd_bury_takes_the_job_out_of_the_queue() -> None:
    b = make("beanstalkd")
    pull(b)
    send(b, "m1", "m2")
    assert b.nack("c", "m1", requeue=False) == "failed"  # not reserved: cannot bury
    assert b.receive("c") == "m1" and b.nack("c", "m1", requeue=False) == "ok"
    assert b.delivery_count("q", "m1") is None and b.counters("q").message_count == 1
    assert b.receive("c") == "m2" and b.receive("c") is None


@rules("REDELIVERY-37")
def test_beanstalkd_release_with_a_delay_waits_delayed_and_returns_by_priority_and_id() -> None:
    b = make("beanstalkd")
    pull(b)
    send(b, "m1", "m2")
    assert b.receive("c") == "m1" and b.nack("c", "m1", delay_ms=1000) == "ok"
    c = b.counters("q")
    assert (c.pending_count, c.delivering_count, c.scheduled_count, c.message_count) == (1, 0, 1, 2)
    assert b.ack("c", "m1") == "failed" and places(b, "q")["m1"] == "scheduled"
    assert b.receive("c") == "m2" and b.receive("c") is None
    b.advance(999)
    assert b.receive("c") is None
    b.advance(1)
    send(b, "m3")
    assert b.pending_ids("q") == ["m1", "m3"] and b.delivery_count("q", "m1") == 1
    # a profile whose nack undoes the count undoes it for a delayed release too
    u = Broker(profile("beanstalkd").evolve(nack_keeps_delivery_count=False))
    u.declare_queue(QueueConfig("q"))
    u.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    u.send("q", Message("m1"))
    assert u.receive("c") == "m1" and u.nack("c", "m1", delay_ms=5) == "ok"
    assert u.delivery_count("q", "m1") == 0


@rules("REDELIVERY-42")
def test_rocketmq_returns_are_a_fifo_of_closes_served_before_new_messages() -> None:
    """b holds m2 and a holds m1 and m3 (received m3 first); b closes, then a: m2, then a's in the order
    a received them (m3, m1), then m4, never delivered. The Artemis profile puts them back in sequence."""
    answers = {}
    for name in ("rocketmq", "artemis"):
        b = make(name)
        for consumer in ("a", "b", "c"):
            pull(b, consumer)
        send(b, "m1", "m2", "m3", "m4")
        assert [b.receive("c"), b.receive("b"), b.receive("a")] == ["m1", "m2", "m3"]
        b.close("c")
        assert b.receive("a") == "m1"
        b.close("b")
        b.close("a")
        pull(b, "d")
        answers[name] = [b.receive("d") for _ in range(5)]
    assert answers == {"rocketmq": ["m2", "m3", "m1", "m4", None], "artemis": ["m1", "m2", "m3", "m4", None]}
