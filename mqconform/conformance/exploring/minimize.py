"""Step-level minimisation of a shrunk counterexample.

Hypothesis shrinks the choices that generate a run, not the steps the driver executed. A composite rule
(a batch, a redelivery round, a close and reopen) is several steps, and a step whose choices feed later
draws can survive the shrinker although the failure does not need it. This pass replays the shrunk
counterexample as a scenario annotated with the claimed model's expectations, cuts it after the step
where the implementation first differs, then deletes whole steps (pairs first, then single steps)
while the shorter scenario still fails. A counterexample whose replay holds (a failure the scenario
expectations cannot show, or a flaky one) is kept as it is. A deletion that leaves a SIGKILL restart
without the advance in front of it (the store's flush interval, RESTART-4) is not tried: the model
describes a kill after that interval only, so such a scenario fails for a reason the model does not
claim.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from mqconform.adapters.contract import Adapter
from mqconform.reference_model.options import ModelOptions

from .driver import Step

#: seconds the pass may spend on one counterexample
BUDGET_S = 20.0


def _kills_follow_a_flush(steps: Sequence[Step], claimed: ModelOptions) -> bool:
    """RESTART-4: every ``restart: kill`` comes right after an advance of at least the profile's flush
    interval (the machines advance before a kill; a deletion must not separate the two)."""
    flush = claimed.restart_flush_ms
    if flush <= 0:
        return True
    for index, step in enumerate(steps):
        if step.op == "restart" and str(step.args) == "kill":
            before = steps[index - 1] if index else None
            if before is None or before.op != "advance" or int(before.args) < flush:
                return False
    return True


@attrs.frozen
class Minimized:
    """A minimised counterexample and what its replay shows at its last step (all but `steps` None
    when the replay did not fail)."""

    steps: list[Step]
    message: str | None = None
    #: the observation that differs ("result", "queue q pending_count", ...), the model's and the
    #: implementation's value
    what: str | None = None
    expected: Any = None
    actual: Any = None

    @property
    def field(self) -> str:
        """The compared field of `what` ("pending_count"; "" for an operation's result)."""
        return "" if not self.what or self.what == "result" else self.what.rsplit(" ", 1)[-1]


def _replay(steps: Sequence[Step], claimed: ModelOptions, adapter_factory: Callable[[], Adapter]) -> Any:
    """The outcome of `steps` replayed once as a scenario annotated by `claimed`, or None when they are
    not a valid run (e.g. a consumer never declared) or the profile is one the catalogue does not name."""
    from mqconform.scenario import ModelRejected, annotate, from_data, run_scenario

    raw = [{step.op: step.args} for step in steps]
    try:
        annotated = annotate(raw, claimed)
        scenario = from_data({"profile": claimed.name, "steps": annotated}, "counterexample")
    except (ModelRejected, ValueError):
        return None
    return run_scenario(scenario, adapter_factory(), namespace="mqc-minimize")


def _failure(steps: Sequence[Step], claimed: ModelOptions,
             adapter_factory: Callable[[], Adapter]) -> tuple[int, str, Any] | None:
    """(the 1-based step where the implementation first differs from the claimed model, what differs,
    the failed expectation) for `steps` replayed as a scenario, or None when it holds (or is not a
    valid run)."""
    outcome = _replay(steps, claimed, adapter_factory)
    if outcome is None or outcome.verdict != "fail" or outcome.step is None:
        return None
    return outcome.step, outcome.message, outcome.mismatch


def reproduces(steps: Sequence[Step], claimed: ModelOptions, adapter_factory: Callable[[], Adapter],
               times: int) -> bool:
    """Whether `steps`, replayed as a scenario up to `times` times, fails at least once."""
    return any(_failure(steps, claimed, adapter_factory) is not None for _ in range(times))


def holds(steps: Sequence[Step], claimed: ModelOptions, adapter_factory: Callable[[], Adapter]) -> bool:
    """Whether `steps`, replayed once as a scenario annotated by `claimed`, pass at every step (not when
    the model rejects them, nor when the replay has no verdict)."""
    outcome = _replay(steps, claimed, adapter_factory)
    return outcome is not None and outcome.verdict == "pass"


def minimize(steps: list[Step], claimed: ModelOptions, adapter_factory: Callable[[], Adapter],
             budget_s: float = BUDGET_S) -> tuple[list[Step], str | None]:
    """The shortest failing prefix of `steps`, then without every pair and single step whose deletion
    keeps it failing (cut again after the step where it now fails), with what the implementation does
    differently at its last step; (`steps`, None) when the replay does not fail (see the module
    docstring)."""
    found = shrink(steps, claimed, adapter_factory, budget_s)
    return found.steps, found.message


def shrink(steps: list[Step], claimed: ModelOptions, adapter_factory: Callable[[], Adapter],
           budget_s: float = BUDGET_S) -> Minimized:
    """:func:`minimize`, with the observation that differs at the last step (see Minimized)."""
    deadline = time.monotonic() + budget_s
    found = _failure(steps, claimed, adapter_factory)
    if found is None:
        return Minimized(steps)
    current, last = list(steps[:found[0]]), found
    for width in (2, 1):
        start = len(current) - 1 - width
        while start >= 0 and time.monotonic() < deadline:
            candidate = current[:start] + current[start + width:]
            found = (_failure(candidate, claimed, adapter_factory)
                     if _kills_follow_a_flush(candidate, claimed) else None)
            if found is not None:
                current, last = candidate[:found[0]], found
                start = min(start, len(current) - 1 - width)
            start -= 1
    mismatch = last[2]
    return Minimized(current, last[1], getattr(mismatch, "what", None), getattr(mismatch, "expected", None),
                     getattr(mismatch, "actual", None))
