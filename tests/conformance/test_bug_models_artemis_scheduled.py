"""The bug model artemis-non-destructive-scheduled-reoffers (reference_model/bugs/
artemis_scheduled_resets_iterators.py): a due scheduled message goes to a non-destructive queue through
QueueImpl#addHead(List, scheduling), which resets every consumer's iterator, so each consumer walks the
whole list again. It holds the counterexamples Artemis 2.40.0 gave (seed 387410's lastvalue area, after
the area explored past the repeat bug), the plain model and the repeat model alone do not, and the
registry explains the finding with it. What it changes, case by case, is asserted on the model's own
answers; each case below was replayed on Artemis 2.40.0 as a scenario with the expectations of the model
with both Artemis bugs (2026-11-29: every one PASS, delivery counts included). No broker is needed."""

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
from tests.conformance.bug_model_support import bug_model, scenario_steps

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "adapters" / "scenarios"
RESETS = "artemis-non-destructive-scheduled-reoffers"
REPEATS = "artemis-non-destructive-ring-repeats-replaced"
#: the option of the repeat bug the lastvalue area explored past before it met this one
PAST_REPEAT = {BUGS[REPEATS].option: True}
SEED_387410 = scenario_steps(SCENARIOS / "artemis-non-destructive-scheduled-reoffers-seed-387410.yaml")
REGRESSION = scenario_steps(SCENARIOS / "artemis-non-destructive-last-value-scheduled-reoffers.yaml")

LVQ = {"queue": {"name": "q", "last_value_key": "lvk", "non_destructive": True}}
START = {"advance": 1000}


def _due(msg_id: str, at: int, value: str = "B") -> dict[str, Any]:
    return {"send": {"to": "q", "id": msg_id, "scheduled_at_ms": at, "properties": {"lvk": value}}}


def _both() -> ReferenceAdapter:
    """Artemis as measured: both bugs of a non-destructive queue's iterators."""
    return ReferenceAdapter(options=BUGS[RESETS].enable(BUGS[REPEATS].enable(profile("artemis"))))


def _options(*bugs: str) -> Any:
    options = profile("artemis")
    for bug in bugs:
        options = BUGS[bug].enable(options)
    return options


def _answers(steps: list[dict[str, Any]], *bugs: str) -> list[Any]:
    """The results of the receives and acks, each receive with the delivery count it shows."""
    out: list[Any] = []
    for step in annotate(steps, _options(*bugs), delivery_counts=True):
        op = next(iter(step))
        if op in ("receive", "receive_batch", "ack"):
            counts = step["expect"].get("delivery_count") or []
            out.append((step["expect"].get("result"), *(c["count"] for c in counts)))
    return out


def _results(steps: list[dict[str, Any]], *bugs: str) -> list[Any]:
    return [answer[0] for answer in _answers(steps, *bugs)]


def test_the_bug_model_holds_what_the_broker_answered() -> None:
    assert not profile("artemis").scheduled_fire_resets_iterators
    # seed 387410: the area had explored past the repeat bug; the broker has both
    assert holds_under(SEED_387410, RESETS, profile("artemis"), _both, PAST_REPEAT)
    assert not holds_under(SEED_387410, REPEATS, profile("artemis"), _both, PAST_REPEAT)
    for plain in (lambda: bug_model(None, "artemis"), lambda: bug_model(REPEATS, "artemis")):
        assert not holds_under(SEED_387410, RESETS, profile("artemis"), plain, PAST_REPEAT)
    assert holds_under(REGRESSION, RESETS, profile("artemis"), lambda: bug_model(RESETS, "artemis"))


def test_the_regression_scenarios_fail_on_the_bug_model_only() -> None:
    for name in ("artemis-non-destructive-scheduled-reoffers-seed-387410.yaml",
                 "artemis-non-destructive-last-value-scheduled-reoffers.yaml"):
        verdicts = [run_scenario(load(SCENARIOS / name), bug_model(bug, "artemis"), namespace="t").verdict
                    for bug in (None, RESETS, REPEATS)]
        assert verdicts == ["pass", "fail", "pass"], name


def test_the_registry_explains_the_seed_387410_finding_with_it() -> None:
    registry = load_registry()
    entry = next(d for d in registry.deviations if d.model == RESETS)
    assert entry.rules == BUGS[RESETS].rules and not entry.unmodelled and entry.area is None
    for check in ("ack.result", "receive.id"):
        finding = Finding("lastvalue", check, ("DELIVERY-8",), "differs",
                          [Step(*next(iter(s.items()))) for s in SEED_387410], 0.0, options=dict(PAST_REPEAT))
        where = ("artemis", "2.40.0", "artemis", "artemis")
        assert registry.find(finding, *where, replay_on(_both(), "artemis")) is entry
        # an implementation without it: not explained
        assert registry.find(finding, *where, replay_on(bug_model(REPEATS, "artemis"), "artemis")) is None


def test_a_pull_consumer_gets_the_listed_messages_again_a_held_one_as_a_second_copy() -> None:
    assert _results(SEED_387410) == ["m1", ["m4", "m2", "m3"]]
    again = ["m1", ["m4", "m1", "m2"]]
    assert _results(SEED_387410, RESETS) == _results(SEED_387410, RESETS, REPEATS) == again
    # the copy counts as delivering: m1 twice, m4, m2
    last = annotate(SEED_387410, _options(RESETS))[-1]["expect"]["queue"][0]
    assert last["delivering_count"] == 4


def test_the_reset_ends_a_repeat() -> None:
    """c, without credit, was offered m1, which m2 (its value) pruned: the repeat bug alone gives m2 twice
    after the firing; the reset gives a fresh iterator: m3, m2, nothing (as Artemis 2.40.0 did)."""
    steps = [LVQ, {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}}, START,
             {"send": {"to": "q", "id": "m1", "properties": {"lvk": "A"}}},
             {"send": {"to": "q", "id": "m2", "properties": {"lvk": "A"}}}, _due("m3", 1010),
             {"advance": 10}, {"receive": "c"}, {"receive": "c"}, {"receive": "c"}]
    assert _results(steps, REPEATS) == ["m3", "m3", "m2"]
    assert _results(steps, REPEATS, RESETS) == _results(steps, RESETS) == ["m3", "m2", None]


def test_a_pushing_consumer_gets_both_copies_each_with_the_count_of_its_own_delivery() -> None:
    """m1 and m2 wait in c's buffer when m3 fires: c is given m3, m1 and m2 again; the copies arrive after
    the first ones, and a received delivery shows the count it was sent with (1 for the first m1, 2 for
    its copy); an ack settles one copy, a second one fails; the close cancels the rest."""
    steps = [LVQ, START, {"send_batch": {"to": "q", "ids": ["m1", "m2"]}},
             {"consumer": {"name": "c", "queue": "q"}}, _due("m3", 1010), {"advance": 10},
             *[{"receive": "c"}] * 6, {"ack": {"consumer": "c", "id": "m1"}},
             {"ack": {"consumer": "c", "id": "m1"}}, {"close": "c"}]
    assert _answers(steps, RESETS) == [("m1", 1), ("m2", 1), ("m3", 1), ("m1", 2), ("m2", 2), (None,),
                                       ("ok",), ("failed",)]
    assert _results(steps) == ["m1", "m2", "m3", None, None, None, "ok", "failed"]
    assert annotate(steps, _options(RESETS))[-1]["expect"]["queue"][0]["delivering_count"] == 0


@pytest.mark.parametrize("consumer", [{"window_messages": 2}, {"window_bytes": -1, "max_unacked": 2}],
                         ids=["window", "prefetch"])
def test_a_consumer_out_of_credit_at_the_firing_gets_the_list_again_as_credit_returns(
        consumer: dict[str, Any]) -> None:
    """m2 and m3 in flight (no credit) when m4 fires: the new iterator waits at m4, then offers m1, m2 and
    m3 again, one per credit the consumer gives back (the acknowledged m1 as a new delivery)."""
    steps: list[dict[str, Any]] = [LVQ, START, {"consumer": {"name": "c", "queue": "q", **consumer}},
                                   {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"]}}, {"receive": "c"},
                                   {"ack": {"consumer": "c", "id": "m1"}}, _due("m4", 1010), {"advance": 10}]
    for msg_id in ("m2", "m3", "m4", "m1"):
        steps += [{"receive": "c"}, {"ack": {"consumer": "c", "id": msg_id}}]
    assert _results(steps, RESETS)[2:] == ["m2", "ok", "m3", "ok", "m4", "ok", "m1", "ok"]
    assert _results(steps)[2:] == ["m2", "ok", "m3", "ok", "m4", "ok", None, "failed"]


def test_nothing_changes_on_a_destructive_queue_or_without_a_firing() -> None:
    destructive = [{"queue": {"name": "q", "last_value_key": "lvk"}},
                   {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}}, START,
                   {"send_batch": {"to": "q", "ids": ["m1", "m2"]}}, {"receive": "c"}, _due("m3", 1010),
                   {"advance": 10}, {"receive": "c"}, {"receive": "c"}, {"receive": "c"}]
    assert _answers(destructive, RESETS) == _answers(destructive)
    unfired = [*SEED_387410[:-2], SEED_387410[-1]]  # m4 never fires
    assert _answers(unfired, RESETS) == _answers(unfired)


#: seed 387410 on 2.40.0 again (lastvalue, after the area explored past both bugs): c-q without credit is
#: offered m1 (priority 4); m2 (priority 0, the same value) prunes it; the broker gives m2 once: the repeat
#: stays with the priority-4 level's iterator (PriorityLinkedListImpl keeps one per level), empty now
OTHER_LEVEL: list[dict[str, Any]] = [
    LVQ, {"consumer": {"name": "c-q", "queue": "q", "window_bytes": 0}},
    {"send": {"to": "q", "id": "m1", "size": 100, "properties": {"lvk": "v0"}}},
    {"send": {"to": "q", "id": "m2", "size": 100, "priority": 0, "properties": {"lvk": "v0"}}},
    {"receive_batch": {"consumer": "c-q", "count": 3}}]


def test_the_repeat_stays_with_its_priority_level() -> None:
    m2 = {"send": {"to": "q", "id": "m2", "size": 100, "properties": {"lvk": "v0"}}}
    same_level = [*OTHER_LEVEL[:3], m2, OTHER_LEVEL[-1]]
    assert _results(same_level, REPEATS) == [["m2", "m2", None]]  # the registered last-value repeat
    assert _results(OTHER_LEVEL, REPEATS) == _results(OTHER_LEVEL, REPEATS, RESETS) == [["m2", None]]
    # a later message of the offered one's level is the one given twice
    later = [*OTHER_LEVEL[:-1], {"send": {"to": "q", "id": "m3", "size": 100, "properties": {"lvk": "v1"}}},
             OTHER_LEVEL[-1]]
    assert _results(later, REPEATS) == [["m3", "m3", "m2"]]


def test_each_level_keeps_its_own_repeat() -> None:
    """Seed 662903 on 2.40.0 (lastvalue): c-q without credit is offered m1 (priority 4), then m2
    (priority 9, the level the iterator moves to); m3 (priority 9, m2's value) prunes m2, moving the
    priority-9 iterator on: the broker gives m3 twice (a model that kept m1's repeat only gave m3, m1)."""
    steps = [LVQ, {"consumer": {"name": "c-q", "queue": "q", "window_bytes": 0}},
             {"send": {"to": "q", "id": "m1", "size": 100, "properties": {"lvk": "v0"}}},
             {"send": {"to": "q", "id": "m2", "size": 100, "priority": 9, "properties": {"lvk": "v2"}}},
             {"send": {"to": "q", "id": "m3", "size": 100, "priority": 9, "properties": {"lvk": "v2"}}},
             {"receive_batch": {"consumer": "c-q", "count": 2}}]
    assert _results(steps, REPEATS) == [["m3", "m3"]]
    assert _results(steps) == [["m3", "m1"]]


def test_a_second_copy_takes_a_credit_of_the_consumers_bound() -> None:
    """The reset gives a prefetching consumer (max_unacked 3) m1 a second time after the fired m2: three
    deliveries, its whole bound, so m3 (m2's successor) is not given to it (2.56.0 ci run, lastvalue
    area: six FAILs "delivering_count expected 4, actual 3" while the model counted the copy as no
    delivery)."""
    steps = [LVQ, {"consumer": {"name": "c", "queue": "q", "window_bytes": -1, "max_unacked": 3}},
             {"send": {"to": "q", "id": "m1", "size": 100, "properties": {"lvk": "v0"}}},
             {"send": {"to": "q", "id": "m2", "size": 100, "scheduled_at_ms": 10,
                       "properties": {"lvk": "v0"}}},
             {"advance": 10}, {"receive_batch": {"consumer": "c", "count": 3}},
             {"send": {"to": "q", "id": "m3", "size": 100, "properties": {"lvk": "v0"}}}]
    last = annotate(steps, BUGS[RESETS].enable(profile("artemis")))
    assert last[5]["expect"]["result"] == ["m1", "m2", "m1"]
    assert last[6]["expect"]["queue"][0]["delivering_count"] == 3
