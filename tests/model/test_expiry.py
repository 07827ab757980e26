"""Message expiry in the model (EXPIRY-1..7): each profile's scope, combination and destination."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import profile

rules = pytest.mark.rules


def _with_dlq(name: str, **queue: object) -> Broker:
    b = Broker(profile(name))
    b.declare_address(AddressConfig("dlx"))
    b.declare_queue(QueueConfig("dlq", address="dlx"))
    b.declare_queue(QueueConfig("q", dead_letter="dlx", **queue))  # type: ignore[arg-type]
    return b


def test_queue_ttl_dead_letters_with_reason_expired_at_its_exact_time() -> None:
    """EXPIRY-1, EXPIRY-5: RabbitMQ dead_letter_ttl: x-message-ttl 10, the message is in the DLQ."""
    b = _with_dlq("rabbitmq-classic", message_ttl_ms=10)
    b.send("q", Message("m1"))
    b.advance(9)
    assert b.pending_ids("q") == ["m1"]
    b.advance(1)
    assert b.pending_ids("q") == [] and b.pending_ids("dlq") == ["m1"]
    counters = b.counters("q")
    assert (counters.message_count, counters.expired, counters.killed) == (0, 1, 0)
    b.open_consumer(ConsumerConfig("d", "dlq", window_bytes=0))
    assert b.receive("d") == "m1"
    assert b.message_info("dlq", "m1") == {"redelivered": False, "dead_letter_reason": "expired"}


def test_head_scope_a_short_ttl_behind_a_long_lived_head_waits() -> None:
    """EXPIRY-4 head (RabbitMQ): m2 (10 ms) expires only when m1 (100 ms) leaves the head."""
    b = _with_dlq("rabbitmq-classic")
    b.send("q", Message("m1", ttl_ms=100))
    b.send("q", Message("m2", ttl_ms=10))
    b.advance(50)
    assert b.pending_ids("q") == ["m1", "m2"]
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert b.receive("c") == "m1"  # m2 is now the head: past its time, it goes at once
    assert b.pending_ids("q") == [] and b.pending_ids("dlq") == ["m2"]


@rules("EXPIRY-4")
def test_ready_scope_expires_any_pending_message() -> None:
    """EXPIRY-4 ready (Artemis): m2 expires behind a long-lived head."""
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q"))
    b.send("q", Message("m1", ttl_ms=100))
    b.send("q", Message("m2", ttl_ms=10))
    b.advance(50)
    assert b.pending_ids("q") == ["m1"]


def test_delivered_message_never_expires_but_returns_with_its_original_expiry() -> None:
    """EXPIRY-4, EXPIRY-7: held by a consumer past its time it stays; requeued, it expires at once."""
    for name in ("rabbitmq-classic", "rabbitmq-quorum", "artemis"):
        b = Broker(profile(name))
        b.declare_queue(QueueConfig("q", message_ttl_ms=10))
        b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
        b.send("q", Message("m1"))
        assert b.receive("c") == "m1"
        b.advance(50)
        assert b.counters("q").delivering_count == 1, name
        assert b.nack("c", "m1") == "ok"
        assert b.counters("q").message_count == 0 and b.counters("q").expired == 1, name


def test_stored_scope_removes_a_held_message_and_its_ack_changes_nothing() -> None:
    """EXPIRY-4 stored (JetStream): the stream deletes it from under the consumer."""
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q", message_ttl_ms=100))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("a"))
    b.send("q", Message("b", ttl_ms=50))
    assert b.receive("c") == "a"
    assert b.nack("c", "a", delay_ms=500) == "ok"  # held for nobody, still stored
    b.advance(100)
    counters = b.counters("q")
    assert (counters.message_count, counters.delivering_count, counters.expired) == (0, 0, 2)
    assert b.ack("c", "a") == "ok"


def test_stored_scope_held_by_a_consumer() -> None:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q", message_ttl_ms=100))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("a"))
    assert b.receive("c") == "a"
    b.advance(100)
    assert b.counters("q").message_count == 0 and b.ack("c", "a") == "ok"


@rules("EXPIRY-3")
def test_combination_min_or_message_first() -> None:
    """EXPIRY-3: RabbitMQ takes the lower TTL; Artemis expiry-delay only for messages without one."""
    rabbit = Broker(profile("rabbitmq-classic"))
    rabbit.declare_queue(QueueConfig("q", message_ttl_ms=10))
    rabbit.send("q", Message("m1", ttl_ms=100))
    rabbit.advance(10)
    assert rabbit.pending_ids("q") == []
    artemis = Broker(profile("artemis"))
    artemis.declare_queue(QueueConfig("q", message_ttl_ms=10))
    artemis.send("q", Message("m1", ttl_ms=100))
    artemis.send("q", Message("m2", ttl_ms=5))
    artemis.advance(10)
    assert artemis.pending_ids("q") == ["m1"]
    artemis.advance(90)
    assert artemis.pending_ids("q") == []


@rules("EXPIRY-6")
def test_expiry_address_gets_a_copy_without_ttl() -> None:
    """EXPIRY-6: Artemis sends an expired message to the expiry address; none: it is dropped."""
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("eq", address="exp", message_ttl_ms=5))
    b.declare_queue(QueueConfig("q", message_ttl_ms=10, expiry_address="exp"))
    b.declare_queue(QueueConfig("r", message_ttl_ms=10))
    b.send("q", Message("m1", ttl_ms=10))
    b.send("r", Message("m2"))
    b.advance(10)
    assert b.pending_ids("eq") == ["m1"] and b.pending_ids("r") == []
    b.advance(5)  # the copy has the expiry queue's own TTL, counted from its arrival
    assert b.pending_ids("eq") == []


def test_dead_lettered_copy_loses_its_own_ttl() -> None:
    """EXPIRY-5: a copy dead-lettered (here rejected) keeps no per-message TTL."""
    b = _with_dlq("rabbitmq-classic")
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("m1", ttl_ms=100))
    assert b.receive("c") == "m1"
    assert b.nack("c", "m1", requeue=False) == "ok"
    b.advance(1000)
    assert b.pending_ids("dlq") == ["m1"]


def test_expired_to_drop_ignores_the_dead_letter_address() -> None:
    """EXPIRY-5 (JetStream: nothing receives an expired message)."""
    broker = Broker(profile("rabbitmq-classic").evolve(expired_to="drop"))
    broker.declare_address(AddressConfig("dlx"))
    broker.declare_queue(QueueConfig("dlq", address="dlx"))
    broker.declare_queue(QueueConfig("q", dead_letter="dlx", message_ttl_ms=1))
    broker.send("q", Message("m1"))
    broker.advance(1)
    assert broker.pending_ids("dlq") == [] and broker.counters("q").expired == 1


def test_expiry_fires_in_time_order_with_other_timers() -> None:
    """EXPIRY-4: advance stops at each expiry (next_due_ms), so a later receive finds the next one."""
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q"))
    b.send("q", Message("m1", ttl_ms=30))
    b.send("q", Message("m2", ttl_ms=20))
    assert b.next_due_ms() == 20
    b.advance(25)
    assert b.next_due_ms() == 30 and b.pending_ids("q") == ["m1"]


def test_last_value_and_paged_refs_expire() -> None:
    b = Broker(profile("artemis"))
    b.declare_address(AddressConfig("a", max_size_messages=1))
    b.declare_queue(QueueConfig("q", address="a", message_ttl_ms=10))
    b.declare_queue(QueueConfig("lv", last_value_key="k", message_ttl_ms=10))
    b.send("a", Message("m1"))
    b.send("a", Message("m2"))  # paged
    b.send("lv", Message("x", properties={"k": 1}))
    b.advance(10)
    assert b.counters("q").message_count == 0 and b.counters("lv").message_count == 0


def test_non_destructive_queue_never_expires_a_delivering_message() -> None:
    b = Broker(profile("jetstream").evolve(features=profile("artemis").features))
    b.declare_queue(QueueConfig("q", non_destructive=True, message_ttl_ms=10))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", Message("m1"))
    assert b.receive("c") == "m1"
    b.advance(10)
    assert b.counters("q").delivering_count == 1


def test_bad_ttl_and_missing_features() -> None:
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q"))
    with pytest.raises(ModelMisuse):
        b.declare_queue(QueueConfig("r", message_ttl_ms=0))
    with pytest.raises(ModelMisuse):
        b.send("q", Message("m", ttl_ms=-1))
    redis = Broker(profile("redis-streams"))
    with pytest.raises(Unsupported):
        redis.declare_queue(QueueConfig("q", message_ttl_ms=10))
    rabbit = Broker(profile("rabbitmq-classic"))
    with pytest.raises(Unsupported):
        rabbit.declare_queue(QueueConfig("q", expiry_address="x"))
