"""Delete of one message by id (DELIVERY-31..33) in the model, per profile's delete_scope."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import Unsupported
from mqconform.reference_model.profiles import profile


def make(name: str, **queue: object) -> Broker:
    broker = Broker(profile(name))
    broker.declare_queue(QueueConfig("q", **queue))  # type: ignore[arg-type]
    broker.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for i in range(1, 5):
        broker.send("q", Message(f"m{i}"))
    return broker


@pytest.mark.rules("DELIVERY-31")
def test_artemis_deletes_listed_messages_only() -> None:
    b = make("artemis")
    assert b.receive("c") == "m1"
    assert b.delete_message("q", "m1") is False  # delivering: not listed
    assert b.delete_message("q", "m3") is True
    assert b.pending_ids("q") == ["m2", "m4"]
    c = b.counters("q")
    # removeMessage(id) acks NORMAL (QueueImpl#deleteReference; delete_counts)
    assert (c.message_count, c.delivering_count, c.acknowledged, c.killed) == (3, 1, 1, 0)
    assert b.ack("c", "m1") == "ok"
    killing = Broker(profile("artemis").evolve(delete_counts="killed"))
    killing.declare_queue(QueueConfig("q"))
    killing.send("q", Message("m1"))
    assert killing.delete_message("q", "m1") is True and killing.counters("q").killed == 1


@pytest.mark.rules("DELIVERY-31")
def test_artemis_deletes_a_scheduled_and_a_paged_message() -> None:
    b = Broker(profile("artemis"))
    b.declare_address(AddressConfig("a", max_size_messages=2))
    b.declare_queue(QueueConfig("q", address="a"))
    assert b.send("a", Message("s", scheduled_at_ms=50)) == "accepted"
    assert b.send("a", Message("p1")) == "accepted"
    assert b.send("a", Message("p2")) == "paged"
    assert b.delete_message("q", "s") is True and b.delete_message("q", "p2") is True
    c = b.counters("q")
    assert (c.scheduled_count, c.paged_count, c.message_count, c.acknowledged) == (0, 0, 1, 2)
    b.advance(100)
    assert b.pending_ids("q") == ["p1"]


@pytest.mark.rules("DELIVERY-32")
@pytest.mark.parametrize("name", ["jetstream", "redis-streams"])
def test_stored_scope_deletes_a_held_message_and_its_ack_changes_nothing(name: str) -> None:
    b = make(name)
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    assert b.delete_message("q", "m1") is True
    assert b.unacked_ids("c") == ["m2"]
    c = b.counters("q")
    assert (c.message_count, c.delivering_count, c.killed) == (3, 1, 1)
    assert b.ack("c", "m1") == "ok"
    assert b.counters("q") == c
    assert [b.receive("c"), b.receive("c"), b.receive("c")] == ["m3", "m4", None]


@pytest.mark.rules("DELIVERY-32", "DELIVERY-29")
def test_jetstream_delete_of_a_held_message_moves_the_ack_floor_and_frees_the_cap() -> None:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0, max_unacked=1))
    b.send("q", Message("m1"))
    b.send("q", Message("m2"))
    assert b.receive("c") == "m1" and b.receive("c") is None
    assert b.delete_message("q", "m1") is True
    state = b.consumer_state("q")
    assert (state["num_ack_pending"], state["ack_floor_stream_seq"]) == (0, 1)
    assert b.receive("c") == "m2"


@pytest.mark.rules("DELIVERY-33")
@pytest.mark.parametrize("name", ["artemis", "jetstream", "redis-streams"])
def test_delete_of_an_id_not_stored_answers_false(name: str) -> None:
    b = make(name)
    assert b.receive("c") == "m1"
    assert b.ack("c", "m1") == "ok"
    before = b.counters("q")
    assert b.delete_message("q", "m1") is False  # acknowledged
    assert b.delete_message("q", "never") is False
    assert b.delete_message("q", "m2") is True and b.delete_message("q", "m2") is False
    after = b.counters("q")
    counted = "acknowledged" if name == "artemis" else "killed"  # delete_counts
    assert (after.message_count, getattr(after, counted)) == (before.message_count - 1,
                                                              getattr(before, counted) + 1)


@pytest.mark.rules("DELIVERY-33")
def test_a_profile_without_delete_refuses_it() -> None:
    b = make("rabbitmq-classic")
    with pytest.raises(Unsupported):
        b.delete_message("q", "m1")


@pytest.mark.rules("DELIVERY-31", "REDELIVERY-21", "DELIVERY-27")
def test_jetstream_deletes_a_message_kept_past_max_deliver_and_its_redelivered_count() -> None:
    """A kept message (REDELIVERY-21) is stored: the stream's delete removes it and its o.rdc entry
    (nats-server 2.14.1+, bdf6c80d8); tests/adapters/scenarios/nats-delete-past-max-deliver.yaml."""
    b = make("jetstream", max_delivery_attempts=2)
    for _ in range(2):
        assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok"
    assert b.receive("c") == "m2"  # m1 is kept past max_deliver
    assert b.consumer_state("q")["num_redelivered"] == 1
    assert b.delete_message("q", "m1") is True
    assert b.consumer_state("q")["num_redelivered"] == 0
    assert b.counters("q").message_count == 3
    assert b.delete_message("q", "m1") is False  # gone
