"""The queue model against the seeds' worked examples and the reference notes' rules."""

from __future__ import annotations

import attrs
import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import PROFILES, profile

rules = pytest.mark.rules


def make(name: str = "artemis", **queue: object) -> Broker:
    broker = Broker(profile(name))
    broker.declare_queue(QueueConfig("q", **queue))  # type: ignore[arg-type]
    return broker


def send_all(broker: Broker, *ids: str, to: str = "q", **kw: object) -> list[str]:
    return [broker.send(to, Message(i, **kw)) for i in ids]  # type: ignore[arg-type]


# ---------------------------------------------------------------- delivery basics
@rules("DELIVERY-1", "DELIVERY-3")
def test_priorities_highest_first_fifo_within_a_level() -> None:
    b = make()
    b.send("q", Message("a", priority=4))
    b.send("q", Message("b", priority=9))
    b.send("q", Message("c", priority=4))
    b.send("q", Message("d", priority=0))
    assert b.pending_ids("q") == ["b", "a", "c", "d"]
    c = b.counters("q")
    assert c.message_count == c.pending_count == 4 and c.added == 4


@rules("DELIVERY-3")
def test_single_level_profile_ignores_priority() -> None:
    b = make("rabbitmq-classic")
    b.send("q", Message("a", priority=0))
    b.send("q", Message("b", priority=9))
    assert b.pending_ids("q") == ["a", "b"]


@rules("DELIVERY-5", "REDELIVERY-11")
def test_window_bounds_dispatch_and_receive_returns_credit() -> None:
    b = make()
    b.open_consumer(ConsumerConfig("c", "q", window_messages=2))
    send_all(b, "m1", "m2", "m3")
    c = b.counters("q")
    assert (c.pending_count, c.delivering_count) == (1, 2)
    assert b.receive("c") == "m1"
    assert b.counters("q").pending_count == 0  # credit returned, m3 dispatched


@rules("DELIVERY-5", "REDELIVERY-11")
def test_byte_window_may_overshoot_like_credits() -> None:
    b = make()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=150))
    send_all(b, "m1", "m2", "m3")  # 100 bytes each: m1 (100 < 150), m2 (overshoot), then stop
    assert b.counters("q").delivering_count == 2


@rules("DELIVERY-5")
def test_pull_consumer_and_max_unacked() -> None:
    b = make()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0, max_unacked=1))
    send_all(b, "m1", "m2")
    assert b.counters("q").delivering_count == 0
    assert b.receive("c") == "m1"
    assert b.receive("c") is None  # max_unacked reached
    assert b.ack("c", "m1") == "ok"
    assert b.receive("c") == "m2"


@rules("DELIVERY-8", "DELIVERY-10")
def test_ack_counts_and_double_ack_fails() -> None:
    b = make()
    b.open_consumer(ConsumerConfig("c", "q"))
    b.send("q", Message("m1"))
    assert b.ack("c", "m1") == "failed"  # dispatched but not yet received
    assert b.receive("c") == "m1"
    assert b.ack("c", "m1") == "ok"
    assert b.ack("c", "m1") == "failed"
    c = b.counters("q")
    assert c.acknowledged == 1 and c.message_count == 0


def test_selector_and_filter() -> None:
    b = Broker()
    b.declare_queue(QueueConfig("red", address="a", filter="color = 'red'"))
    b.declare_queue(QueueConfig("all", address="a"))
    b.send("a", Message("m1", properties={"color": "red"}))
    b.send("a", Message("m2", properties={"color": "blue"}))
    assert b.pending_ids("red") == ["m1"] and b.pending_ids("all") == ["m1", "m2"]
    b.open_consumer(ConsumerConfig("c", "all", selector="color <> 'red' AND n = 1", window_bytes=0))
    b.send("a", Message("m3", properties={"color": "blue", "n": 1}))
    assert b.receive("c") == "m3"
    assert b.receive("c") is None


def test_misuse_raises() -> None:
    b = make()
    with pytest.raises(ModelMisuse):
        b.declare_queue(QueueConfig("q"))
    with pytest.raises(ModelMisuse):
        b.send("nowhere", Message("x"))
    with pytest.raises(ModelMisuse):
        b.receive("nobody")
    with pytest.raises(ModelMisuse):
        b.advance(-1)
    b.send("q", Message("x"))
    with pytest.raises(ModelMisuse):
        b.send("q", Message("x"))
    with pytest.raises(ModelMisuse):
        profile("nosuch")
    with pytest.raises(Unsupported):
        make("hornetq", ring_size=3)


# ---------------------------------------------------------------- ring (seed S4)
@rules("RING-3", "RING-4", "RING-5", "RING-8", "RING-13")
def test_seed_s4_ring_size_3_with_unacked_messages() -> None:
    b = make(ring_size=3)
    b.open_consumer(ConsumerConfig("c", "q"))
    send_all(b, "m1", "m2", "m3")
    c = b.counters("q")
    assert (c.message_count, c.delivering_count) == (3, 3)
    b.send("q", Message("m4"))
    c = b.counters("q")
    assert (c.message_count, c.delivering_count, c.replaced) == (4, 4, 0)  # over ring size: legal
    b.close("c")
    c = b.counters("q")
    assert b.pending_ids("q") == ["m2", "m3", "m4"] and c.replaced == 1 and c.message_count == 3


@rules("RING-3", "RING-6")
def test_tail_add_evicts_exactly_one_head_of_highest_priority() -> None:
    b = make(ring_size=2)
    b.send("q", Message("low", priority=1))
    b.send("q", Message("high", priority=9))
    b.send("q", Message("new", priority=4))
    assert b.pending_ids("q") == ["new", "low"] and b.counters("q").replaced == 1


@rules("RING-2")
def test_set_ring_size_never_purges() -> None:
    b = make(ring_size=5)
    send_all(b, "m1", "m2", "m3", "m4")
    b.set_ring_size("q", 2)
    assert b.counters("q").pending_count == 4
    b.send("q", Message("m5"))
    assert b.pending_ids("q") == ["m2", "m3", "m4", "m5"]  # one head evicted per add


@rules("RING-7", "RING-8")
def test_rollback_returns_in_order_and_drops_the_oldest_when_full() -> None:
    b = make(ring_size=2)
    b.open_consumer(ConsumerConfig("c", "q", window_messages=3))
    send_all(b, "m1", "m2", "m3")
    for m in ("m1", "m2", "m3"):
        assert b.receive("c") == m
    b.rollback("c")
    assert b.pending_ids("q") == []  # redispatched at once: window 3
    b.close("c")
    assert b.pending_ids("q") == ["m2", "m3"] and b.counters("q").replaced == 1


@rules("RING-9")
def test_nack_bypasses_the_ring() -> None:
    b = make(ring_size=1)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("m1"))
    assert b.receive("c") == "m1"
    b.send("q", Message("m2"))
    assert b.nack("c", "m1") == "ok"
    assert b.counters("q").pending_count == 2


@rules("RING-10", "SCHED-8", "SCHED-14")
def test_seed_s4_scheduled_message_replaced_at_head_of_full_ring() -> None:
    b = make(ring_size=3)
    b.advance(12 * 3_600_000)
    t0 = b.now_ms
    b.send("q", Message("A", scheduled_at_ms=t0 + 5 * 60_000))
    assert (b.counters("q").message_count, b.counters("q").scheduled_count) == (1, 1)
    for n, x in enumerate("BCD", start=2):
        b.advance(60_000)
        b.send("q", Message(x))
        assert (b.counters("q").message_count, b.counters("q").scheduled_count) == (n, 1)
    b.advance(2 * 60_000)
    c = b.counters("q")
    assert b.pending_ids("q") == ["B", "C", "D"] and c.replaced == 1 and c.scheduled_count == 0


@rules("RING-5")
def test_jetstream_discard_old_evicts_an_unacked_message() -> None:
    b = make("jetstream", ring_size=3)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    send_all(b, "m1", "m2", "m3")
    assert [b.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    b.send("q", Message("m4"))
    assert b.counters("q").replaced == 1 and b.unacked_ids("c") == ["m2", "m3"]
    assert b.ack("c", "m1") == "ok"  # acking a removed message succeeds


@rules("RING-14")
def test_rabbitmq_requeue_then_drop_head() -> None:
    b = make("rabbitmq-classic", ring_size=3)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    send_all(b, "m1", "m2", "m3")
    for _ in range(3):
        b.receive("c")
    assert b.send("q", Message("m4")) == "accepted"
    assert b.counters("q").message_count == 4
    b.close("c")
    assert b.pending_ids("q") == ["m2", "m3", "m4"]


def test_reject_new_with_hysteresis_and_drop_newest() -> None:
    quorum = profile("rabbitmq-quorum").evolve(overflow="reject_new", reject_check="after", unblock_ratio=0.8)
    b = Broker(quorum)
    b.declare_queue(QueueConfig("q", ring_size=5))
    assert send_all(b, *"abcdef") == ["accepted"] * 6  # overshoots by one
    assert b.send("q", Message("g")) == "failed"
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.ack("c", b.receive("c") or "")
    assert b.send("q", Message("h")) == "failed"  # 5 > 0.8 x 5: still rejecting
    b.ack("c", b.receive("c") or "")
    assert b.send("q", Message("i")) == "accepted"  # 4 <= 0.8 x 5: unblocked
    m = Broker(profile("mosquitto"))
    m.declare_queue(QueueConfig("q", ring_size=1))
    assert send_all(m, "a", "b") == ["accepted", "accepted"]  # the newest is dropped silently
    assert m.pending_ids("q") == ["a"]


# ---------------------------------------------------------------- redelivery
@rules("REDELIVERY-1", "REDELIVERY-2", "REDELIVERY-3")
def test_delivery_count_undone_on_close_kept_for_tx_acked_on_rollback() -> None:
    b = make()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    send_all(b, "m1", "m2")
    b.receive("c")
    b.receive("c")
    assert b.delivery_count("q", "m1") == 1
    b.ack("c", "m1", tx=True)
    assert b.counters("q").delivering_count == 2  # tx-acked still delivering (C3)
    b.rollback("c")
    assert b.delivery_count("q", "m1") == 1 and b.delivery_count("q", "m2") == 0
    assert b.pending_ids("q") == ["m1", "m2"]


@rules("REDELIVERY-5", "REDELIVERY-6")
def test_dead_letter_after_max_attempts() -> None:
    b = Broker()
    b.declare_address(AddressConfig("dla"))
    b.declare_queue(QueueConfig("dlq", address="dla"))
    b.declare_queue(QueueConfig("q", max_delivery_attempts=2, dead_letter="dla"))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("m1"))
    for _ in range(2):
        assert b.receive("c") == "m1"
        b.nack("c", "m1")
    assert b.counters("q").killed == 1 and b.pending_ids("dlq") == ["m1"]
    nodla = make(max_delivery_attempts=1, dead_letter="nowhere")
    nodla.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    nodla.send("q", Message("m1"))
    nodla.receive("c")
    nodla.nack("c", "m1")
    assert nodla.counters("q").killed == 1 and nodla.counters("q").message_count == 0


@rules("REDELIVERY-7", "REDELIVERY-8", "REDELIVERY-9")
def test_redelivery_delay_on_rollback_with_multiplier_and_cap_not_on_close() -> None:
    b = make(redelivery_delay_ms=100, redelivery_multiplier=3.0, max_redelivery_delay_ms=250,
             max_delivery_attempts=-1)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("m1"))
    b.receive("c")
    b.ack("c", "m1", tx=True)
    b.rollback("c")  # count 1 kept: delay 100 x 3^0 = 100
    assert b.counters("q").scheduled_count == 1
    b.advance(99)
    assert b.counters("q").scheduled_count == 1
    b.advance(1)
    assert b.pending_ids("q") == ["m1"]
    b.receive("c")
    b.ack("c", "m1", tx=True)
    b.rollback("c")  # count 2: 300, capped at 250
    b.advance(249)
    assert b.counters("q").scheduled_count == 1
    b.advance(1)
    assert b.receive("c") == "m1"
    b.close("c")  # a plain close: no delay
    assert b.pending_ids("q") == ["m1"]


def test_default_cap_is_ten_times_delay_and_nack_dead_letter_profile() -> None:
    b = make(redelivery_delay_ms=10, redelivery_multiplier=100.0, max_delivery_attempts=-1)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("m1"))
    for _ in range(2):
        b.receive("c")
        b.nack("c", "m1")
        b.advance(100)
    assert b.receive("c") == "m1"
    amq = make("activemq-classic")
    amq.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    amq.send("q", Message("m1"))
    amq.receive("c")
    amq.nack("c", "m1")
    assert amq.counters("q").killed == 1


@rules("REDELIVERY-10")
def test_hornetq_returns_at_head_in_cancel_order() -> None:
    b = make("hornetq")
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    send_all(b, "m1", "m2", "m3")
    b.receive("c")
    b.receive("c")
    b.close("c")
    assert b.pending_ids("q") == ["m1", "m2", "m3"]


def test_redis_close_keeps_entries_pending_and_quorum_counts_returns() -> None:
    r = make("redis-streams")
    r.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    r.send("q", Message("m1"))
    r.receive("c")
    r.close("c")
    assert r.counters("q").delivering_count == 1 and r.pending_ids("q") == []
    q = make("rabbitmq-quorum")
    q.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    q.send("q", Message("m1"))
    q.receive("c")
    q.close("c")
    assert q.delivery_count("q", "m1") == 1


# ---------------------------------------------------------------- scheduling
@rules("SCHED-2", "SCHED-3", "SCHED-4")
def test_due_messages_jump_to_head_in_scheduler_order_and_past_times_still_schedule() -> None:
    b = make()
    b.advance(1000)
    b.send("q", Message("plain"))
    b.send("q", Message("s2", scheduled_at_ms=1010))
    b.send("q", Message("s1", scheduled_at_ms=1010))
    b.send("q", Message("past", scheduled_at_ms=500))
    assert b.pending_ids("q") == ["past", "plain"]  # past time: fired at once, to the head
    b.send("q", Message("zero", scheduled_at_ms=0))  # <= 0: a normal message
    b.advance(10)
    assert b.pending_ids("q") == ["s2", "s1", "past", "plain", "zero"]


@rules("SCHED-4")
def test_advance_fires_each_due_time_separately() -> None:
    b = make()
    b.send("q", Message("a", scheduled_at_ms=10))
    b.send("q", Message("b", scheduled_at_ms=20))
    b.advance(30)
    assert b.pending_ids("q") == ["b", "a"]  # b fired later, went in front of a


def test_scheduled_placement_tail_profile() -> None:
    b = make("activemq-classic")
    b.send("q", Message("plain"))
    b.send("q", Message("s", scheduled_at_ms=5))
    b.advance(5)
    assert b.pending_ids("q") == ["plain", "s"]


# ---------------------------------------------------------------- paging
def paging_broker(policy: str, name: str = "artemis", **address: object) -> Broker:
    b = Broker(profile(name))
    b.declare_address(AddressConfig("a", max_size_bytes=200, page_size_bytes=200, full_policy=policy,  # type: ignore[arg-type]
                                    **address))  # type: ignore[arg-type]
    b.declare_queue(QueueConfig("q1", address="a"))
    b.declare_queue(QueueConfig("q2", address="a"))
    return b


@rules("PAGING-1", "PAGING-2", "PAGING-6", "PAGING-7", "PAGING-8")
def test_page_full_at_max_crossing_message_in_memory_then_page_until_pages_gone() -> None:
    b = paging_broker("PAGE", max_read_page_bytes=100)
    assert send_all(b, "m1", "m2", to="a") == ["accepted", "accepted"]  # one copy per address: 200
    assert b.paging("a")
    assert send_all(b, "m3", "m4", to="a") == ["paged", "paged"]
    c = b.counters("q1")
    assert (c.pending_count, c.paged_count, c.message_count) == (2, 2, 4)
    for q in ("q1", "q2"):
        b.open_consumer(ConsumerConfig(f"c{q}", q, window_bytes=0))
        for _ in range(4):
            got = b.receive(f"c{q}")
            assert got is not None
            b.ack(f"c{q}", got)
    assert not b.paging("a") and b.counters("q1").message_count == 0


@rules("PAGING-9", "PAGING-17")
def test_slow_queue_pins_pages() -> None:
    b = paging_broker("PAGE", max_read_page_bytes=100)
    send_all(b, "m1", "m2", "m3", "m4", to="a")
    b.open_consumer(ConsumerConfig("c", "q1", window_bytes=0))
    for _ in range(4):
        b.ack("c", b.receive("c") or "")
    assert b.counters("q1").message_count == 0
    assert b.paging("a") and b.send("a", Message("m5")) == "paged"  # q2 never consumed


@rules("PAGING-11")
def test_unacked_messages_stop_depage() -> None:
    b = paging_broker("PAGE", max_read_page_bytes=200)
    send_all(b, "m1", "m2", "m3", to="a")
    b.open_consumer(ConsumerConfig("c", "q1", window_bytes=0))
    b.receive("c")
    b.receive("c")  # 200 bytes delivering, unacked: budget used
    assert b.counters("q1").paged_count == 1
    b.ack("c", "m1")
    assert b.counters("q1").paged_count == 0


@rules("PAGING-3")
def test_drop_fail_block() -> None:
    d = paging_broker("DROP")
    assert send_all(d, "m1", "m2", "m3", to="a") == ["accepted", "accepted", "dropped"]
    f = paging_broker("FAIL")
    assert send_all(f, "m1", "m2", "m3", to="a") == ["accepted", "accepted", "failed"]
    bl = paging_broker("BLOCK")
    assert send_all(bl, "m1", "m2", "m3", "m4", to="a") == ["accepted", "accepted", "blocked", "blocked"]
    for q in ("q1", "q2"):
        bl.open_consumer(ConsumerConfig(f"c{q}", q, window_bytes=0))
        bl.ack(f"c{q}", bl.receive(f"c{q}") or "")
    assert bl.pending_ids("q1") == ["m2", "m3"]  # m3 routed on unblock; m4 still blocked
    assert not bl.paging("a")


@rules("PAGING-12", "PAGING-19")
def test_browsers_see_paged_messages_under_artemis_not_hornetq() -> None:
    art = paging_broker("PAGE", max_read_page_bytes=100)
    send_all(art, "m1", "m2", "m3", to="a")
    assert art.browse("q1") == ["m1", "m2", "m3"]
    hq = paging_broker("PAGE", name="hornetq")
    send_all(hq, "m1", "m2", "m3", to="a")
    assert hq.browse("q1") == ["m1", "m2"]
    for q in ("q1", "q2"):
        hq.open_consumer(ConsumerConfig(f"c{q}", q, window_bytes=0))
        hq.ack(f"c{q}", hq.receive(f"c{q}") or "")
    assert hq.browse("q1") == ["m2", "m3"] and not hq.paging("a")  # whole page depaged (H1)


@rules("PAGING-12")
def test_artemis_browser_lists_a_held_paged_message() -> None:
    """The page walk skips only acknowledged messages and those listed from memory: a message read
    from a page that a consumer holds is still listed (browse_held_paged); one from memory is not."""
    art = paging_broker("PAGE")
    send_all(art, "m1", "m2", "m3", to="a")
    assert art.paging("a")  # m3 was paged, then depaged (read budget)
    art.open_consumer(ConsumerConfig("c", "q1", window_bytes=0))
    assert [art.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    assert art.browse("q1") == ["m3"]
    art.ack("c", "m3")
    assert art.browse("q1") == []
    plain = Broker(attrs.evolve(profile("artemis"), browse_held_paged=False))
    plain.declare_address(AddressConfig("a", max_size_bytes=200, full_policy="PAGE"))
    plain.declare_queue(QueueConfig("q1", address="a"))
    send_all(plain, "m1", "m2", "m3", to="a")
    plain.open_consumer(ConsumerConfig("c", "q1", window_bytes=0))
    assert [plain.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    assert plain.browse("q1") == []


def test_max_size_messages_and_address_without_queues() -> None:
    b = Broker()
    b.declare_address(AddressConfig("a", max_size_messages=1, full_policy="DROP"))
    assert b.send("a", Message("x")) == "accepted"  # routed nowhere, holds nothing
    b.declare_queue(QueueConfig("q", address="a"))
    assert send_all(b, "m1", "m2", to="a") == ["accepted", "dropped"]


def test_profiles_declare_their_features() -> None:
    assert set(PROFILES) == {"artemis", "hornetq", "hornetq-2.4", "rabbitmq-classic", "rabbitmq-quorum",
                             "jetstream", "redis-streams", "activemq-classic", "mosquitto", "beanstalkd",
                             "kafka-share", "rocketmq"}
    with pytest.raises(Unsupported):
        Broker(profile("rabbitmq-classic")).declare_address(AddressConfig("a", full_policy="FAIL"))
    with pytest.raises(Unsupported):
        make("jetstream").send("q", Message("s", scheduled_at_ms=5))
