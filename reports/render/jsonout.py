"""The report as JSON for machines (schema ``mqconform.report/1``, described by :data:`SCHEMA_KEYS`).

Deterministic for the same inputs (no timestamps of its own), so two reports can be diffed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from mqconform.spec import Catalogue

from .matrix import Cell, Matrix, RunCell

SCHEMA = "mqconform.report/1"
#: top-level key -> what it holds (the schema, in words; tests check the document against it).
SCHEMA_KEYS: dict[str, str] = {
    "schema": "the string mqconform.report/1",
    "engine": "the check engine that produced the verdicts",
    "failing": "true when some rule fails or is flaky (the report's exit code is then 1)",
    "summary": "cell counts per state",
    "implementations": "matrix columns: id, adapter, profile, version, runs",
    "rules": "matrix rows: id, statement, kind, source, area, in_catalogue",
    "cells": "one per rule x implementation: state, first_failing_run, counterexample, message, runs",
    "runs": "the runs read: run, adapter, profile, path, status, started, exit_code, versions",
    "checks": "history check results (run, machine, queue, check, rules, verdict, count, detail, stats)",
    "bad_inputs": "inputs excluded from the verdicts: path, line, problem",
}


def _run_cell(run: RunCell) -> dict[str, Any]:
    return {"run": run.run, "state": run.state, "machine": run.machine, "source": run.source,
            "counterexample": str(run.scenario) if run.scenario is not None else None,
            "message": run.message or None}


def _cell(cell: Cell) -> dict[str, Any]:
    first = cell.first_failing
    return {"rule": cell.rule, "implementation": cell.implementation.label, "state": cell.state,
            "first_failing_run": first.run if first else None,
            "counterexample": str(first.scenario) if first and first.scenario else None,
            "message": (first.message or None) if first else None,
            "runs": [_run_cell(r) for r in cell.runs]}


def report_dict(matrix: Matrix, catalogue: Catalogue) -> dict[str, Any]:
    """The JSON document as a dict."""
    rules = []
    for rule_id in matrix.rules:
        rule = catalogue.rules.get(rule_id)
        rules.append({"id": rule_id, "in_catalogue": rule is not None,
                      "statement": rule.statement if rule else None, "kind": rule.kind if rule else None,
                      "source": rule.source if rule else None, "area": rule.area if rule else None})
    return {
        "schema": SCHEMA,
        "engine": matrix.engine,
        "failing": matrix.failing,
        "summary": matrix.counts(),
        "implementations": [{"id": i.label, "adapter": i.adapter, "profile": i.profile, "version": i.version,
                             "runs": [r.run for r in matrix.runs_of(i)]} for i in matrix.implementations],
        "rules": rules,
        "cells": [_cell(matrix.cell(r, i)) for r in matrix.rules for i in matrix.implementations],
        "runs": [{"run": r.run, "adapter": r.adapter, "profile": r.profile, "path": r.path,
                  "status": r.status, "started": r.started, "exit_code": r.exit_code,
                  "versions": dict(r.versions)}
                 for r in matrix.runs],
        "checks": [attrs.asdict(c) for c in matrix.checks],
        "bad_inputs": [attrs.asdict(b) for b in matrix.bad],
    }


def write_json(matrix: Matrix, catalogue: Catalogue, path: Path) -> Path:
    text = json.dumps(report_dict(matrix, catalogue), indent=2, default=str)
    path.write_text(text + "\n", encoding="utf-8")
    return path
