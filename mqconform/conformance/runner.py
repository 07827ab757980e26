"""Run the machines against one adapter and turn what happened into per-rule outcomes.

A machine runs until Hypothesis has explored its budget. When a check fails, the shrunk
counterexample is kept, that check is disabled and the machine runs again, so the other checks
keep exploring (up to MAX_RERUNS). An `info` answer stops the machine: its rules are *unknown*.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
import yaml
from hypothesis import Verbosity, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test

from mqconform.adapters.contract import EXTRA_CAPABILITIES, Adapter
from mqconform.history import RunDirectory
from mqconform.reference_model.options import ModelOptions
from mqconform.text import first_line

from .base import ConformanceMachine, RunContext
from .driver import Inconclusive, Step, Violation

MAX_RERUNS = 8
SEVERITY = {"fail": 3, "unknown": 2, "pass": 1, "not_applicable": 0}


@attrs.define
class Finding:
    """A failed check with its shrunk counterexample."""

    machine: str
    check: str
    rules: tuple[str, ...]
    message: str
    steps: list[Step]
    seconds: float
    scenario_path: str | None = None
    program_path: str | None = None


@attrs.define
class MachineResult:
    machine: str
    findings: list[Finding] = attrs.field(factory=list)
    checked: set[str] = attrs.field(factory=set)
    unknown: str | None = None
    examples: int = 0
    steps: int = 0
    seconds: float = 0.0

    def rule_outcomes(self, table: dict[str, tuple[str, ...]]) -> dict[str, str]:
        """Per rule: fail if a check naming it failed, else pass/unknown if one ran, else n/a."""
        failed = {rule for finding in self.findings for rule in finding.rules}
        outcomes: dict[str, str] = {}
        for check, rules in table.items():
            ran = check in self.checked
            check_state = ("unknown" if self.unknown else "pass") if ran else "not_applicable"
            for rule in rules:
                state = "fail" if rule in failed else check_state
                previous = outcomes.get(rule)
                if previous is None or SEVERITY[state] > SEVERITY[previous]:
                    outcomes[rule] = state
        return outcomes


def machine_class(base: type[ConformanceMachine], context: RunContext) -> type[ConformanceMachine]:
    """A subclass of `base` bound to one run context (Hypothesis instantiates it per example)."""
    return type(base.__name__, (base,), {"context": context, "__module__": base.__module__})


def run_machine(base: type[ConformanceMachine], adapter_factory: Callable[[], Adapter],
                claimed: ModelOptions, hyp_settings: settings, run: RunDirectory | None = None,
                max_reruns: int = MAX_RERUNS) -> MachineResult:
    """Explore one machine against the adapter; see the module docstring."""
    result = MachineResult(base.area)
    probe = adapter_factory()
    caps = (frozenset(claimed.features) | EXTRA_CAPABILITIES) & frozenset(probe.capabilities)
    if not base.applicable(caps):
        return result  # every rule of the machine is not applicable
    history = run.history(base.area) if run is not None else None
    disabled: set[str] = set()
    quiet = settings(hyp_settings, verbosity=Verbosity.quiet)
    started = time.perf_counter()
    try:
        for _ in range(max_reruns + 1):
            context = RunContext(adapter_factory, claimed, history, frozenset(disabled))
            context.checked = result.checked
            cls = machine_class(base, context)
            t0 = time.perf_counter()
            try:
                run_state_machine_as_test(cls, settings=quiet)
            except Violation as violation:
                steps = list(context.current.d.steps) if context.current is not None else []
                result.findings.append(Finding(base.area, violation.check, violation.rules, violation.message,
                                               steps, time.perf_counter() - t0))
                disabled.add(violation.check)
                continue
            except Inconclusive as exc:
                result.unknown = str(exc)
            except Flaky as exc:  # the implementation did not answer the same way twice
                result.unknown = f"the implementation behaved non-deterministically: {first_line(exc)}"
            except Exception as exc:  # an adapter bug is never a conformance failure, nor a pass
                result.unknown = f"the adapter raised {type(exc).__name__}: {first_line(exc)}"
            finally:
                result.examples += context.examples
                _close_quietly(context)
            break
    finally:
        if history is not None:
            result.steps = history.index
            history.close()
    result.seconds = time.perf_counter() - started
    return result


def _close_quietly(context: RunContext) -> None:
    machine = context.current
    if machine is not None:
        with contextlib.suppress(Exception):  # best effort cleanup after an aborted example
            machine.adapter.close()


def write_counterexample(run: RunDirectory, finding: Finding, adapter_name: str,
                         adapter_options: dict[str, Any], profile: str, index: int) -> None:
    """Write the finding as a self-checking scenario file and as a plain pytest test.

    Each scenario step expects what the claimed profile's model says (its result, and the counters
    and pending order of every queue after it), so `mqconform scenario FILE --adapter X` exits 1 at
    the step where the implementation diverges.
    """
    from mqconform.reference_model.profiles import profile as load_profile
    from mqconform.scenario import ModelRejected, annotate

    stem = f"{finding.machine}-{index}-{finding.check.replace('.', '_')}"
    raw = [s.as_scenario() for s in finding.steps]
    try:
        steps = annotate(raw, load_profile(profile))
    except ModelRejected:
        steps = raw  # cannot happen for steps the machine ran on the same model; keep the raw form
    scenario = {"profile": profile, "steps": steps}
    header = (f"# Counterexample: {finding.check} ({', '.join(finding.rules)})\n"
              f"# {' '.join(finding.message.split())}\n"
              f"# Replay: mqconform scenario {stem}.yaml --adapter {adapter_name}\n")
    scenario_path = run.path / "counterexamples" / f"{stem}.yaml"
    scenario_path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(scenario, sort_keys=False, default_flow_style=None, width=110)
    scenario_path.write_text(header + text)
    program = (
        f'"""Counterexample found by mqconform against {adapter_name}: {finding.check} '
        f'({", ".join(finding.rules)}).\n\n{finding.message}\n"""\n\n'
        "from mqconform.conformance.replay import replay\n\n"
        f"STEPS = {raw!r}\n\n\n"
        "def test_counterexample() -> None:\n"
        f"    replay(adapter={adapter_name!r}, adapter_options={adapter_options!r}, "
        f"profile={profile!r}, steps=STEPS)\n"
    )
    program_path = run.path / "counterexamples" / f"test_{stem.replace('-', '_')}.py"
    program_path.write_text(program)
    finding.scenario_path = str(scenario_path.relative_to(run.path))
    finding.program_path = str(program_path.relative_to(run.path))


def database(run_path: Path) -> DirectoryBasedExampleDatabase:
    return DirectoryBasedExampleDatabase(str(run_path / ".hypothesis"))


def merge_outcomes(results: Iterable[MachineResult], profile: str | None = None) -> dict[str, str]:
    """Per rule, the worst outcome over the machines. With `profile`, a rule that does not apply to
    that profile (spec/ says so) cannot *pass*: a check evidences a rule only for the profiles the rule
    speaks about. A failure is never hidden: a finding fails the rules of its check that apply to the
    profile, and all of its rules when none applies."""
    from mqconform.spec import load_catalogue

    from .rules import rules_for

    applies = None
    if profile is not None:
        catalogue = load_catalogue()
        applies = {rule.id for rule in catalogue if rule.applies_to(profile)}
    merged: dict[str, str] = {}
    for res in results:
        failing: set[str] = set()
        for finding in res.findings:
            failing.update([r for r in finding.rules if applies is None or r in applies] or finding.rules)
        for rule, state in res.rule_outcomes(rules_for(res.machine)).items():
            if applies is not None and rule not in applies and (state != "fail" or rule not in failing):
                state = "not_applicable"
            if rule not in merged or SEVERITY[state] > SEVERITY[merged[rule]]:
                merged[rule] = state
    return merged
