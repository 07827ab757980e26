"""Replay scenario steps (a counterexample) against an adapter, checked by the scenario runner.

The steps are first annotated with what the claimed profile's model says after each of them
(:func:`mqconform.scenario.annotate`), then run through the one expectation-checking
implementation (:func:`mqconform.scenario.run_scenario`), so a counterexample fails here, in its
scenario file and in its pytest program at the same step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mqconform.adapters.contract import Adapter, model_for
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.adapters.registry import load_adapter
from mqconform.operations import call_operation
from mqconform.reference_model.options import ModelOptions
from mqconform.reference_model.profiles import profile as load_profile
from mqconform.scenario import COMPARED, annotate, from_data, run_scenario
from mqconform.scenario.annotate import ModelRejected

from .driver import Inconclusive, Violation

__all__ = ["COMPARED", "replay"]


def replay(*, adapter: str | Adapter, profile: str, steps: Sequence[Mapping[str, Any]],
           adapter_options: Mapping[str, Any] | None = None,
           on_step: Callable[[int, str], None] | None = None) -> None:
    """Run `steps` on `adapter`; raise Violation (an AssertionError) at the first difference from the
    model of `profile`, Inconclusive when the adapter gives no answer."""
    impl = adapter if not isinstance(adapter, str) else load_adapter(adapter, **(adapter_options or {}))
    claimed = model_for(load_profile(profile), frozenset(impl.capabilities))
    try:
        annotated = annotate(steps, claimed)
    except ModelRejected:
        if not steps or not _refused_last(steps, claimed):
            raise
        # SCHED-13: the last step is one the claimed model refuses as unsupported (a counterexample
        # of send.no_schedule): the steps before it hold, and the implementation must refuse it too
        _check(run_scenario(from_data({"profile": profile, "steps": annotate(steps[:-1], claimed)},
                                      "replay"), impl, namespace="mqc-replay", on_step=on_step))
        _refuse_last(impl, steps)
        return
    scenario = from_data({"profile": profile, "steps": annotated}, "replay")
    _check(run_scenario(scenario, impl, namespace="mqc-replay", on_step=on_step))


def _check(outcome: Any) -> None:
    if outcome.verdict == "unknown":
        raise Inconclusive(outcome.message)
    if outcome.verdict not in ("pass", "not_applicable"):  # an operation refused as unsupported: not shown
        raise Violation(f"step {outcome.step} {outcome.op}", (), outcome.message)


def _operation(step: Mapping[str, Any]) -> tuple[str, Any]:
    return next((k, v) for k, v in step.items() if k != "expect")


def _refused_last(steps: Sequence[Mapping[str, Any]], claimed: ModelOptions) -> bool:
    """The steps before the last annotate, and the claimed model answers the last `unsupported`."""
    model = ReferenceAdapter(options=claimed)
    model.open("mqc-replay-model")
    for step in steps[:-1]:
        if not call_operation(model, *_operation(step)).is_ok:
            return False
    answer = call_operation(model, *_operation(steps[-1]))
    return answer.type == "fail" and (answer.error or "").startswith("unsupported")


def _refuse_last(impl: Adapter, steps: Sequence[Mapping[str, Any]]) -> None:
    """Run the steps on `impl` again; the last must be refused (`fail`), as the claimed model does."""
    impl.open("mqc-replay")
    try:
        for step in steps[:-1]:
            call_operation(impl, *_operation(step))
        op, args = _operation(steps[-1])
        answer = call_operation(impl, op, args)
    finally:
        impl.close()
    if answer.type == "info":
        raise Inconclusive(f"{op}: {answer.error}")
    if answer.type != "fail":
        raise Violation(f"step {len(steps)} {op}", (), f"{op} {args!r}: the claimed model refuses it "
                        f"(unsupported), the implementation answered {answer.value!r}")
