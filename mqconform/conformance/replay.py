"""Replay scenario steps (a counterexample) against an adapter, checked by the scenario runner.

The steps are first annotated with what the claimed profile's model says after each of them
(:func:`mqconform.scenario.annotate`), then run through the one expectation-checking
implementation (:func:`mqconform.scenario.run_scenario`), so a counterexample fails here, in its
scenario file and in its pytest program at the same step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mqconform.adapters.contract import Adapter
from mqconform.adapters.registry import load_adapter
from mqconform.reference_model.profiles import profile as load_profile
from mqconform.scenario import COMPARED, annotate, from_data, run_scenario

from .driver import Inconclusive, Violation

__all__ = ["COMPARED", "replay"]


def replay(*, adapter: str | Adapter, profile: str, steps: Sequence[Mapping[str, Any]],
           adapter_options: Mapping[str, Any] | None = None,
           on_step: Callable[[int, str], None] | None = None) -> None:
    """Run `steps` on `adapter`; raise Violation (an AssertionError) at the first difference from the
    model of `profile`, Inconclusive when the adapter gives no answer."""
    impl = adapter if not isinstance(adapter, str) else load_adapter(adapter, **(adapter_options or {}))
    claimed = load_profile(profile)
    scenario = from_data({"profile": profile, "steps": annotate(steps, claimed)}, "replay")
    outcome = run_scenario(scenario, impl, namespace="mqc-replay", on_step=on_step)
    if outcome.verdict == "unknown":
        raise Inconclusive(outcome.message)
    if outcome.verdict != "pass":
        raise Violation(f"step {outcome.step} {outcome.op}", (), outcome.message)
