"""JUnit XML for CI systems: one test case per rule and implementation, rule ids as properties.

States map to JUnit as: pass -> passed; fail and flaky -> <failure> (with the first failing run and its
counterexample); unknown -> <error> (the implementation could not be judged, never a pass);
not_applicable, not_run and known deviations -> <skipped> with the reason.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from mqconform.spec import Catalogue

from .matrix import LABELS, Cell, Matrix


def _case_name(cell: Cell, catalogue: Catalogue) -> str:
    rule = catalogue.rules.get(cell.rule)
    statement = rule.statement if rule is not None else "(not in the spec catalogue)"
    return f"{cell.rule}: {statement[:120]}"


def _evidence(cell: Cell) -> str:
    lines = [f"{cell.rule} for {cell.implementation.label}: {LABELS[cell.state]}"]
    for run in cell.runs:
        line = f"run {run.run}: {LABELS.get(run.state, run.state)}"
        if run.scenario is not None:
            line += f" counterexample {run.scenario}"
        if run.message:
            line += f" ({run.message})"
        lines.append(line)
    return "\n".join(lines)


def _testcase(suite: ET.Element, cell: Cell, catalogue: Catalogue) -> None:
    impl = cell.implementation
    case = ET.SubElement(suite, "testcase", name=_case_name(cell, catalogue),
                         classname=f"mqconform.{impl.adapter}.{impl.profile}")
    props = ET.SubElement(case, "properties")
    first = cell.first_failing
    values = {"rule": cell.rule, "implementation": impl.label, "adapter": impl.adapter,
              "profile": impl.profile, "version": impl.version, "state": cell.state,
              "runs": str(len(cell.runs))}
    if first is not None:
        values["first_failing_run"] = first.run
        if first.scenario is not None:
            values["counterexample"] = str(first.scenario)
    for name, value in values.items():
        ET.SubElement(props, "property", name=name, value=value)
    message = (first.message if first is not None else "") or LABELS[cell.state]
    if cell.state in ("fail", "flaky"):
        node = ET.SubElement(case, "failure", message=message[:500], type=cell.state)
        node.text = _evidence(cell)
    elif cell.state == "unknown":
        reason = next((r.message for r in cell.runs if r.state == "unknown" and r.message), "unknown")
        node = ET.SubElement(case, "error", message=reason[:500], type="unknown")
        node.text = _evidence(cell)
    elif cell.state in ("not_applicable", "not_run", "deviation"):
        # n/a says why when a run said so: not in the claimed profile, or capability missing
        why = message if cell.state == "deviation" else next(
            (r.message for r in cell.runs if r.state == cell.state and r.message), "")
        ET.SubElement(case, "skipped", message=f"{LABELS[cell.state]}: {why}"[:500] if why
                      else LABELS[cell.state])


def junit_xml(matrix: Matrix, catalogue: Catalogue) -> str:
    """The JUnit XML document (one <testsuite> per implementation)."""
    root = ET.Element("testsuites", name="mqconform")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for impl in matrix.implementations:
        cells = [matrix.cell(rule, impl) for rule in matrix.rules]
        counts = {"tests": len(cells),
                  "failures": sum(c.state in ("fail", "flaky") for c in cells),
                  "errors": sum(c.state == "unknown" for c in cells),
                  "skipped": sum(c.state in ("not_applicable", "not_run", "deviation") for c in cells)}
        suite = ET.SubElement(root, "testsuite", {"name": f"mqconform {impl.label}",
                                                  **{k: str(v) for k, v in counts.items()}})
        for cell in cells:
            _testcase(suite, cell, catalogue)
        for key, value in counts.items():
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(matrix: Matrix, catalogue: Catalogue, path: Path) -> Path:
    path.write_text(junit_xml(matrix, catalogue), encoding="utf-8")
    return path
