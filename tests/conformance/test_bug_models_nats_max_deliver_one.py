"""The bug model nats-server-6877 (mqconform.reference_model.bugs): before nats-server 2.11.4 a consumer
with MaxDeliver 1 reports the messages it gave back and will never redeliver in num_redelivered
(len(o.rdc)); from 2.11.4 its info reports 0. Any other delivery limit is the claimed jetstream model.
No broker is needed (the regression scenario on nats-server itself:
tests/adapters/test_nats_history_findings.py; the ack variant below was replayed on 2.11.3,
DEVIATION, and 2.11.4, PASS)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import annotate
from tests.conformance.bug_model_support import scenario_steps

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests/adapters/scenarios/nats-max-deliver-1-reports-no-redelivered.yaml"
BUG = BUGS["nats-server-6877"]
CLAIMED = profile("jetstream")
WITH_BUG = BUG.enable(CLAIMED)
SHAPE = SHAPES["max-deliver-one-given-back"]


def _steps(limit: int = 1) -> list[dict[str, Any]]:
    steps = scenario_steps(SCENARIO)
    steps[0] = {"queue": {**steps[0]["queue"], "max_delivery_attempts": limit}}
    return steps


def _redelivered(steps: list[dict[str, Any]], with_bug: bool) -> list[int | None]:
    """q's num_redelivered after each step, as the claimed model or the model with the bug says."""
    annotated = annotate(steps, WITH_BUG if with_bug else CLAIMED)
    return [next((c["num_redelivered"] for c in s["expect"].get("consumer_state", []) if c["queue"] == "q"),
                 None) for s in annotated]


def test_the_option_is_off_on_every_profile_and_the_bug_model_switches_it_on() -> None:
    assert BUG.option == "max_deliver_one_reports_redelivered"
    assert not any(options.max_deliver_one_reports_redelivered for options in PROFILES.values())
    assert WITH_BUG.max_deliver_one_reports_redelivered


def test_the_bug_model_counts_the_message_given_back_under_max_deliver_1() -> None:
    steps = _steps()
    assert _redelivered(steps, with_bug=False)[-1] == 0
    assert _redelivered(steps, with_bug=True)[-1] == 1
    assert _redelivered(steps, with_bug=True)[:-1] == _redelivered(steps, with_bug=False)[:-1]
    # m1 stays stored past its limit: an ack of m2 leaves its count (as replayed on 2.11.3)
    acked = [*steps, {"ack": {"consumer": "c-q", "id": "m2"}}]
    assert _redelivered(acked, with_bug=True)[-1] == 1


def test_another_delivery_limit_is_the_claimed_model() -> None:
    """With MaxDeliver 2 the message is redelivered and counted on both (1); the bug changes nothing."""
    steps = [*_steps(2), {"nack": {"consumer": "c-q", "id": "m2"}}, {"receive": "c-q"}]
    assert _redelivered(steps, with_bug=True) == _redelivered(steps, with_bug=False)
    assert max(n or 0 for n in _redelivered(steps, with_bug=True)) >= 1


def test_the_shape_needs_a_limit_of_1_and_a_give_back() -> None:
    assert SHAPE(scenario_trace(_steps(), "jetstream") or [])
    no_give_back = [s for s in _steps() if "nack" not in s]
    assert not SHAPE(scenario_trace(no_give_back, "jetstream") or [])
    assert not SHAPE(scenario_trace(_steps(2), "jetstream") or [])
    stale = ROOT / "tests/adapters/scenarios/nats-stale-pin-pull-reports-no-redelivered.yaml"
    assert not SHAPE(scenario_trace(yaml.safe_load(stale.read_text())["steps"], "jetstream") or [])
