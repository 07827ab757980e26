"""The compliance matrix: rule x implementation (x version) -> one state, built from a PipelineResult.

A cell merges, per run, the run's outcome records and the history checks naming the rule (the most
severe wins), then merges the runs: *flaky* when some runs pass and others fail, otherwise the most
severe state. It keeps every run's state and the first failing run (chronological) with its
counterexample. Run directories are read by the history stage (:mod:`..pipeline`) only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import attrs

from ..api import BadInput, CheckResult, PipelineResult, RunInfo

State = Literal["pass", "fail", "deviation", "unknown", "not_applicable", "flaky", "not_run"]
#: every state a cell can show, most severe first (flaky outranks fail: runs disagree).
STATES: tuple[State, ...] = ("flaky", "fail", "deviation", "unknown", "pass", "not_applicable", "not_run")
#: how one run's records for a rule merge: the highest wins.
SEVERITY: Mapping[str, int] = {"fail": 5, "deviation": 4, "unknown": 3, "pass": 2, "not_applicable": 1,
                               "not_run": 0}
#: states that make `mqconform report` exit 1.
FAILING: frozenset[str] = frozenset({"fail", "flaky"})
LABELS: Mapping[str, str] = {"pass": "pass", "fail": "FAIL", "deviation": "known deviation",
                             "unknown": "unknown", "not_applicable": "n/a", "flaky": "FLAKY",
                             "not_run": "not run"}


@attrs.frozen(order=True)
class Implementation:
    """A matrix column: the adapter, the profile it was checked against, and its version if recorded."""

    adapter: str
    profile: str
    version: str = ""

    @property
    def label(self) -> str:
        version = f" {self.version}" if self.version else ""
        return f"{self.adapter}{version} ({self.profile})"

    @classmethod
    def of(cls, run: RunInfo) -> Implementation:
        return cls(run.adapter, run.profile, run.versions.get("implementation", ""))


@attrs.frozen
class RunCell:
    """One run's state for one rule, with the evidence (counterexample, message, which record said so)."""

    run: str
    started: str
    state: str
    machine: str = ""
    counterexample: str | None = None  # relative to the run directory, as written by `mqconform run`
    run_path: str = ""
    message: str = ""
    source: str = "outcome"  # "outcome" or "check <name>"

    @property
    def scenario(self) -> Path | None:
        """The counterexample scenario file, or None."""
        return Path(self.run_path) / self.counterexample if self.counterexample else None


@attrs.frozen
class Cell:
    """The merged state of one rule for one implementation over all its runs."""

    rule: str
    implementation: Implementation
    state: str
    runs: tuple[RunCell, ...] = ()
    first_failing: RunCell | None = None


@attrs.frozen
class Matrix:
    """Rows are rule ids (catalogue order, unknown ids last), columns implementations."""

    rules: tuple[str, ...]
    implementations: tuple[Implementation, ...]
    cells: Mapping[tuple[str, Implementation], Cell]
    runs: tuple[RunInfo, ...]
    checks: tuple[CheckResult, ...] = ()
    bad: tuple[BadInput, ...] = ()
    engine: str = "python"

    def cell(self, rule: str, implementation: Implementation) -> Cell:
        found = self.cells.get((rule, implementation))
        return found if found is not None else Cell(rule, implementation, "not_run")

    def counts(self) -> dict[str, int]:
        """How many cells are in each state (every state present, zero or not)."""
        counts: dict[str, int] = dict.fromkeys(STATES, 0)
        for rule in self.rules:
            for impl in self.implementations:
                counts[self.cell(rule, impl).state] += 1
        return counts

    @property
    def failing(self) -> bool:
        """True when a rule fails (or is flaky) for some implementation."""
        return any(cell.state in FAILING for cell in self.cells.values())

    def failing_cells(self) -> list[Cell]:
        """Cells in a failing, flaky, unknown or deviation state, in matrix order."""
        return [self.cell(r, i) for r in self.rules for i in self.implementations
                if self.cell(r, i).state in ("flaky", "fail", "deviation", "unknown")]

    def runs_of(self, implementation: Implementation) -> list[RunInfo]:
        return [run for run in self.runs if Implementation.of(run) == implementation]


def _run_key(run: RunInfo) -> tuple[str, str]:
    return (run.started or "", run.run)


def _worse(a: RunCell | None, b: RunCell) -> RunCell:
    return b if a is None or SEVERITY.get(b.state, 0) > SEVERITY.get(a.state, 0) else a


def _per_run(run: RunInfo, checks: Iterable[CheckResult]) -> dict[str, RunCell]:
    """rule -> this run's merged state from its outcome records and its history checks."""
    found: dict[str, RunCell] = {}
    started = run.started or ""
    for record in run.outcomes:
        rule, outcome = record.get("rule"), record.get("outcome")
        if not isinstance(rule, str) or not isinstance(outcome, str):
            continue
        cx = record.get("counterexample")
        cell = RunCell(run.run, started, outcome if outcome in SEVERITY else "unknown",
                       str(record.get("machine") or ""), cx if isinstance(cx, str) and cx else None,
                       run.path, str(record.get("message") or ""))
        found[rule] = _worse(found.get(rule), cell)
    for check in checks:
        where = check.machine + (f"/{check.queue}" if check.queue else "")
        for rule in check.rules:
            message = f"history check {check.check} on {where}: {check.detail}" if check.detail else ""
            cell = RunCell(run.run, started, check.verdict, check.machine, None, run.path, message,
                           f"check {check.check}")
            found[rule] = _worse(found.get(rule), cell)
    return found


def _merge(rule: str, impl: Implementation, runs: Sequence[RunCell]) -> Cell:
    states = {r.state for r in runs}
    if "pass" in states and states & {"fail", "deviation"}:
        state = "flaky"
    else:
        state = max(states, key=lambda s: SEVERITY.get(s, 0))
    first = next((r for r in runs if r.state == "fail"), None) or next(
        (r for r in runs if r.state == "deviation"), None)
    return Cell(rule, impl, state, tuple(runs), first)


def build_matrix(result: PipelineResult, catalogue_order: Sequence[str] = ()) -> Matrix:
    """The matrix of a pipeline result; rows follow `catalogue_order`, then unknown ids sorted.

    Only complete runs count: an incomplete one is bad input (listed in ``result.bad``), never a verdict.
    """
    runs = tuple(sorted((r for r in result.runs if r.status == "complete"), key=_run_key))
    checks_by_run: dict[str, list[CheckResult]] = {}
    for check in result.checks:
        checks_by_run.setdefault(check.run, []).append(check)
    per_impl: dict[tuple[str, Implementation], list[RunCell]] = {}
    for run in runs:
        impl = Implementation.of(run)
        for rule, cell in _per_run(run, checks_by_run.get(run.run, ())).items():
            per_impl.setdefault((rule, impl), []).append(cell)
    seen = {rule for rule, _ in per_impl}
    order = [r for r in catalogue_order if r in seen] + sorted(seen - set(catalogue_order))
    impls = tuple(sorted({Implementation.of(run) for run in runs}))
    cells = {key: _merge(key[0], key[1], cells) for key, cells in per_impl.items()}
    return Matrix(tuple(order), impls, cells, runs, result.checks, result.bad, result.engine)

