"""Run the machines against one adapter and turn what happened into per-rule outcomes.

A machine runs until Hypothesis has explored its budget or a check fails. Then the shrunk
counterexample is minimised step by step (mqconform.conformance.exploring.minimize) and kept, that check is
disabled (or, for a registered bug, the model takes the bug on) and the machine runs again on the
examples its budget has left, drawn from another seed, so the other checks keep exploring (up to
MAX_RERUNS): the budget is the area's, not each exploration's. An `info` answer stops the machine:
its rules are *unknown*. The runner knows nothing of registered known deviations: exploration goes
on after every finding, and the verdict (mqconform.conformance.judging.verdict) decides afterwards
which findings a registered deviation explains.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
from hypothesis import Verbosity, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test

from mqconform.adapters.contract import EXTRA_CAPABILITIES, Adapter, contract_changes, model_for
from mqconform.history import RunDirectory
from mqconform.progress import AreaProgress
from mqconform.reference_model.bugs.model import BugModel
from mqconform.reference_model.options import ModelOptions
from mqconform.text import first_line

from .base import ConformanceMachine, RunContext
from .driver import Inconclusive, Step, Violation
from .minimize import Minimized, holds, reproduces, shrink
from .shards import WHOLE, Part, derived_seed
from .timing import TimeLedger

MAX_RERUNS = 8
#: how often an exploration that Hypothesis stopped for inconsistent data generation, with no violation
#: seen, is started again from another seed on the examples its budget has left (each restart takes
#: one of MAX_RERUNS); after that the area is *unknown*
GENERATION_RESTARTS = 2
#: how often a counterexample whose check compared one value is replayed before it is reported; one
#: that never fails again is *flaky* (its rules unknown, with the counterexample), never pass or fail
FLAKY_REPLAYS = 3
#: how often a counterexample found against a held known bug's model is replayed against the model
#: without it: held every time, the finding is *not shown* (no verdict); held some times, flaky
UNSHOWN_REPLAYS = 2
#: seconds Hypothesis may shrink one failure on a real-time adapter (each shrink step sleeps on the
#: broker's clock, so an unbounded shrink has no bound on the run's length); `--shrink-seconds` sets it
REAL_TIME_SHRINK_S = 90.0
#: a rule's outcome over several checks and machines is the worst of theirs
SEVERITY = {"fail": 4, "deviation": 3, "unknown": 2, "pass": 1, "not_applicable": 0}


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
    #: the counterexample did not fail again when replayed (FLAKY_REPLAYS times): no verdict
    flaky: bool = False
    #: the area explored on against a held known bug's model, which expects the bug here, and the
    #: implementation did what the model without it expects on every replay (UNSHOWN_REPLAYS): the
    #: bug did not show; no verdict on any rule (the broker followed the specification there)
    unshown: bool = False
    #: what the failing check compared, when it compared one value (see driver.Violation)
    field: str = ""
    expected: Any = None
    actual: Any = None
    #: (field, model's value, implementation's value) that the minimised counterexample's replay shows
    #: at its last step (it may end at another observation than the violation's); None without one
    shown: tuple[str, Any, Any] | None = None
    #: shrinking stopped at its time budget: the counterexample is the smallest found until then
    shrink_cut: bool = False
    #: model options the adapter was held to in place of its profile's (adapters.contract.model_for)
    options: dict[str, Any] = attrs.field(factory=dict)
    #: the timer margin on a real clock the machine compared under (ClockLead.limit_ms), if any: the
    #: counterexample's scenario sets it, so a replay on a loaded machine says UNKNOWN, not FAIL
    clock_lead_limit_ms: float | None = None


@attrs.frozen
class NotRun:
    """Why a machine did not run: each capability it needs that the run lacks, split into those the
    claimed profile does not have (the area is not in the profile) and those the profile has but the
    adapter does not offer (the area applies but is not covered). An ANY_OF group is one entry
    ``a|b``."""

    needs: tuple[str, ...]
    not_in_profile: tuple[str, ...]
    adapter_lacks: tuple[str, ...]

    def describe(self) -> str:
        return f"n/a (needs: {', '.join(self.needs)})"

    def reason(self) -> str:
        """One line for the outcomes: which of the two cases, and the capabilities."""
        if self.adapter_lacks:
            return f"applies but not covered (capability missing: {', '.join(self.adapter_lacks)})"
        return f"not in the claimed profile (needs: {', '.join(self.not_in_profile)})"

    def as_json(self) -> dict[str, list[str]]:
        return {"needs": list(self.needs), "not_in_profile": list(self.not_in_profile),
                "adapter_lacks": list(self.adapter_lacks)}


def not_run(base: type[ConformanceMachine], profile_caps: frozenset[str],
            adapter_caps: frozenset[str]) -> NotRun | None:
    """None when `base` can run with the claimed profile's and the adapter's capabilities, else why
    not (see NotRun)."""
    caps = profile_caps & adapter_caps
    if base.applicable(caps):
        return None
    groups: list[tuple[str, ...]] = [(c,) for c in base.REQUIRES if c not in caps]
    if base.ANY_OF and not any(c in caps for c in base.ANY_OF):
        groups.append(tuple(base.ANY_OF))
    needs: list[str] = []
    in_profile: list[str] = []
    lacks: list[str] = []
    for group in groups:
        name = "|".join(group)
        needs.append(name)
        if any(c in profile_caps for c in group):
            lacks.append(name)
        else:
            in_profile.append(name)
    return NotRun(tuple(needs), tuple(in_profile), tuple(lacks))


@attrs.define
class MachineResult:
    machine: str
    findings: list[Finding] = attrs.field(factory=list)
    checked: set[str] = attrs.field(factory=set)
    unknown: str | None = None
    examples: int = 0
    steps: int = 0
    seconds: float = 0.0
    #: the machine did not run: the capabilities it needs that the run lacks (see `not_run`)
    needs: NotRun | None = None
    #: the adapter's name and the implementation's version as it reported them (set by run_area_job)
    adapter_name: str = ""
    server_version: str = ""
    #: the adapter's round trips when the area ended (adapters/_latency.py summary), when it measures them
    latency: dict[str, Any] | None = None
    #: where the area's wall time went: seconds per category (mqconform.conformance.exploring.timing)
    timing: dict[str, float] = attrs.field(factory=dict)
    #: the explorations the area ran in at once (mqconform.conformance.exploring.shards); with more than one,
    #: `timing` adds up over them and `part_seconds` is the sum of their wall times
    parts: int = 1
    part_seconds: float = 0.0
    #: a replay of a corpus (corpus_replay.replay_area): each example's verdict, in corpus order
    replays: list[dict[str, Any]] = attrs.field(factory=list)
    #: why each exploration Hypothesis stopped without a violation was started again (GENERATION_RESTARTS)
    restarts: list[str] = attrs.field(factory=list)

    def rule_outcomes(self, table: dict[str, tuple[str, ...]], failed: set[str] | None = None,
                      deviating: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
        """Per rule: fail if it is `failed` (default: named by a finding), else deviation if it is
        `deviating`, else pass/unknown if a check naming it ran, else n/a."""
        if failed is None:
            failed = {rule for finding in self.findings for rule in finding.rules}
        outcomes: dict[str, str] = {}
        for check, rules in table.items():
            ran = check in self.checked
            check_state = ("unknown" if self.unknown else "pass") if ran else "not_applicable"
            for rule in rules:
                state = "fail" if rule in failed else "deviation" if rule in deviating else check_state
                previous = outcomes.get(rule)
                if previous is None or SEVERITY[state] > SEVERITY[previous]:
                    outcomes[rule] = state
        return outcomes


def stable_imports() -> None:
    """Import every module of the project in every process before a machine runs.

    Hypothesis (6.131+) also draws constants it finds in the *local* modules loaded so far (source
    outside site-packages and tests: this project when installed editable), so the set of loaded
    modules changes the examples a seed or `derandomize` gives. Loading all of them first makes
    `mqconform run -n 1`, `-n N` workers, the pytest plugin and a test session (whatever its other
    tests loaded before) explore the same examples. A module whose optional dependency is missing
    is skipped, the same way in every process of one installation."""
    global _stable
    if _stable:
        return
    import importlib
    import pkgutil

    import mqconform

    for info in pkgutil.walk_packages(mqconform.__path__, "mqconform.", onerror=lambda name: None):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        with contextlib.suppress(Exception):
            importlib.import_module(info.name)
    _stable = True


_stable = False


#: the corpus recorder of the exploration running in this context (`mqconform matrix` keeps every
#: example: mqconform.conformance.exploring.corpus), None otherwise
RECORDER: contextvars.ContextVar[Any] = contextvars.ContextVar("mqconform_corpus_recorder", default=None)


def machine_class(base: type[ConformanceMachine], context: RunContext) -> type[ConformanceMachine]:
    """A subclass of `base` bound to one run context (Hypothesis instantiates it per example); while
    a corpus RECORDER is set, each example's steps and checks go to it at its teardown."""
    namespace: dict[str, Any] = {"context": context, "__module__": base.__module__}
    recorder = RECORDER.get()
    if recorder is not None:
        namespace["teardown"] = recorder.teardown(base.teardown)
    return type(base.__name__, (base,), namespace)


def run_machine(base: type[ConformanceMachine], adapter_factory: Callable[[], Adapter],
                claimed: ModelOptions, hyp_settings: settings, run: RunDirectory | None = None,
                max_reruns: int = MAX_RERUNS, seed_value: int | None = None,
                cap_real_time: bool = True, shrink_seconds: float | None = None,
                progress: AreaProgress | None = None, skip_checks: Iterable[str] = (),
                explain: Callable[[Finding], BugModel | None] | None = None,
                part: Part = WHOLE, known: Callable[[Finding], bool] | None = None) -> MachineResult:
    """Explore one machine against the adapter; see the module docstring. `seed_value`: Hypothesis
    draws from that seed (the same seed, settings and adapter explore the same examples; it overrides
    `derandomize`). `cap_real_time` (the user did not set the count): a machine with REAL_TIME_SHARE
    > 1 runs that share of the examples against an adapter whose ``real_time`` is true (advance sleeps).
    Shrinking stops after `shrink_seconds` (default REAL_TIME_SHRINK_S on a real-time adapter, whose
    shrink steps sleep; else Hypothesis' 300 s): the finding says so, with the smallest found by then.
    `skip_checks`: checks not made at all (a test aiming at one difference among several). `explain`:
    the registered bug's model that explains a finding (Judge.bug_model), else None; the area then
    explores on against that model, its check still made (one finding per known bug, what lies behind
    it still found); a finding no bug model explains disables its check. `known`: does a registered
    deviation explain a finding (default: `explain` gives a model)? Then it is not shrunk by
    Hypothesis (RunContext.known_bug). `part`: one of several explorations of the area at once
    (mqconform.conformance.exploring.shards), its share of the examples from its own seed and names."""
    stable_imports()
    result = MachineResult(base.area)
    probe = adapter_factory()
    # what the contract asks of this adapter in place of its profile (adapters.contract.model_for)
    held_to = contract_changes(claimed, frozenset(probe.capabilities))
    claimed = model_for(claimed, frozenset(probe.capabilities))
    why = not_run(base, frozenset(claimed.features) | EXTRA_CAPABILITIES, frozenset(probe.capabilities))
    if why is not None:
        result.needs = why
        return result  # every rule of the machine is not applicable
    history = run.history(base.area, part=part) if run is not None else None
    disabled: set[str] = set(skip_checks)
    examples = area_examples(base, hyp_settings, probe, cap_real_time)
    budget = max(1, part.examples(examples))  # the part's examples, over all its explorations
    seed_value = part.seed(seed_value, base.area)
    if shrink_seconds is None and getattr(probe, "real_time", False):
        shrink_seconds = REAL_TIME_SHRINK_S
    started = time.perf_counter()
    ledger = TimeLedger()
    explored = 0  # the examples of the budget spent (each exploration's, up to its violation)
    try:
        for rerun in range(max_reruns + 1):
            context = RunContext(adapter_factory, claimed, history, frozenset(disabled), ledger=ledger,
                                 namespace_prefix=part.namespace_prefix)
            context.checked = result.checked
            if known is not None or explain is not None:
                context.known_bug = _known_bug(base.area, known or gives_a_model(explain), held_to)
            if progress is not None:
                progress.context = context
            quiet = exploration_settings(settings(hyp_settings, max_examples=budget - explored))
            t0 = time.perf_counter()
            found = _explore(_seeded(base, context, seed_value, rerun), context, result, quiet,
                             shrink_seconds, progress)
            if found is None and _restarted(context, result, rerun < max_reruns):
                explored += context.examples  # they held: the rest from another seed
                if explored < budget:
                    continue
            if found is None:
                break
            explored += context.examples_at_violation or context.examples
            failed, steps = found
            finding = _shrunk_finding(base.area, failed, steps, time.perf_counter() - t0, claimed,
                                      adapter_factory, context, shrink_seconds, held_to)
            result.findings.append(finding)
            bug = explain(finding) if explain is not None else None
            if bug is not None and not getattr(claimed, bug.option):
                claimed, held_to = bug.enable(claimed), {**held_to, bug.option: True}
            else:
                disabled.add(failed.check)
            if progress is not None:
                progress.findings = len(result.findings)
            if explored >= budget:
                break
    finally:
        if history is not None:
            result.steps = history.index
            history.close()
    result.seconds = time.perf_counter() - started
    result.timing = ledger.summary(result.seconds)
    return result


def _restarted(context: RunContext, result: MachineResult, rerun_left: bool) -> bool:
    """Does an exploration that Hypothesis stopped for inconsistent data generation, no violation
    seen, start again (GENERATION_RESTARTS, each one of the reruns)? Then the area is not unknown for
    it, and `result.restarts` says why it restarted."""
    if not (context.generation_flaky and rerun_left and len(result.restarts) < GENERATION_RESTARTS):
        return False
    result.restarts.append(result.unknown or "")
    result.unknown = None
    return True


def _seeded(base: type[ConformanceMachine], context: RunContext, part_seed: int | None,
            rerun: int) -> type[ConformanceMachine]:
    """The machine class of one exploration, drawing from the rerun's seed (:func:`_rerun_seed`)."""
    cls = machine_class(base, context)
    rerun_seed = _rerun_seed(part_seed, base.area, rerun)
    return seed(rerun_seed)(cls) if rerun_seed is not None else cls


def _shrunk_finding(area: str, failed: Violation, steps: list[Step], seconds: float, claimed: ModelOptions,
                    adapter_factory: Callable[[], Adapter], context: RunContext,
                    shrink_seconds: float | None, held_to: dict[str, Any]) -> Finding:
    """The finding of an exploration's violation: its steps minimised (minimize.shrink, timed as
    shrinking), cut when Hypothesis' shrinking ran out of `shrink_seconds`."""
    cut = (shrink_seconds is not None and context.first_violation_at is not None
           and time.perf_counter() - context.first_violation_at >= shrink_seconds)
    with context.ledger.timed("shrink"):
        shrunk = shrink(steps, claimed, adapter_factory)
        return finding_of(area, failed, shrunk, seconds, claimed, adapter_factory,
                          cut_after=shrink_seconds if cut else None, options=held_to,
                          known_as_found=context.known_as_found)


def gives_a_model(explain: Callable[[Finding], BugModel | None] | None) -> Callable[[Finding], bool]:
    """Does `explain` (a judge's bug_model) give a registered bug's model for a finding?"""
    return lambda finding: explain is not None and explain(finding) is not None


def _known_bug(area: str, known: Callable[[Finding], bool],
               held_to: dict[str, Any]) -> Callable[[Violation, list[Step]], bool]:
    """Does a registered deviation (`known`, the judge's) explain a violation with the steps that
    showed it, unshrunk (RunContext.known_bug)?"""
    def known_bug(violation: Violation, steps: list[Step]) -> bool:
        finding = Finding(area, violation.check, violation.rules, violation.message, steps, 0.0,
                          field=violation.field, expected=violation.expected, actual=violation.actual,
                          options=dict(held_to))
        return known(finding)

    return known_bug


def _rerun_seed(part_seed: int | None, area: str, rerun: int) -> int | None:
    """The Hypothesis seed of an area's `rerun`-th exploration after a finding: the part's own for the
    first; for each later one another, derived from it (or, on derandomized settings, from the area's
    name), so a rerun draws the examples the budget has left instead of those that already held."""
    return part_seed if rerun == 0 else derived_seed(part_seed, area, 104729 * rerun)


def exploration_settings(hyp_settings: settings) -> settings:
    """`hyp_settings` as one exploration runs them: quiet, and without report_multiple_bugs. Every check
    fails from one place (Driver.check), so Hypothesis, which tells bugs apart by where they are
    raised, sees one bug, and its search for others after the first failure (up to 10 s, or as many
    calls again) never finds one; the next finding is the rerun's, with the failed check disabled."""
    return settings(hyp_settings, verbosity=Verbosity.quiet, report_multiple_bugs=False)


def area_examples(base: type[ConformanceMachine], hyp_settings: settings, probe: Any,
                  cap_real_time: bool = True) -> int:
    """The examples an area explores: the settings' budget, or its REAL_TIME_SHARE on an adapter
    whose clock is real (``real_time``) when `cap_real_time` (the user did not set the count)."""
    if cap_real_time and base.REAL_TIME_SHARE > 1 and getattr(probe, "real_time", False):
        return max(1, hyp_settings.max_examples // base.REAL_TIME_SHARE)
    return int(hyp_settings.max_examples)


def _explore(cls: type[ConformanceMachine], context: RunContext, result: MachineResult, quiet: settings,
             shrink_seconds: float | None,
             progress: AreaProgress | None) -> tuple[Violation, list[Step]] | None:
    """One exploration of machine `cls` until its first violation: the violation and its steps, or None
    when every example held or the run has no verdict (then `result.unknown` says why)."""
    found: tuple[Violation, list[Step]] | None = None
    try:
        with shrink_budget(shrink_seconds):
            run_state_machine_as_test(cls, settings=quiet)
    except Violation as violation:
        found = violation, list(context.current.d.steps) if context.current is not None else []
    except Inconclusive as exc:
        result.unknown = str(exc)
    except Flaky as exc:
        # replaying the choices of a failure did not generate the same run (the broker's timing
        # feeds the model's state) or did not fail again: the smallest failure seen is real
        found = context.smallest_violation
        if found is None:
            context.generation_flaky = True
            result.unknown = f"the implementation behaved non-deterministically: {first_line(exc)}"
    except Exception as exc:  # an adapter bug is never a conformance failure, nor a pass
        result.unknown = f"the adapter raised {type(exc).__name__}: {first_line(exc)}"
    finally:
        result.examples += context.examples
        if progress is not None:
            progress.examples, progress.context = result.examples, None
        _close_quietly(context)
        context.current = None
    return found


def finding_of(area: str, failed: Violation, shrunk: Minimized, seconds: float, claimed: ModelOptions,
               adapter_factory: Callable[[], Adapter], *, cut_after: float | None = None,
               options: dict[str, Any] | None = None, known_as_found: bool = False) -> Finding:
    """The finding of a violation from its steps as minimised on the adapter (minimize.shrink): what
    the minimised replay shows, and FLAKY when the violation compared one value (a field, or an
    operation's result) and no replay fails again (FLAKY_REPLAYS in all). `cut_after`: shrinking
    stopped at that many seconds. `options`: the model options the adapter was held to in place of
    its profile's (adapters.contract.model_for). `known_as_found`: a registered bug explained the
    violation before Hypothesis shrank it (RunContext.known_bug), so it did not."""
    shown = (shrunk.field, shrunk.expected, shrunk.actual) if shrunk.what is not None else None
    # a registered bug's violation taken as found was replayed by the judge already: its minimising
    # replay is the only other one (a long real-broker story costs minutes per replay)
    replays = 1 if known_as_found else FLAKY_REPLAYS
    flaky = (shrunk.what is None
             and (bool(failed.field) or _compares_the_last_result(shrunk.steps, failed, claimed))
             and not reproduces(shrunk.steps, claimed, adapter_factory, replays - 1))
    message = shrunk.message or failed.message
    if cut_after is not None:
        message = (f"shrinking cut after {cut_after:g} s (the smallest counterexample found "
                   f"until then): {message}")
    if known_as_found:
        message = f"a registered bug explained it as found (minimised step by step only): {message}"
    if flaky:
        message = (f"flaky: did not fail again in {replays} replay(s) of its {len(shrunk.steps)} "
                   f"steps (found after {seconds:.1f} s): {message}")
    unshown = False
    bugs = _known_bugs_held(options or {})
    if bugs and not flaky:
        plain = claimed.evolve(**dict.fromkeys(bugs.values(), False))
        held = sum(holds(shrunk.steps, plain, adapter_factory) for _ in range(UNSHOWN_REPLAYS))
        if held:
            unshown, flaky = held == UNSHOWN_REPLAYS, held < UNSHOWN_REPLAYS
            message = (f"{'not shown' if unshown else 'flaky'}: the area explored on against the model "
                       f"of the known bug(s) {', '.join(bugs)}, which expects the bug here; replayed "
                       f"against the model without it, the implementation held {held} of "
                       f"{UNSHOWN_REPLAYS} times: the bug did not show (its trigger depends on what the "
                       f"model cannot follow, e.g. the broker's real-time clock): {message}")
    return Finding(area, failed.check, failed.rules, message, shrunk.steps, seconds, flaky=flaky,
                   unshown=unshown,
                   field=failed.field, expected=failed.expected, actual=failed.actual, shown=shown,
                   shrink_cut=cut_after is not None, options=dict(options or {}),
                   clock_lead_limit_ms=failed.clock_lead_limit_ms)


def _known_bugs_held(options: dict[str, Any]) -> dict[str, str]:
    """The registered bugs (name -> model option) that `options`, a finding's held options, switch on:
    the known bugs its area explored on against (run_machine's `explain`)."""
    from mqconform.reference_model.bugs import BUGS

    return {bug.name: bug.option for bug in BUGS.values() if options.get(bug.option) is True}


def _compares_the_last_result(steps: Sequence[Step], failed: Violation, claimed: ModelOptions) -> bool:
    """Did `failed` compare the answer of the counterexample's last operation (a receive's message, a
    send's result), which its replay as a scenario compares too? (An observation the scenario does not
    make, e.g. a delivery count, cannot be replayed that way, so it is never called flaky.)"""
    from mqconform.scenario import ModelRejected, annotate

    if not steps or (failed.expected is None and failed.actual is None):
        return False
    try:
        last = annotate([{step.op: step.args} for step in steps], claimed)[-1]
    except (ModelRejected, ValueError):
        return False
    answer = last.get("expect", {}).get("result")
    return bool(answer == failed.expected or (isinstance(answer, list) and failed.expected in answer))


@contextlib.contextmanager
def shrink_budget(seconds: float | None) -> Iterator[None]:
    """Bound Hypothesis' shrinking of one failure to `seconds` (None: its own default, or 0 once a
    registered bug explains the failure: RunContext.known_bug). Hypothesis
    keeps the bound in a module constant it documents as monkeypatchable
    (hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS, read when shrinking starts)."""
    from hypothesis.internal.conjecture import engine

    if not hasattr(engine, "MAX_SHRINKING_SECONDS"):
        yield
        return
    before = engine.MAX_SHRINKING_SECONDS  # put back also when a known bug ended shrinking at once
    if seconds is not None:
        engine.MAX_SHRINKING_SECONDS = seconds  # type: ignore[assignment]
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = before


def _close_quietly(context: RunContext) -> None:
    machine = context.current
    if machine is not None:
        with contextlib.suppress(Exception):  # best effort cleanup after an aborted example
            machine.adapter.close()


def database(run_path: Path, part: Part = WHOLE) -> DirectoryBasedExampleDatabase:
    """The run's example database; a part of an area explored in several at once has its own (the
    parts share the machine class, whose examples Hypothesis keys its database by)."""
    return DirectoryBasedExampleDatabase(str(run_path / ".hypothesis" / part.suffix.lstrip(".")))


def merge_outcomes(results: Iterable[MachineResult], profile: str | None = None,
                   excused: Callable[[Finding], bool] | None = None) -> dict[str, str]:
    """Per rule, the worst outcome over the machines. With `profile`, a rule that does not apply to
    that profile (spec/ says so) cannot *pass*: a check evidences a rule only for the profiles the rule
    speaks about. A failure is never hidden: a finding fails the rules of its check that apply to the
    profile, and all of its rules when none applies. A finding `excused` says a registered deviation
    explains gives those rules ``deviation`` instead (a rule another finding fails stays ``fail``)."""
    from mqconform.spec import load_catalogue

    from ..judging.rules import rules_for

    applies = None
    if profile is not None:
        catalogue = load_catalogue()
        applies = {rule.id for rule in catalogue if rule.applies_to(profile)}
    merged: dict[str, str] = {}
    for res in results:
        failing: set[str] = set()
        deviating: set[str] = set()
        for finding in res.findings:
            explained = excused is not None and excused(finding)
            if finding.unshown and not explained:
                continue  # the implementation followed the specification there: no verdict at all
            if finding.flaky and not explained:
                continue  # no verdict: the verdict marks its rules unknown (verdict.judge)
            named = [r for r in finding.rules if applies is None or r in applies] or finding.rules
            (deviating if explained else failing).update(named)
        for rule, state in res.rule_outcomes(rules_for(res.machine), failing, deviating).items():
            if applies is not None and rule not in applies and state not in ("fail", "deviation"):
                state = "not_applicable"
            if rule not in merged or SEVERITY[state] > SEVERITY[merged[rule]]:
                merged[rule] = state
    return merged


def fault_reason(exc: BaseException) -> str:
    """One line for an exception that stopped a machine (a broker fault, possibly wrapped by
    Hypothesis in an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
