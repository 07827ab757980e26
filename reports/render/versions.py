"""The version matrix: for each implementation run in several releases (`mqconform matrix`), which
releases break which rule, and since when.

One table per (adapter, profile) with two or more versions: a row per rule that applies to some
release, a column per release (oldest first), then the failing releases and the first and the last
failing one. A cell links to its counterexample page of the main report (``cx/``) when it fails, else
to the rule's page. Written beside the main report as ``versions.html`` and ``versions.md``; reads the
:class:`~.matrix.Matrix` only.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from mqconform.spec import Catalogue

from .html import HtmlReport, _page, h
from .markdown import ICONS, md_text
from .matrix import LABELS, Cell, Implementation, Matrix

#: states that count as "this release breaks the rule"
BREAKS = frozenset({"fail", "flaky", "deviation"})


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Order of releases: the first run of digits on (``valkey-9.1.2`` sorts as 9.1.2), numerically."""
    found = re.search(r"\d.*", version)
    key: list[tuple[int, str]] = []
    for part in re.split(r"[.-]", found.group() if found else version):
        lead = re.match(r"\d*", part)
        digits = lead.group() if lead else ""
        key.append((int(digits) if digits else -1, part[len(digits):]))
    return tuple(key)


@attrs.frozen
class Row:
    """One rule over the releases of one implementation line."""

    rule: str
    cells: tuple[Cell, ...]

    @property
    def failing(self) -> tuple[str, ...]:
        return tuple(c.implementation.version for c in self.cells if c.state in BREAKS)

    @property
    def first(self) -> str:
        return self.failing[0] if self.failing else ""

    @property
    def last(self) -> str:
        return self.failing[-1] if self.failing else ""


@attrs.frozen
class VersionLine:
    """The releases of one (adapter, profile), oldest first, and the rows that apply to some release."""

    adapter: str
    profile: str
    releases: tuple[Implementation, ...]
    rows: tuple[Row, ...]


def version_lines(matrix: Matrix) -> list[VersionLine]:
    """Every (adapter, profile) of the matrix with two or more versions."""
    groups: dict[tuple[str, str], list[Implementation]] = {}
    for impl in matrix.implementations:
        groups.setdefault((impl.adapter, impl.profile), []).append(impl)
    lines = []
    for (adapter, profile), impls in sorted(groups.items()):
        if len(impls) < 2:
            continue
        ordered = tuple(sorted(impls, key=lambda i: version_key(i.version)))
        rows = []
        for rule in matrix.rules:
            cells = tuple(matrix.cell(rule, i) for i in ordered)
            if any(c.state not in ("not_applicable", "not_run") for c in cells):
                rows.append(Row(rule, cells))
        lines.append(VersionLine(adapter, profile, ordered, tuple(rows)))
    return lines


def versions_html(matrix: Matrix, catalogue: Catalogue, out: Path) -> str:
    report = HtmlReport(matrix, catalogue, out)  # the same page names as the main report's
    sections = []
    for line in version_lines(matrix):
        head = "".join(f"<th>{h(i.version or '?')}</th>" for i in line.releases)
        rows = []
        for row in sorted(line.rows, key=lambda r: not r.failing):
            tds = []
            for cell in row.cells:
                first = cell.first_failing
                target = (report._cx_link(first, "") if first is not None else "") or \
                    f"rules/{report.rule_pages[cell.rule]}.html"
                title = f"{cell.rule} / {cell.implementation.label}: {LABELS[cell.state]}"
                if first is not None and first.message:
                    title += f" - {first.message}"
                tds.append(f'<td class="st st-{h(cell.state)}" title="{h(title)}"><a href="{h(target)}" '
                           f'style="color:inherit">{h(LABELS[cell.state])}</a></td>')
            rows.append(f'<tr><td><a href="rules/{report.rule_pages[row.rule]}.html">{h(row.rule)}</a></td>'
                        f"{''.join(tds)}<td>{h(', '.join(row.failing)) or '-'}</td>"
                        f"<td>{h(row.first) or '-'}</td><td>{h(row.last) or '-'}</td></tr>")
        broken = sum(1 for r in line.rows if r.failing)
        sections.append(
            f"<h2>{h(line.adapter)} ({h(line.profile)}): {len(line.releases)} releases, {broken} rule(s) "
            f"broken by some release</h2><table><thead><tr><th>Rule</th>{head}<th>Failing releases</th>"
            f"<th>First failing</th><th>Last failing</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    body = ('<p class="small"><a href="index.html">← compliance matrix</a></p>'
            "<h1>mqconform version matrix</h1>"
            "<p>Which releases break which rule, and since when. Releases oldest first; a failing cell links "
            "to its counterexample, any other to the rule. Rules that apply to no release are left out.</p>"
            + ("".join(sections) or "<p>No implementation was run in more than one version.</p>"))
    return _page("mqconform version matrix", body)


def versions_markdown(matrix: Matrix) -> str:
    lines = ["## mqconform version matrix", ""]
    for line in version_lines(matrix):
        lines += [f"### {md_text(line.adapter)} ({md_text(line.profile)})", "",
                  "| Rule | " + " | ".join(md_text(i.version or "?") for i in line.releases)
                  + " | Failing releases | First failing | Last failing |",
                  "|---|" + "---|" * (len(line.releases) + 3)]
        for row in sorted(line.rows, key=lambda r: not r.failing):
            cells = []
            for cell in row.cells:
                scenario = cell.first_failing.scenario if cell.first_failing else None
                text = f"{ICONS[cell.state]} {LABELS[cell.state]}"
                cells.append(f"[{text}]({md_text(scenario)})" if scenario else text)
            lines.append(f"| {row.rule} | " + " | ".join(cells) +
                         f" | {md_text(', '.join(row.failing)) or '-'} | {md_text(row.first) or '-'} | "
                         f"{md_text(row.last) or '-'} |")
        lines.append("")
    return "\n".join(lines)


def write_versions(matrix: Matrix, catalogue: Catalogue, out: Path) -> Path | None:
    """Write versions.html and versions.md into `out` when some implementation has several versions;
    returns the HTML page's path, or None."""
    if not version_lines(matrix):
        return None
    page = out / "versions.html"
    page.write_text(versions_html(matrix, catalogue, out), encoding="utf-8")
    (out / "versions.md").write_text(versions_markdown(matrix), encoding="utf-8")
    return page
