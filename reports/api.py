"""The types the report pipeline passes between its stages (the contract of reports/).

The history stage (ingest + checks, :mod:`.pipeline`) turns run directories into :class:`PipelineResult`;
the report stage (matrix, JUnit, JSON, Markdown, HTML) reads only these types and the spec catalogue,
never a live broker.
"""

from __future__ import annotations

from typing import Literal

import attrs

#: `deviation`: a failing history check that registered known deviations explain example by example
#: (:mod:`mqconform.reports.excuse`); the engines themselves never answer it
Verdict = Literal["pass", "fail", "unknown", "not_applicable", "deviation"]


@attrs.frozen
class RunInfo:
    """One run directory as ingested: its run.json and where it came from."""

    run: str
    adapter: str
    profile: str
    path: str
    status: str  # "complete" | "incomplete"
    started: str | None = None
    exit_code: int | None = None
    versions: dict[str, str] = attrs.field(factory=dict)
    #: outcomes.jsonl records as written by `mqconform run` (rule, machine, outcome, counterexample, ...)
    outcomes: tuple[dict[str, object], ...] = ()


@attrs.frozen
class CheckResult:
    """One history check on one (run, machine, queue): e.g. total-queue accounting, per-consumer order.

    `count` is the number of anomalies found (0 for pass); `detail` a short human sentence; `stats`
    the figures the check computed (attempted, acknowledged, delivered, lost, unexpected, duplicated,
    recovered, ...), identical between the python and spark engines.
    """

    run: str
    adapter: str
    profile: str
    machine: str
    queue: str | None
    check: str
    rules: tuple[str, ...]
    verdict: Verdict
    count: int = 0
    detail: str = ""
    stats: dict[str, int] = attrs.field(factory=dict)


@attrs.frozen
class BadInput:
    """A line or file excluded from the verdicts (corrupt JSON, unknown schema version, incomplete run)."""

    path: str
    line: int | None
    problem: str


@attrs.frozen
class PipelineResult:
    """What the history stage hands to the report stage."""

    runs: tuple[RunInfo, ...]
    checks: tuple[CheckResult, ...]
    bad: tuple[BadInput, ...] = ()
    engine: str = "python"
