"""The bug models of Artemis' non-destructive ring queues (reference_model/bugs): each fails its
regression scenario as the broker does, holds every counterexample the suite found for it when the
implementation is the bug model (the plain model does not), and explains no other bug model's
scenario. What each changes, case by case, is asserted on the model's own answers. No broker is needed.

- artemis-non-destructive-ring-evicts-delivered (QueueImpl#enforceRing skips refRemoved for a head in
  delivery): the counterexamples of the ring area on 2.40.0, seed 989465 (5 steps), replayed on the
  broker as DEVIATION against it.
- artemis-non-destructive-ring-repeats-replaced (LinkedListImpl.Iterator#next's repeat branch leaves
  last): its ring and last-value regression scenarios, and the receive.id counterexample of the same
  run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring.driver import Step
from mqconform.conformance.exploring.runner import Finding
from mqconform.conformance.judging.bug_replay import holds_under
from mqconform.conformance.judging.deviations import load_registry
from mqconform.conformance.judging.known_scenarios import replay_on
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import profile
from mqconform.scenario import annotate, load, run_scenario
from tests.conformance.bug_model_support import bug_model, loaded_steps

ROOT = Path(__file__).resolve().parents[2]
EVICTS = "artemis-non-destructive-ring-evicts-delivered"
REPEATS = "artemis-non-destructive-ring-repeats-replaced"

#: the ring area's counterexample on Artemis 2.40.0, seed 989465 (every one of its seven findings of
#: this bug is these steps, or these with the second batch as one send): m1, received and held, is the
#: head the ring evicts at m4's send; the broker counts 5 (pending 4) where the model counts 4
SEED_989465: list[dict[str, Any]] = [
    {"queue": {"name": "q", "ring_size": 3, "non_destructive": True}},
    {"consumer": {"name": "c-q", "queue": "q", "window_bytes": 0}},
    {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"], "size": 100}},
    {"receive": "c-q"},
    {"send_batch": {"to": "q", "ids": ["m4", "m5", "m6"], "size": 100}},
]


def _model(bug: str | None) -> ReferenceAdapter:
    return bug_model(bug, "artemis")



def _last(steps: list[dict[str, Any]], bug: str | None) -> dict[str, Any]:
    """The queue's counters the last step expects on the model (with `bug`)."""
    options = BUGS[bug].enable(profile("artemis")) if bug else profile("artemis")
    queue = annotate(steps, options)[-1]["expect"]["queue"]
    return dict(queue[0] if isinstance(queue, list) else queue)


def _ring(*steps: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"queue": {"name": "q", "ring_size": 1, "non_destructive": True}},
            {"send": {"to": "q", "id": "m1", "size": 100}},
            {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}}, {"receive": "c"}, *steps]


@pytest.mark.parametrize("steps", [loaded_steps(ROOT / "docs/findings" / f"{EVICTS}.yaml"), SEED_989465],
                         ids=["regression", "seed-989465"])
def test_evicts_delivered_the_bug_model_holds_what_the_broker_answered(steps: list[dict[str, Any]]) -> None:
    assert not profile("artemis").ring_eviction_keeps_delivered_pending
    # the counterexample replayed on an implementation that is the bug model holds at every step;
    # on the plain model it does not, and no other bug model explains it
    assert holds_under(steps, EVICTS, profile("artemis"), lambda: _model(EVICTS))
    assert not holds_under(steps, EVICTS, profile("artemis"), lambda: _model(None))
    for other in BUGS:
        if other != EVICTS:
            assert not holds_under(steps, other, profile("artemis"), lambda: _model(EVICTS)), other


def test_evicts_delivered_the_regression_scenario_fails_on_the_bug_model_only() -> None:
    path = ROOT / "docs/findings/artemis-non-destructive-ring-evicts-delivered.yaml"
    assert run_scenario(load(path), _model(None), namespace="t").verdict == "pass"
    assert run_scenario(load(path), _model(EVICTS), namespace="t").verdict == "fail"


def test_evicts_delivered_what_the_bug_changes() -> None:
    """One in the pending count per eviction of a head in delivery (dispatched, not acknowledged since:
    a close leaves it so, an ack by any consumer ends it); the ring's bound compares that count."""
    seed = _last(SEED_989465, EVICTS)
    assert (seed["pending_count"], seed["message_count"], seed["pending"]) == (4, 5, ["m4", "m5", "m6"])
    assert _last(SEED_989465, None)["pending_count"] == 3
    held = _ring({"send": {"to": "q", "id": "m2", "size": 100}})
    assert (_last(held, EVICTS)["pending_count"], _last(held, None)["pending_count"]) == (2, 1)
    closed = _ring({"close": "c"}, {"send": {"to": "q", "id": "m2", "size": 100}})
    assert _last(closed, EVICTS)["pending_count"] == 2
    acked = _ring({"ack": {"consumer": "c", "id": "m1"}}, {"send": {"to": "q", "id": "m2", "size": 100}})
    assert _last(acked, EVICTS) == _last(acked, None)
    # never delivered: the ring evicts it as the model does
    plain = [{"queue": {"name": "q", "ring_size": 1, "non_destructive": True}},
             {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"], "size": 100}}]
    assert _last(plain, EVICTS) == _last(plain, None)
    # a destructive ring: a delivered message is not listed, nothing changes
    destructive = [{"queue": {"name": "q", "ring_size": 1}}, *_ring()[1:],
                   {"send_batch": {"to": "q", "ids": ["m2", "m3"], "size": 100}}]
    assert _last(destructive, EVICTS) == _last(destructive, None)
    # the bound counts the kept one: after a resize to 3, a third listed message is one too many
    bound = [{"queue": {"name": "q", "ring_size": 2, "non_destructive": True}},
             {"send_batch": {"to": "q", "ids": ["m1", "m2"], "size": 100}},
             {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}}, {"receive": "c"},
             {"send": {"to": "q", "id": "m3", "size": 100}},
             {"set_ring_size": {"queue": "q", "size": 3}},
             {"send": {"to": "q", "id": "m4", "size": 100}}]
    assert (_last(bound, EVICTS)["pending"], _last(bound, EVICTS)["pending_count"]) == (["m3", "m4"], 3)
    assert _last(bound, None)["pending"] == ["m2", "m3", "m4"]


def test_evicts_delivered_the_registry_names_one_step_entry_with_the_bug_model() -> None:
    entries = [d for d in load_registry().deviations if d.model == EVICTS]
    assert len(entries) == 1 and entries[0].rules == BUGS[EVICTS].rules and not entries[0].unmodelled
    assert entries[0].shape == "non-destructive-ring-evicts-delivered" and entries[0].area is None


#: the ring area's receive.id counterexample on Artemis 2.40.0, seed 989465: c-q, without credit, is
#: offered m1; the ring replaces m1, m2 and m3, moving its iterator on to m4; the broker gives
#: [m4, m4, m5] where the model gives [m4, m5, m6]
SEED_989465_RECEIVE: list[dict[str, Any]] = [
    {"queue": {"name": "q", "ring_size": 3, "non_destructive": True}},
    {"consumer": {"name": "c-q", "queue": "q", "window_bytes": 0}},
    {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"], "size": 100}},
    {"send_batch": {"to": "q", "ids": ["m4", "m5", "m6"], "size": 100}},
    {"receive_batch": {"consumer": "c-q", "count": 3}},
]
REPEATED = [loaded_steps(ROOT / "docs/findings" / f"{REPEATS}.yaml"),
            loaded_steps(ROOT / "tests/adapters/scenarios"
                         / "artemis-non-destructive-last-value-repeats-current.yaml"),
            SEED_989465_RECEIVE]


def _results(steps: list[dict[str, Any]], bug: str | None) -> list[Any]:
    options = BUGS[bug].enable(profile("artemis")) if bug else profile("artemis")
    return [step["expect"].get("result") for step in annotate(steps, options)
            if next(iter(step)) in ("receive", "receive_batch")]


@pytest.mark.parametrize("steps", REPEATED, ids=["ring", "last-value", "seed-989465"])
def test_repeats_replaced_the_bug_model_holds_what_the_broker_answered(steps: list[dict[str, Any]]) -> None:
    assert not profile("artemis").repeat_after_removal_returns_twice
    assert holds_under(steps, REPEATS, profile("artemis"), lambda: _model(REPEATS))
    assert not holds_under(steps, REPEATS, profile("artemis"), lambda: _model(None))
    for other in BUGS:
        if other != REPEATS:
            assert not holds_under(steps, other, profile("artemis"), lambda: _model(REPEATS)), other


def test_repeats_replaced_what_the_bug_changes() -> None:
    """A consumer offered a message without credit (BUSY: repeat()) is moved on when it leaves the list,
    and given the next one twice; nothing changes without the removal or for a consumer with credit."""
    ring, last_value, seed = REPEATED
    assert (_results(ring, REPEATS), _results(ring, None)) == (["m2", "m2"], ["m2", None])
    assert _results(last_value, REPEATS) == ["m2", "m2", "m3"]
    assert _results(last_value, None) == ["m2", "m3", None]
    assert (_results(seed, REPEATS), _results(seed, None)) == ([["m4", "m4", "m5"]], [["m4", "m5", "m6"]])
    # ring-size 2: nothing replaced, nothing repeated
    roomy = [{"queue": {"name": "q", "ring_size": 2, "non_destructive": True}}, *ring[1:]]
    assert _results(roomy, REPEATS) == _results(roomy, None) == ["m1", "m2"]
    # a consumer with credit takes m1 at once: never offered without credit
    pushed = [ring[0], {"consumer": {"name": "c", "queue": "q"}}, *ring[2:]]
    assert _results(pushed, REPEATS) == _results(pushed, None)
    # the offered message was the tail: the iterator goes back to the one before, given again
    back = [{"queue": {"name": "q", "non_destructive": True}},
            {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
            {"send": {"to": "q", "id": "m1", "size": 100}}, {"receive": "c"},
            {"send": {"to": "q", "id": "m2", "size": 100}},
            {"delete": {"queue": "q", "id": "m2"}}, {"receive": "c"}, {"receive": "c"}]
    assert _results(back, REPEATS) == ["m1", "m1", None]
    assert _results(back, None) == ["m1", None, None]


def test_repeats_replaced_the_registry_names_one_entry_with_the_bug_model() -> None:
    entries = [d for d in load_registry().deviations if d.model == REPEATS]
    assert len(entries) == 1 and entries[0].rules == BUGS[REPEATS].rules and not entries[0].unmodelled
    assert entries[0].area is None and entries[0].versions.text == ">=2.18"


#: a delete moves the iterator too (measured on Artemis 2.40.0, scenarios with the bug model's
#: expectations: both PASS): the offered tail deleted, the iterator goes back to m1, given again; the
#: offered head deleted, the iterator goes on to m2, given twice
DELETED = {
    "back": ([{"queue": {"name": "q", "non_destructive": True}},
              {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
              {"send": {"to": "q", "id": "m1", "size": 100}}, {"receive": "c"},
              {"send": {"to": "q", "id": "m2", "size": 100}},
              {"delete": {"queue": "q", "id": "m2"}}, {"receive": "c"}, {"receive": "c"}],
             ["m1", "m1", None]),
    "next": ([{"queue": {"name": "q", "non_destructive": True}},
              {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
              {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"], "size": 100}},
              {"delete": {"queue": "q", "id": "m1"}}, {"receive": "c"}, {"receive": "c"}, {"receive": "c"}],
             ["m2", "m2", "m3"]),
}


@pytest.mark.parametrize("case", sorted(DELETED))
def test_repeats_replaced_a_delete_is_the_same_bug_and_the_registry_explains_it(case: str) -> None:
    steps, broker = DELETED[case]
    assert _results(steps, REPEATS) == broker and _results(steps, None) != broker
    registry = load_registry()
    entry = next(d for d in registry.deviations if d.model == REPEATS)
    finding = Finding("ring", "receive.id", ("RING-6",), "differs",
                      [Step(*next(iter(s.items()))) for s in steps], 0.0)
    assert registry.find(finding, "artemis", "2.40.0", "artemis", "artemis",
                         replay_on(_model(REPEATS), "artemis")) is entry
    # the same steps on an implementation without the bug: not explained
    assert registry.find(finding, "artemis", "2.40.0", "artemis", "artemis",
                         replay_on(_model(None), "artemis")) is None


def test_repeats_replaced_a_consumer_given_a_message_twice_holds_two_copies() -> None:
    """Measured on Artemis 2.40.0 (the bug model's expectations, delivery counts included, all held): the
    copies count twice as delivering; one ack settles one, a second ack of the id fails and the other
    stays delivering; a close cancels both (seed 989465's ring run after these models: message_count 3
    after the close, where a model that kept one delivery per message and consumer said 4)."""
    ring = [{"queue": {"name": "q", "ring_size": 3, "non_destructive": True}},
            {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
            {"send": {"to": "q", "id": "m1", "size": 100}},
            {"send_batch": {"to": "q", "ids": ["m2", "m3", "m4"], "size": 100}}]
    acks = [*ring, {"receive": "c"}, {"receive": "c"}, {"ack": {"consumer": "c", "id": "m2"}},
            {"ack": {"consumer": "c", "id": "m2"}}, {"receive": "c"}]
    closed = [*ring, {"receive_batch": {"consumer": "c", "count": 3}}, {"close": "c"}]
    for steps in (acks, closed):
        assert holds_under(steps, REPEATS, profile("artemis"), lambda: _model(REPEATS))
    options = BUGS[REPEATS].enable(profile("artemis"))
    answers = annotate(acks, options)
    assert [s["expect"].get("result") for s in answers[4:]] == ["m2", "m2", "ok", "failed", "m3"]
    assert [s["expect"]["queue"][0]["delivering_count"] for s in answers[4:]] == [1, 2, 1, 1, 2]
    assert _last(closed, REPEATS)["delivering_count"] == 0 and _last(closed, REPEATS)["message_count"] == 3


def test_repeats_replaced_a_fired_message_is_placed_by_the_list_not_its_sequence() -> None:
    """Two scheduled messages fired to the head of a non-destructive last-value queue (sequence 0
    both): m2, offered to the pull consumer without credit, is pruned by m3 (priority 0) as the tail
    of its level, and the iterator steps back to m1 (LinkedListImpl.Iterator#nudged), which comes
    again: the bug model finds m2's neighbours by its place in the list (the 2.40.0 ci run's
    lastvalue-21 story, whose receive the broker answered m1). With the scheduled-fire bug model on
    as well, as the run explored it."""
    steps = loaded_steps(ROOT / "tests/adapters/scenarios"
                         / "artemis-non-destructive-last-value-scheduled-repeats-previous.yaml")
    assert _results(steps, REPEATS) == ["m1", "m1"]
    assert _results(steps, None) == ["m1", "m3"]
    both = BUGS[REPEATS].enable(profile("artemis")).evolve(scheduled_fire_resets_iterators=True)
    assert [step["expect"].get("result") for step in annotate(steps, both)
            if next(iter(step)) == "receive"] == ["m1", "m1"]
