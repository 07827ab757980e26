"""Artemis (the bin distribution the adapter fetches, 2.40.0): a scheduled message fired to a
non-destructive queue resets every consumer's iterator (QueueImpl#addHead(List, scheduling),
resetAllIterators; reference_model/bugs/artemis_scheduled_resets_iterators.py). The broker answers as the
model with that bug and the repeat bug does, step by step and delivery count by delivery count, for a
pull, a pushing, a windowed and a prefetching consumer, and the repeat bug across priority levels;
the seed-387410 scenario, written with the plain model's expectations, fails where the broker gives m1
again. Needs java (the fixture fails without it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import profile
from mqconform.scenario import annotate, from_data, load, run_scenario
from tests.conformance.bug_model_support import scenario_steps

pytestmark = pytest.mark.broker("artemis")

SCENARIOS = Path(__file__).parent / "scenarios"
SEED_387410 = SCENARIOS / "artemis-non-destructive-scheduled-reoffers-seed-387410.yaml"
BOTH = BUGS["artemis-non-destructive-scheduled-reoffers"].enable(
    BUGS["artemis-non-destructive-ring-repeats-replaced"].enable(profile("artemis")))

LVQ = {"queue": {"name": "q", "last_value_key": "lvk", "non_destructive": True}}
START = {"advance": 1000}
DUE = {"send": {"to": "q", "id": "m4", "scheduled_at_ms": 1010, "properties": {"lvk": "B"}}}
FIRE = {"advance": 10}
CASES: dict[str, list[dict[str, Any]]] = {
    "seed-387410": scenario_steps(SEED_387410),
    # c, without credit, was offered m1, which m2 (its value) pruned: the reset ends that repeat
    "reset-ends-repeat": [LVQ, {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}}, START,
                          {"send": {"to": "q", "id": "m1", "properties": {"lvk": "A"}}},
                          {"send": {"to": "q", "id": "m2", "properties": {"lvk": "A"}}}, DUE, FIRE,
                          {"receive": "c"}, {"receive": "c"}, {"receive": "c"}],
    # m1 and m2 wait in the buffer of a consumer with credit: both copies arrive, each with its count
    "pushing": [LVQ, START, {"send_batch": {"to": "q", "ids": ["m1", "m2"]}},
                {"consumer": {"name": "c", "queue": "q"}}, DUE, FIRE, *[{"receive": "c"}] * 6,
                *[{"ack": {"consumer": "c", "id": "m1"}}] * 2, {"close": "c"}],
    # no credit left at the firing: the new iterator offers m4, m1, m2, m3 as credit comes back
    "window": [LVQ, START, {"consumer": {"name": "c", "queue": "q", "window_messages": 2}},
               {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"]}}, {"receive": "c"},
               {"ack": {"consumer": "c", "id": "m1"}}, DUE, FIRE, *[{"receive": "c"}] * 6, {"close": "c"}],
    # the repeat bug across priority levels (seed 387410): m1 (priority 4) offered without credit, pruned
    # by m2 (priority 0) of its value; m3 (priority 4) is the one given twice, m2 once
    "repeat-other-level": [LVQ, {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
                           {"send": {"to": "q", "id": "m1", "properties": {"lvk": "A"}}},
                           {"send": {"to": "q", "id": "m2", "priority": 0, "properties": {"lvk": "A"}}},
                           {"send": {"to": "q", "id": "m3", "properties": {"lvk": "B"}}},
                           {"receive_batch": {"consumer": "c", "count": 3}}, {"receive": "c"}],
    # seed 662903: a repeat on each of two levels; m3 (priority 9) comes twice, then m1
    "repeat-two-levels": [LVQ, {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
                          {"send": {"to": "q", "id": "m1", "properties": {"lvk": "A"}}},
                          {"send": {"to": "q", "id": "m2", "priority": 9, "properties": {"lvk": "B"}}},
                          {"send": {"to": "q", "id": "m3", "priority": 9, "properties": {"lvk": "B"}}},
                          {"receive_batch": {"consumer": "c", "count": 3}}, {"receive": "c"}],
    "prefetch": [LVQ, START, {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"]}},
                 {"consumer": {"name": "c", "queue": "q", "window_bytes": -1, "max_unacked": 1}},
                 {"receive": "c"}, DUE, FIRE, {"receive": "c"}, {"ack": {"consumer": "c", "id": "m1"}},
                 {"receive": "c"}, {"receive": "c"}, {"ack": {"consumer": "c", "id": "m4"}}, {"receive": "c"},
                 {"close": "c"}],
}


@pytest.fixture(scope="module")
def artemis() -> Iterator[ArtemisAdapter]:
    adapter = ArtemisAdapter()
    yield adapter
    adapter.shutdown()


@pytest.mark.rules("DELIVERY-12", "LASTVALUE-8")
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_broker_answers_as_the_bug_model(artemis: ArtemisAdapter, namespace: str, case: str) -> None:
    expected = annotate(CASES[case], BOTH, delivery_counts=True)
    outcome = run_scenario(from_data({"profile": "artemis", "steps": expected}, case), artemis,
                           namespace=namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("DELIVERY-12", "LASTVALUE-8")
def test_the_seed_387410_scenario_fails_where_m1_comes_again(artemis: ArtemisAdapter, namespace: str) -> None:
    outcome = run_scenario(load(SEED_387410), artemis, namespace=namespace)
    assert (outcome.verdict, outcome.step) == ("fail", 8), outcome.verdict_line()
