"""The bug model nats-server-7795 (mqconform.reference_model.bugs): before nats-server 2.12.5 an overflow
pull request naming both min_pending and min_ack_pending is served only when both thresholds are
reached (consumer.go nextWaiting's inverted check). With one threshold, or both reached, the model
with the bug is the claimed jetstream model. No broker is needed (the regression scenario on
nats-server itself: tests/adapters/test_nats_history_findings.py; replayed DEVIATION on 2.11.0 and
2.12.4, PASS on 2.12.5 and 2.15.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import annotate
from tests.conformance.bug_model_support import scenario_steps

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests/adapters/scenarios/nats-overflow-either-threshold-serves.yaml"
BUG = BUGS["nats-server-7795"]
CLAIMED = profile("jetstream")
WITH_BUG = BUG.enable(CLAIMED)
SHAPE = SHAPES["overflow-both-thresholds"]


def _steps(**last: int) -> list[dict[str, Any]]:
    steps = scenario_steps(SCENARIO)
    if last:
        steps[-1] = {"fetch": {"consumer": "c", "batch": 1, **last}}
    return steps


def _last(steps: list[dict[str, Any]], with_bug: bool) -> Any:
    return annotate(steps, WITH_BUG if with_bug else CLAIMED)[-1]["expect"]["result"]


def test_the_option_is_off_on_every_profile_and_the_bug_model_switches_it_on() -> None:
    assert BUG.option == "overflow_needs_every_threshold"
    assert not any(options.overflow_needs_every_threshold for options in PROFILES.values())
    assert WITH_BUG.overflow_needs_every_threshold


def test_both_thresholds_must_hold_under_the_bug() -> None:
    assert _last(_steps(), with_bug=False) == ["m2"]
    assert _last(_steps(), with_bug=True) == []
    # both reached (2 pending with m2 counted, 1 ack pending): served on both models
    assert _last(_steps(min_pending=2, min_ack_pending=1), with_bug=True) == ["m2"]


def test_one_threshold_is_the_claimed_model() -> None:
    for last in ({"min_pending": 9}, {"min_ack_pending": 1}, {"min_pending": 2}, {"min_ack_pending": 2}):
        assert _last(_steps(**last), with_bug=True) == _last(_steps(**last), with_bug=False), last


def test_the_shape_needs_a_request_with_both_thresholds() -> None:
    assert SHAPE(scenario_trace(_steps(), "jetstream") or [])
    assert not SHAPE(scenario_trace(_steps(min_ack_pending=1), "jetstream") or [])
