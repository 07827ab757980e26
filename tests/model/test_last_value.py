"""Last-value queues in the model, one behaviour per LASTVALUE rule (reference_model/last_value.py)."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import Unsupported
from mqconform.reference_model.profiles import PROFILES, profile

rules = pytest.mark.rules


def lvq(**queue: object) -> Broker:
    b = Broker()
    b.declare_queue(QueueConfig("q", last_value_key="k", **queue))  # type: ignore[arg-type]
    return b


def kv(msg_id: str, value: str | None, **kw: object) -> Message:
    return Message(msg_id, properties={} if value is None else {"k": value}, **kw)  # type: ignore[arg-type]


@rules("LASTVALUE-1", "LASTVALUE-2")
def test_latest_value_is_kept_at_its_own_place() -> None:
    b = lvq()
    for message in (kv("a1", "A"), kv("b1", "B"), kv("a2", "A")):
        b.send("q", message)
    # a2 supersedes a1 and stands behind b1 (the tail), not in a1's place (before ARTEMIS-3890: a2, b1)
    assert b.pending_ids("q") == ["b1", "a2"]
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert [b.receive("c"), b.receive("c"), b.receive("c")] == ["b1", "a2", None]


@rules("LASTVALUE-2")
def test_latest_value_takes_its_place_within_its_priority() -> None:
    b = lvq()
    for message in (kv("a1", "A", priority=9), kv("b1", "B", priority=9), kv("a2", "A", priority=9),
                    kv("c1", "C", priority=0)):
        b.send("q", message)
    assert b.pending_ids("q") == ["b1", "a2", "c1"]


@rules("LASTVALUE-3")
def test_message_without_the_key_is_never_replaced() -> None:
    b = lvq()
    for message in (kv("x1", None), kv("x2", None), Message("y", properties={"other": "A"}), kv("a1", "A")):
        b.send("q", message)
    assert b.pending_ids("q") == ["x1", "x2", "y", "a1"]
    assert b.counters("q").replaced == 0


@rules("LASTVALUE-4", "RING-15")
def test_superseded_message_counts_replaced_not_acknowledged_or_killed() -> None:
    b = lvq()
    for message in (kv("a1", "A"), kv("a2", "A"), kv("a3", "A")):
        b.send("q", message)
    c = b.counters("q")
    assert (c.added, c.replaced, c.acknowledged, c.killed, c.message_count) == (3, 2, 0, 0, 1)


@rules("LASTVALUE-5")
def test_superseded_delivering_message_stays_with_its_consumer() -> None:
    b = lvq()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", kv("a1", "A"))
    assert b.receive("c") == "a1"
    b.send("q", kv("a2", "A"))
    assert b.pending_ids("q") == ["a2"] and b.counters("q").replaced == 0
    assert b.ack("c", "a1") == "ok"
    c = b.counters("q")
    assert (c.acknowledged, c.replaced, c.pending_count) == (1, 0, 1)


@rules("LASTVALUE-6")
def test_returned_message_is_current_only_without_a_newer_one() -> None:
    b = lvq()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", kv("a1", "A"))
    b.send("q", kv("b1", "B"))
    assert (b.receive("c"), b.receive("c")) == ("a1", "b1")
    b.send("q", kv("a2", "A"))
    b.close("c")  # a1 returns stale (a2 is current): replaced, not acknowledged; b1 is current again
    assert b.pending_ids("q") == ["b1", "a2"]
    c = b.counters("q")
    assert (c.replaced, c.acknowledged, c.message_count) == (1, 0, 2)


def _nack_listed(*, room: int = 1, other: int = 0, newer: bool = False) -> tuple[list[str], int, int]:
    """m1 (value A) listed, then taken by c (prefetch, at most `room` unacked), which nacks it; `other`:
    room of a second consumer d opened after c's receive; `newer`: m2 (value A, priority 9) sent before
    the nack (with c full, it stays listed as A's current message). The pending ids, the replaced
    count and the delivering count after the nack."""
    b = Broker()
    b.declare_queue(QueueConfig("q", last_value_key="k"))
    b.send("q", kv("m1", "A"))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=-1, max_unacked=room))
    assert b.receive("c") == "m1"
    if other:
        b.open_consumer(ConsumerConfig("d", "q", window_bytes=-1, max_unacked=other))
    if newer:
        b.send("q", kv("m2", "A", priority=9))
    assert b.nack("c", "m1") == "ok"
    c = b.counters("q")
    return b.pending_ids("q"), c.replaced, c.delivering_count


@rules("LASTVALUE-6")
def test_a_nacked_message_is_current_when_its_value_has_none() -> None:
    """m1, delivered from the list, is no longer current (LastValueQueue#refRemoved); its nack puts it
    back as a close does (LastValueQueue#addHead, trackLastValueIfAbsent): current again, so its nacker
    takes it back, whether it held one of one or had room for more, or another consumer does. The
    bug model artemis-last-value-nack-pruned-before-credit prunes it (2.26.0 to 2.56.0)."""
    assert _nack_listed() == ([], 0, 1)
    assert _nack_listed(room=2) == ([], 0, 1)
    assert _nack_listed(other=1) == ([], 0, 1)


@rules("LASTVALUE-6")
def test_a_nacked_message_with_a_newer_current_one_is_stale() -> None:
    """m2 (value A) sent while c held m1 is current: the nacked m1 is stale, c takes m2 (the higher
    priority) in the pass that follows, and m1 is pruned (REPLACED), as after a close."""
    assert _nack_listed(newer=True) == ([], 1, 1)
    assert _nack_listed(newer=True, room=2) == ([], 0, 2)  # room for both: m1 is given back too


@rules("LASTVALUE-7")
def test_message_count_leaves_delivering_out() -> None:
    b = lvq()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for message in (kv("a1", "A"), kv("b1", "B"), kv("x", None)):
        b.send("q", message)
    assert b.receive("c") == "a1"
    c = b.counters("q")
    assert (c.message_count, c.pending_count, c.delivering_count) == (2, 2, 1)


@rules("LASTVALUE-8")
def test_non_destructive_keeps_delivered_values_for_later_consumers() -> None:
    b = lvq(non_destructive=True)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", kv("a1", "A"))
    b.send("q", kv("b1", "B"))
    assert b.receive("c") == "a1" and b.ack("c", "a1") == "ok"
    assert b.pending_ids("q") == ["a1", "b1"]  # an ack removes nothing
    b.open_consumer(ConsumerConfig("late", "q", window_bytes=0))
    assert [b.receive("late"), b.receive("late")] == ["a1", "b1"]
    assert b.receive("late") is None
    count = b.delivery_count("q", "a1")
    assert count is not None
    b.send("q", kv("a2", "A"))  # supersedes a1, which `late` still holds
    assert b.pending_ids("q") == ["b1", "a2"] and b.counters("q").replaced == 1
    assert b.delivery_count("q", "a1") == count  # held by `late`: still observable


@rules("LASTVALUE-9")
def test_non_destructive_send_to_a_waiting_consumer_stays_listed() -> None:
    b = lvq(non_destructive=True)
    b.open_consumer(ConsumerConfig("c", "q"))  # a pushing consumer with room: the message goes to it
    b.send("q", kv("a1", "A"))
    assert b.pending_ids("q") == ["a1"]
    assert b.counters("q").delivering_count == 1


@rules("LASTVALUE-10")
def test_scheduled_value_becomes_current_when_due() -> None:
    b = lvq()
    b.send("q", kv("a1", "A", scheduled_at_ms=100))
    b.send("q", kv("a2", "A"))
    assert b.pending_ids("q") == ["a2"]  # a1 is not current while scheduled
    b.advance(100)
    assert b.pending_ids("q") == ["a1"]  # due: it supersedes the later a2
    assert b.counters("q").replaced == 1


@rules("LASTVALUE-1")
def test_only_profiles_with_last_value_queues_accept_a_key() -> None:
    for name in PROFILES:
        options = profile(name)
        if options.has("last_value"):
            Broker(options).declare_queue(QueueConfig("q", last_value_key="k"))
        else:
            with pytest.raises(Unsupported):
                Broker(options).declare_queue(QueueConfig("q", last_value_key="k"))
    assert profile("artemis").has("last_value")


def _fire_after_receive(b: Broker, *, key: bool) -> list[str | None]:
    """c receives m1 from a non-destructive queue, then m2 is scheduled and fires to the head: what c
    receives next, three times."""
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    b.send("q", kv("m1", "A") if key else Message("m1"))
    assert b.receive("c") == "m1"
    b.send("q", kv("m2", "B", scheduled_at_ms=b.now_ms + 500) if key else
           Message("m2", scheduled_at_ms=b.now_ms + 500))
    b.advance(500)
    assert b.pending_ids("q") == ["m2", "m1"]
    return [b.receive("c"), b.receive("c"), b.receive("c")]


@rules("LASTVALUE-8", "LASTVALUE-10", "DELIVERY-12")
def test_a_fired_scheduled_message_is_the_only_new_one_for_a_non_destructive_consumer() -> None:
    """The model: the fired message is the only one a consumer has not seen (Artemis re-offers the rest:
    the registered deviation of tests/adapters/scenarios/
    artemis-non-destructive-last-value-scheduled-reoffers.yaml)."""
    assert _fire_after_receive(lvq(non_destructive=True), key=True) == ["m2", None, None]
    plain = Broker()
    plain.declare_queue(QueueConfig("q", non_destructive=True))
    assert _fire_after_receive(plain, key=False) == ["m2", None, None]
