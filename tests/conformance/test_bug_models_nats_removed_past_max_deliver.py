"""The bug model nats-server-8102 (mqconform.reference_model.bugs): before nats-server 2.14.1 a message
kept past MaxDeliver that leaves the stream (delete, max_age, a limit) keeps its o.rdc entry, so
num_redelivered still counts it, until a purge or a restart with it at or below the ack floor. A
removal of a message that is not past its limit is the claimed jetstream model. No broker is needed
(the regression scenario on nats-server itself: tests/adapters/test_nats_history_findings.py; the
delete scenario and its restart follow-on replayed DEVIATION on 2.14.0, PASS on 2.14.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import annotate
from tests.conformance.bug_model_support import scenario_steps

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests/adapters/scenarios"
DELETE = SCENARIOS / "nats-delete-past-max-deliver.yaml"
MAX_AGE = SCENARIOS / "nats-max-age-clears-redelivered-past-max-deliver.yaml"
BUG = BUGS["nats-server-8102"]
CLAIMED = profile("jetstream")
WITH_BUG = BUG.enable(CLAIMED)
SHAPE = SHAPES["removed-past-max-deliver"]


def _steps(path: Path) -> list[dict[str, Any]]:
    return scenario_steps(path)


def _redelivered(steps: list[dict[str, Any]], with_bug: bool) -> list[int | None]:
    annotated = annotate(steps, WITH_BUG if with_bug else CLAIMED)
    return [next((c["num_redelivered"] for c in s["expect"].get("consumer_state", []) if c["queue"] == "q"),
                 None) for s in annotated]


def test_the_option_is_off_on_every_profile_and_the_bug_model_switches_it_on() -> None:
    assert BUG.option == "removal_keeps_redelivered"
    assert not any(options.removal_keeps_redelivered for options in PROFILES.values())
    assert WITH_BUG.removal_keeps_redelivered


def test_a_delete_or_max_age_keeps_the_count_of_a_message_past_max_deliver() -> None:
    for path in (DELETE, MAX_AGE):
        steps = _steps(path)
        assert _redelivered(steps, with_bug=False)[-2:] == [1, 0], path.name
        assert _redelivered(steps, with_bug=True)[-2:] == [1, 1], path.name


def test_a_purge_or_a_restart_at_the_floor_clears_it() -> None:
    steps = _steps(DELETE)
    assert _redelivered([*steps, {"restart": "graceful"}], with_bug=True)[-1] == 0
    assert _redelivered([*steps, {"purge": "q"}], with_bug=True)[-1] == 0


def test_removing_a_message_not_past_its_limit_is_the_claimed_model() -> None:
    steps = [{"queue": {"name": "q", "max_delivery_attempts": 2}},
             {"consumer": {"name": "c-q", "queue": "q", "window_bytes": 0}},
             {"send_batch": {"to": "q", "ids": ["m1", "m2"]}}, {"receive": "c-q"},
             {"nack": {"consumer": "c-q", "id": "m1"}}, {"receive": "c-q"},
             {"delete": {"queue": "q", "id": "m2"}}]
    assert _redelivered(steps, with_bug=True) == _redelivered(steps, with_bug=False)
    assert not SHAPE(scenario_trace(steps, "jetstream") or [])


def test_the_shape_needs_a_kept_message_leaving() -> None:
    assert SHAPE(scenario_trace(_steps(DELETE), "jetstream") or [])
    assert not SHAPE(scenario_trace(_steps(DELETE)[:-1], "jetstream") or [])
