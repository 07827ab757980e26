"""The bug model nats-server-7457 (mqconform.reference_model.bugs): before nats-server 2.11.11 and 2.12.2
a no_wait pull request that a paused consumer queues is served when the pause ends, so a receive while
paused gets the message the consumer gives once unpaused. Unpaused, the model with the bug is the
claimed jetstream model. No broker is needed (the regression scenario on nats-server itself:
tests/adapters/test_nats_history_findings.py; replayed DEVIATION on 2.11.5 and 2.12.1, PASS on 2.11.11,
2.12.2 and 2.15.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import annotate
from tests.conformance.bug_model_support import scenario_steps

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests/adapters/scenarios/nats-paused-pull-waits-for-resume.yaml"
BUG = BUGS["nats-server-7457"]
CLAIMED = profile("jetstream")
WITH_BUG = BUG.enable(CLAIMED)
SHAPE = SHAPES["paused-pull-served"]


def _results(steps: list[dict[str, Any]], with_bug: bool) -> list[Any]:
    return [step["expect"].get("result") for step in annotate(steps, WITH_BUG if with_bug else CLAIMED)
            if "receive" in step]


def test_the_option_is_off_on_every_profile_and_the_bug_model_switches_it_on() -> None:
    assert BUG.option == "paused_pull_waits_for_resume"
    assert not any(options.paused_pull_waits_for_resume for options in PROFILES.values())
    assert WITH_BUG.paused_pull_waits_for_resume


def test_a_pull_while_paused_is_served_under_the_bug() -> None:
    steps = scenario_steps(SCENARIO)
    assert _results(steps, with_bug=False) == [None]
    assert _results(steps, with_bug=True) == ["m1"]


def test_a_pull_after_the_pause_or_with_nothing_pending_is_the_claimed_model() -> None:
    after = [*scenario_steps(SCENARIO)[:-1], {"advance": 700}, {"receive": "c"}, {"receive": "c"}]
    assert _results(after, with_bug=True) == _results(after, with_bug=False) == ["m1", None]
    empty = [step for step in scenario_steps(SCENARIO) if "send" not in step]
    assert _results(empty, with_bug=True) == [None]


def test_the_shape_needs_a_receive_before_the_pause_ends() -> None:
    steps = scenario_steps(SCENARIO)
    assert SHAPE(scenario_trace(steps, "jetstream") or [])
    later = [*steps[:-1], {"advance": 700}, {"receive": "c"}]
    assert not SHAPE(scenario_trace(later, "jetstream") or [])
    batch = [*steps[:-1], {"receive_batch": {"consumer": "c", "count": 2}}]
    assert SHAPE(scenario_trace(batch, "jetstream") or [])  # the matrix's story: m1.. at the end
    assert annotate(batch, CLAIMED)[-1]["expect"]["result"] == [None]
    assert annotate(batch, WITH_BUG)[-1]["expect"]["result"] == ["m1", None]
