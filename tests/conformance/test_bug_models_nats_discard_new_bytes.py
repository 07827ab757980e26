"""The bug model nats-server-7608 (mqconform.reference_model.bugs): before nats-server 2.14.0 a stream
with discard new and max_bytes refuses a message that brings it exactly to max_bytes (storeRawMsg's
>=). Below the bound, past it, and under discard old the model with the bug is the claimed jetstream
model. No broker is needed (the regression scenario on nats-server itself:
tests/adapters/test_nats_history_findings.py; replayed DEVIATION on 2.10.25, 2.11.0, 2.12.8 with m3
then accepted as the bug model says, PASS on 2.14.0 and 2.15.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import annotate

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests/adapters/scenarios/nats-discard-new-accepts-up-to-max-bytes.yaml"
BUG = BUGS["nats-server-7608"]
CLAIMED = profile("jetstream")
WITH_BUG = BUG.enable(CLAIMED)
SHAPE = SHAPES["discard-new-send-under-max-bytes"]


def _results(steps: list[dict[str, Any]], with_bug: bool) -> list[Any]:
    return [s["expect"].get("result") for s in annotate(steps, WITH_BUG if with_bug else CLAIMED)]


def _queue(overflow: str = "discard-new", max_bytes: int = 200) -> dict[str, Any]:
    return {"queue": {"name": "q", "overflow": overflow, "max_length_bytes": max_bytes}}


def _sends(*sizes: int) -> list[dict[str, Any]]:
    return [{"send": {"to": "q", "id": f"m{i}", "size": size}} for i, size in enumerate(sizes, 1)]


def test_the_option_is_off_on_every_profile_and_the_bug_model_switches_it_on() -> None:
    assert BUG.option == "discard_new_refuses_at_max_bytes"
    assert not any(options.discard_new_refuses_at_max_bytes for options in PROFILES.values())
    assert WITH_BUG.discard_new_refuses_at_max_bytes


def test_the_bug_model_refuses_the_send_that_reaches_max_bytes() -> None:
    steps = [{k: v for k, v in s.items() if k != "expect"}
             for s in yaml.safe_load(SCENARIO.read_text())["steps"]]
    assert _results(steps, with_bug=False)[1:] == ["accepted", "accepted", "failed"]
    # m2 refused at the bound; m3 (size 1) then fits below it
    assert _results(steps, with_bug=True)[1:] == ["accepted", "failed", "accepted"]


def test_below_or_past_the_bound_and_discard_old_are_the_claimed_model() -> None:
    below = [_queue(), *_sends(100, 99, 2)]
    assert _results(below, with_bug=True) == _results(below, with_bug=False)
    assert _results(below, with_bug=True)[1:] == ["accepted", "accepted", "failed"]
    old = [_queue("discard-old"), *_sends(100, 100, 100)]
    assert _results(old, with_bug=True) == _results(old, with_bug=False)


def test_the_shape_needs_a_byte_bound_that_refuses_new_messages() -> None:
    assert SHAPE(scenario_trace([_queue(), *_sends(100, 100)], "jetstream") or [])
    assert not SHAPE(scenario_trace([_queue("discard-old"), *_sends(100, 100)], "jetstream") or [])
    assert not SHAPE(scenario_trace([{"queue": {"name": "q", "overflow": "discard-new"}}, *_sends(100)],
                                    "jetstream") or [])
