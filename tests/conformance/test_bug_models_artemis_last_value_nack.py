"""The Artemis bug model artemis-last-value-nack-pruned-before-credit (LASTVALUE-6): a nack puts a message
back on a last-value queue untracked (QueueImpl#cancel; a close's LastValueQueue#addHead tracks it if its
value has none), and the pass the nack forces runs before the nacker's credit returns, so a message
delivered from the list that only its full nacker could take is pruned as REPLACED. It gives the
regression scenario's broker answer where the plain model holds the scenario; a nacker with room left,
another consumer with room, a message without the key and a nack with a newer current message are as
the plain model has them. No broker is needed."""

from __future__ import annotations

from pathlib import Path

from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import PROFILES, profile
from tests.conformance.bug_model_support import (
    assert_bug_model_gives_the_brokers_answer,
    bug_model,
)

ROOT = Path(__file__).resolve().parents[2]
BUG = "artemis-last-value-nack-pruned-before-credit"
SCENARIO = ROOT / "tests/adapters/scenarios/artemis-last-value-nack-pruned-before-credit.yaml"


def test_no_profile_switches_the_bug_on() -> None:
    assert not any(getattr(profile(name), BUGS[BUG].option) for name in PROFILES)


def test_the_bug_model_gives_the_brokers_answer_where_the_plain_model_holds() -> None:
    assert_bug_model_gives_the_brokers_answer(BUG, SCENARIO, "artemis", "last-value-nack", 4, "step 5 ",
                                              "queue q delivering_count: expected 1, actual 0")


def _after_nack(bug: str | None, *, room: int = 1, other: int = 0, keyed: bool = True,
                newer: bool = False) -> tuple[list[str], int, int]:
    """m1 (key v1 unless not `keyed`) listed, then taken by c (at most `room` unacked), which nacks it;
    `other`: the room of a consumer d opened before the nack; `newer`: m2 (v1, priority 9) sent before
    the nack. The pending ids, the replaced count and the delivering count after the nack."""
    model = bug_model(bug, "artemis")
    model.open("t")
    model.declare_queue(QueueConfig(name="q", last_value_key="lvk"))
    model.send("q", Message(id="m1", size=100, properties={"lvk": "v1"} if keyed else {}))
    model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=-1, max_unacked=room))
    assert model.receive("c").value == "m1"
    if other:
        model.open_consumer(ConsumerConfig(name="d", queue="q", window_bytes=-1, max_unacked=other))
    if newer:
        model.send("q", Message(id="m2", size=100, priority=9, properties={"lvk": "v1"}))
    assert model.nack("c", "m1").value == "ok"
    counters = model.counters("q").value
    return model.pending_ids("q").value, counters["replaced"], counters["delivering_count"]


def test_a_full_nacker_loses_its_message() -> None:
    """2.40.0, 2.56.0: the consumer held one of one: the plain model gives m1 back (the close rule);
    the bug model prunes it."""
    assert _after_nack(None) == ([], 0, 1)
    assert _after_nack(BUG) == ([], 1, 0)


def test_room_in_the_pass_takes_the_message_as_the_plain_model_has_it() -> None:
    """2.56.0: a nacker with room for one more is given m1 again in the pass; so is a second consumer
    with room; a message without the key is never pruned."""
    assert _after_nack(BUG, room=2) == _after_nack(None, room=2) == ([], 0, 1)
    assert _after_nack(BUG, other=1) == _after_nack(None, other=1) == ([], 0, 1)
    assert _after_nack(BUG, keyed=False) == _after_nack(None, keyed=False) == ([], 0, 1)


def test_a_newer_current_message_makes_the_nacked_one_stale_either_way() -> None:
    """m2 (v1) sent while c held m1 is current: m1 is stale by the close rule too, and pruned."""
    assert _after_nack(BUG, newer=True) == _after_nack(None, newer=True) == ([], 1, 1)
