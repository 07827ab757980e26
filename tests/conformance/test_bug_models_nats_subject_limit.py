"""The bug model nats-server-3836d96 (mqconform.reference_model.bugs): on nats-server 2.14.0 and 2.14.1
a first max_msgs_per_subject (from unset, -1) set by a stream update trims nothing; a later store on
the subject trims it to the limit, and so does a restart (newFileStore). A lower limit after a set one
trims as the claimed jetstream model does. No broker is needed (the regression scenario on nats-server
itself: tests/adapters/test_nats_history_findings.py; the send and restart follow-ons below were
replayed DEVIATION on 2.14.0 and 2.14.1, PASS on 2.14.2 and 2.15.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import annotate
from tests.conformance.bug_model_support import scenario_steps

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests/adapters/scenarios/nats-first-subject-limit-trims.yaml"
BUG = BUGS["nats-server-3836d96"]
CLAIMED = profile("jetstream")
WITH_BUG = BUG.enable(CLAIMED)
SHAPE = SHAPES["first-subject-limit-set"]


def _steps() -> list[dict[str, Any]]:
    return scenario_steps(SCENARIO)


def _counts(steps: list[dict[str, Any]], with_bug: bool) -> list[int | None]:
    annotated = annotate(steps, WITH_BUG if with_bug else CLAIMED)
    return [next((q["message_count"] for q in s["expect"].get("queue", []) if q["name"] == "q"), None)
            for s in annotated]


def test_the_option_is_off_on_every_profile_and_the_bug_model_switches_it_on() -> None:
    assert BUG.option == "first_subject_limit_not_enforced"
    assert not any(options.first_subject_limit_not_enforced for options in PROFILES.values())
    assert WITH_BUG.first_subject_limit_not_enforced


def test_a_first_limit_trims_nothing_until_a_send_or_a_restart() -> None:
    assert _counts(_steps(), with_bug=False)[-1] == 1
    assert _counts(_steps(), with_bug=True)[-1] == 3
    assert _counts([*_steps(), {"send": {"to": "q", "id": "m4"}}], with_bug=True)[-1] == 1
    assert _counts([*_steps(), {"restart": "graceful"}], with_bug=True)[-1] == 1


def test_a_lower_limit_after_a_set_one_is_the_claimed_model() -> None:
    steps = [{"queue": {"name": "q", "max_per_subject": 3}},
             {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"]}},
             {"set_subject_limit": {"queue": "q", "limit": 1}}]
    assert _counts(steps, with_bug=True) == _counts(steps, with_bug=False)
    assert _counts(steps, with_bug=True)[-1] == 1
    assert not SHAPE(scenario_trace(steps, "jetstream") or [])


def test_the_shape_needs_a_first_limit() -> None:
    assert SHAPE(scenario_trace(_steps(), "jetstream") or [])
    assert not SHAPE(scenario_trace(_steps()[:2], "jetstream") or [])
