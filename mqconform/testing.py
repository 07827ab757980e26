"""A checker an outside team calls from its own tests: ``check_adapter(factory)``.

As ``trio.testing.check_two_way_stream`` is for streams, :func:`check_adapter` runs the suite's
conformance machines against an implementation behind the adapter contract (docs/contract.md) and
returns a :class:`CheckReport` when it conforms to the profile it claims, or raises
``AssertionError`` whose message holds each shrunk counterexample (as a scenario file) and the
command that replays it. An area that could not reach a verdict (the adapter raised, answered
``info``, or behaved non-deterministically) also raises: an inconclusive check is never a pass.

    from mqconform.testing import check_adapter

    def test_my_queue_conforms():
        check_adapter(MyAdapter, areas=["delivery", "ring"], max_examples=25)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from mqconform.adapters.contract import Adapter
from mqconform.conformance.exploring.counterexamples import scenario_text
from mqconform.conformance.exploring.runner import Finding, MachineResult
from mqconform.conformance.plan import RunPlan
from mqconform.conformance.run import Run

__all__ = ["CheckReport", "check_adapter"]


@attrs.frozen
class CheckReport:
    """What a conforming run evidenced: per area, the examples run and the checks that ran; the
    areas that did not apply (with why)."""

    profile: str
    examples: dict[str, int]
    checks: dict[str, frozenset[str]]
    not_applicable: dict[str, str]


def check_adapter(factory: Callable[[], Adapter], *, profile: str | None = None,
                  areas: Iterable[str] | None = None, settings: str = "dev",
                  max_examples: int | None = None, seed: int | None = 0) -> CheckReport:
    """Run the conformance machines of `areas` (default: all) against ``factory()``.

    `profile` defaults to the one the adapter claims (its ``profile`` attribute); `settings` is a
    suite settings profile (dev, ci, thorough), `max_examples` overrides its example budget, `seed`
    fixes Hypothesis' draws (None: a fresh seed each call). One adapter instance serves every example,
    as the contract says. Raises ValueError for an unknown area or profile."""
    plan = RunPlan.build("", profile=profile, settings_name=settings,
                         areas=list(areas) if areas is not None else None, max_examples=max_examples,
                         seed=seed, draw_seed=False)
    adapter = factory()
    plan = attrs.evolve(plan, adapter=f"{type(adapter).__module__}:{type(adapter).__qualname__}")
    # one adapter instance serves every example: the run takes it, unprobed, and shuts it down
    with Run(plan, lambda: adapter, probe=False, say=lambda line: None) as run:
        run.open()
        results = [event.result for event in run.areas()]
    claimed = run.claimed
    assert claimed is not None
    problems = [_describe(result, claimed.name, adapter) for result in results
                if result.findings or result.unknown]
    if problems:
        raise AssertionError(f"{type(adapter).__name__} does not conform to profile {claimed.name}:\n\n"
                             + "\n\n".join(problems))
    return CheckReport(claimed.name,
                       examples={r.machine: r.examples for r in results if r.needs is None},
                       checks={r.machine: frozenset(r.checked) for r in results if r.needs is None},
                       not_applicable={r.machine: r.needs.reason() for r in results if r.needs is not None})


def _describe(result: MachineResult, profile: str, adapter: Any) -> str:
    parts = [_finding_text(finding, profile, adapter) for finding in result.findings]
    if result.unknown:
        parts.append(f"[{result.machine}] inconclusive: {result.unknown}")
    return "\n\n".join(parts)


def _finding_text(finding: Finding, profile: str, adapter: Any) -> str:
    """One counterexample: the failed check and its rules, the message, the steps as a scenario file
    and the command that replays it."""
    scenario = scenario_text(finding, profile)
    target = f"{type(adapter).__module__}:{type(adapter).__qualname__}"
    return (f"[{finding.machine}] {finding.check} ({', '.join(finding.rules)}): "
            f"{' '.join(finding.message.split())}\n"
            f"counterexample ({len(finding.steps)} steps; save as counterexample.yaml):\n{scenario}"
            f"replay: mqconform scenario counterexample.yaml --adapter {target} (with the factory's options"
            " as -o key=value)")
