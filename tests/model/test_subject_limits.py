"""Per-subject limits (JetStream max_msgs_per_subject): RING-31..33 on the model."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import profile

rules = pytest.mark.rules


def _stream(**queue: object) -> Broker:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q", **queue))  # type: ignore[arg-type]
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    return b


def _send(b: Broker, msg_id: str, subject: str, size: int = 100) -> str:
    return b.send("q", Message(msg_id, size=size, subject=subject))


@rules("RING-31")
def test_a_store_over_the_subject_limit_removes_the_subjects_oldest_even_unacked() -> None:
    b = _stream(max_per_subject=1)
    assert [_send(b, "a1", "a"), _send(b, "b1", "b")] == ["accepted", "accepted"]
    assert b.receive("c") == "a1"  # delivered, unacknowledged
    assert _send(b, "a2", "a") == "accepted"
    counters = b.counters("q")
    assert (counters.message_count, counters.delivering_count, counters.replaced) == (2, 0, 1)
    assert b.receive("c") == "b1"  # the other subject is untouched
    assert b.receive("c") == "a2"


@rules("RING-31")
def test_the_subject_limit_is_enforced_before_the_count_bound() -> None:
    """With discard old and max_msgs 2, a2 replaces a1 (its subject's), not the stream's oldest b1."""
    b = _stream(max_per_subject=1, ring_size=2)
    _send(b, "b1", "b")
    _send(b, "a1", "a")
    _send(b, "a2", "a")
    assert b.pending_ids("q") == ["b1", "a2"]
    assert b.counters("q").replaced == 1


@rules("RING-32")
def test_discard_new_per_subject_refuses_at_the_subject_limit() -> None:
    b = _stream(max_per_subject=2, overflow="discard-new", discard_new_per_subject=True)
    assert [_send(b, i, "a") for i in ("a1", "a2", "a3")] == ["accepted", "accepted", "failed"]
    assert _send(b, "b1", "b") == "accepted"
    assert b.pending_ids("q") == ["a1", "a2", "b1"]
    assert b.counters("q").replaced == 0


@rules("RING-33")
def test_discard_new_lets_a_subject_at_its_limit_replace_at_a_full_count_bound() -> None:
    b = _stream(max_per_subject=1, ring_size=2, overflow="discard-new")
    assert [_send(b, "a1", "a"), _send(b, "b1", "b")] == ["accepted", "accepted"]
    assert _send(b, "c1", "c") == "failed"  # a new subject: the count bound refuses
    assert _send(b, "a2", "a") == "accepted"  # a at its limit: replaces a1
    assert b.pending_ids("q") == ["b1", "a2"]


@rules("RING-33")
def test_discard_new_byte_bound_lets_in_only_what_the_subjects_oldest_makes_room_for() -> None:
    b = _stream(max_per_subject=1, max_length_bytes=300, overflow="discard-new")
    assert [_send(b, "a1", "a", 100), _send(b, "b1", "b", 200)] == ["accepted", "accepted"]
    assert _send(b, "a2", "a", 150) == "failed"  # a1 (100) frees too little
    assert _send(b, "a3", "a", 100) == "accepted"
    assert b.pending_ids("q") == ["b1", "a3"]


def test_declarations_follow_the_stream_config_checks() -> None:
    with pytest.raises(ModelMisuse):
        _stream(max_per_subject=1, discard_new_per_subject=True)  # discard old
    with pytest.raises(ModelMisuse):
        _stream(overflow="discard-new", discard_new_per_subject=True)  # no per-subject limit
    with pytest.raises(Unsupported):
        Broker(profile("artemis")).declare_queue(QueueConfig("q", max_per_subject=1))


@rules("RING-34")
@pytest.mark.parametrize("overflow", ["discard-old", "discard-new"])
def test_a_lower_subject_limit_trims_every_subject_at_once(overflow: str) -> None:
    b = _stream(max_per_subject=3, overflow=overflow)
    for msg_id, subject in (("a1", "a"), ("b1", "b"), ("a2", "a"), ("b2", "b"), ("a3", "a")):
        _send(b, msg_id, subject)
    assert b.receive("c") == "a1"  # held: removed all the same
    b.set_subject_limit("q", 4)  # higher: nothing
    assert b.counters("q").message_count == 5
    b.set_subject_limit("q", 1)
    assert b.pending_ids("q") == ["b2", "a3"]
    assert b.counters("q").delivering_count == 0
    with pytest.raises(ModelMisuse):
        b.set_subject_limit("q", 0)
