"""A Markdown summary of the compliance matrix, sized for a pull-request comment.

The verdict line first, then the failing, flaky and unknown cells with their first failing run and
counterexample, then the full matrix folded in a <details> block. Text from runs is escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from .matrix import LABELS, Matrix

ICONS = {"pass": "✅", "fail": "❌", "flaky": "⚠️", "unknown": "❔", "not_applicable": "⚪",
         "deviation": "🔶", "not_run": "·"}


def md_text(text: object, limit: int = 200) -> str:
    """One table-safe line: HTML-escaped, pipes and newlines neutralised, cut at `limit` characters."""
    value = " ".join(str(text).split())
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return escape(value).replace("|", "\\|").replace("`", "&#96;")


def markdown_summary(matrix: Matrix) -> str:
    counts = matrix.counts()
    failing = counts["fail"] + counts["flaky"]
    head = (f"❌ {failing} failing rule cell(s)" if matrix.failing else "✅ no failing rule")
    impls = ", ".join(md_text(i.label) for i in matrix.implementations) or "none"
    lines = [f"## mqconform compliance: {head}", "",
             f"{len(matrix.rules)} rules x {len(matrix.implementations)} implementation(s) ({impls}); "
             f"{len(matrix.runs)} run(s), engine {md_text(matrix.engine)}.", "",
             " · ".join(f"{ICONS[s]} {LABELS[s]}: {n}" for s, n in counts.items() if n), ""]
    problems = matrix.failing_cells()
    if problems:
        lines += ["| Rule | Implementation | State | First failing run | Counterexample | Message |",
                  "|---|---|---|---|---|---|"]
        for cell in problems:
            first = cell.first_failing
            evidence = first or next((r for r in cell.runs if r.state == cell.state), None)
            scenario = f"`{md_text(first.scenario)}`" if first and first.scenario else ""
            lines.append(f"| {cell.rule} | {md_text(cell.implementation.label)} | {ICONS[cell.state]} "
                         f"{LABELS[cell.state]} | {md_text(first.run) if first else ''} | {scenario} | "
                         f"{md_text(evidence.message) if evidence else ''} |")
        lines.append("")
    header = "| Rule | " + " | ".join(md_text(i.label) for i in matrix.implementations) + " |"
    lines += ["<details><summary>Full matrix</summary>", "", header,
              "|---|" + "---|" * len(matrix.implementations)]
    for rule in matrix.rules:
        row = [f"{ICONS[c.state]} {LABELS[c.state]}"
               for c in (matrix.cell(rule, i) for i in matrix.implementations)]
        lines.append(f"| {rule} | " + " | ".join(row) + " |")
    lines += ["", "</details>", ""]
    if matrix.bad:
        lines += [f"{len(matrix.bad)} input(s) excluded from the verdicts:", ""]
        lines += [f"- `{md_text(b.path)}`{':' + str(b.line) if b.line else ''}: {md_text(b.problem)}"
                  for b in matrix.bad]
        lines.append("")
    return "\n".join(lines)


def write_markdown(matrix: Matrix, path: Path) -> Path:
    path.write_text(markdown_summary(matrix), encoding="utf-8")
    return path
