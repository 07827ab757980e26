"""A registered bug's replay: does a counterexample hold on the implementation against the reference
model with that one bug (:mod:`mqconform.reference_model.bugs`)? The test by which a bug model explains a
finding (:mod:`mqconform.conformance.judging.deviations`), whatever check found it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol


class Replay(Protocol):
    """(scenario steps as ``{op: args}``, a bug model's name (or several, all switched on: two bugs
    that together make one story), the model options the finding was held to: a known bug the area
    explored on against, contract changes) -> do the steps hold on the implementation against the
    model with that bug too (:func:`holds_under` bound to an adapter)?"""

    def __call__(self, steps: Sequence[Mapping[str, Any]], model: str | Sequence[str],
                 options: Mapping[str, Any] | None = None) -> bool: ...


def holds_under(steps: Sequence[Mapping[str, Any]], model: str | Sequence[str], claimed: Any,
                adapter_factory: Callable[[], Any], options: Mapping[str, Any] | None = None,
                why: list[str] | None = None) -> bool:
    """Do `steps` (``{op: args}``; an ``expect`` is ignored), replayed on the adapter as a scenario
    annotated with the expectations of the model `claimed` (ModelOptions: the claimed profile, held to
    the adapter's contract) with bug model `model` (or every bug model of a sequence), pass at every
    step under every observation? The minimiser's test of a counterexample
    (mqconform.conformance.exploring.minimize), against the bug model instead of the claimed one, each
    receive also compared on its message's delivery count. Steps the bug model rejects, and a replay
    with no answer, do not; nor do steps on which the bug model expects exactly what the model without
    it expects (the bug is not what the implementation showed there, whatever a replay answers: no
    replay is made), and with several, steps on which any one of them changes nothing beside the
    others. `options`: model options the finding was held to besides (a known bug the area explored on
    against), kept beside the bug models' own. `why`: where a replay was made and did not hold, its
    verdict line is appended (the judge keeps it)."""
    from mqconform.reference_model.bugs import bug_model
    from mqconform.scenario import ModelRejected, annotate, from_data, run_scenario

    held = claimed.evolve(**options) if options else claimed
    bugs = [bug_model(name) for name in ([model] if isinstance(model, str) else model)]
    buggy = held
    for bug in bugs:
        buggy = bug.enable(buggy)
    raw = [{op: args} for step in steps for op, args in step.items() if op != "expect"]
    if not raw or not bugs:
        return False
    try:
        expected = annotate(raw, buggy, delivery_counts=True)
        # the model without each bug: `options` may hold it already (the area explored past it), and
        # an invariant check (ring.bound) then fails on what both give
        if any(expected == _plain_annotation(raw, buggy.evolve(**{bug.option: False})) for bug in bugs):
            return False  # a bug changes nothing here: it cannot be what the implementation showed
        scenario = from_data({"profile": buggy.name, "steps": expected}, "bug-model")
    except (ModelRejected, ValueError):
        return False
    outcome = run_scenario(scenario, adapter_factory(), namespace="mqc-bug-model")
    if outcome.verdict != "pass" and why is not None:
        why.append(outcome.verdict_line())
    return outcome.verdict == "pass"


def _plain_annotation(raw: Sequence[Mapping[str, Any]], held: Any) -> list[dict[str, Any]] | None:
    """`raw` annotated by the model the finding was held to, without the bug (None: it rejects them)."""
    from mqconform.scenario import ModelRejected, annotate

    try:
        return annotate(raw, held, delivery_counts=True)
    except (ModelRejected, ValueError):
        return None
