"""The static HTML report: the matrix, one page per rule, one page per counterexample with its timeline.

Offline and script-free: no JavaScript, no external CSS, a Content-Security-Policy that forbids
scripts, and every string from a run (ids, messages, adapter names, paths) HTML-escaped.
"""

from __future__ import annotations

import os
import re
from html import escape
from pathlib import Path
from urllib.parse import quote

import attrs

from mqconform.spec import Catalogue

from ..api import RunInfo
from .matrix import LABELS, STATES, Cell, Matrix, RunCell
from .timeline import legend_html, render_svg, timeline_of_file

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:22px 0 8px} a{color:#1a55a8}
table{border-collapse:collapse;margin:8px 0} th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;
vertical-align:top} th{background:#f4f4f4;position:sticky;top:0}
td.st{text-align:center;white-space:nowrap;font-weight:600}
.st-pass{background:#dff3e0;color:#1b5e20} .st-fail{background:#fbd5d5;color:#8b0000}
.st-flaky{background:#ffe6b3;color:#7a4a00} .st-unknown{background:#e8e8f8;color:#333366}
.st-not_applicable{background:#f6f6f6;color:#888} .st-deviation{background:#fff4c2;color:#6b5800}
.st-not_run{background:#fff;color:#aaa}
.verdict{font-size:16px;font-weight:600;padding:6px 10px;display:inline-block;border-radius:4px}
.small{color:#666;font-size:12px} pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:420px}
.legend .key{margin-right:12px;white-space:nowrap;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:4px;vertical-align:-1px}
.msg{background:#fdecea;border-left:4px solid #c62828;padding:6px 10px;margin:8px 0}
"""


def h(value: object) -> str:
    """HTML-escape any value (quotes too), for text and attribute values."""
    return escape(str(value), quote=True)


def _page(title: str, body: str, up: str = "") -> str:
    nav = f'<p class="small"><a href="{up}index.html">← compliance matrix</a></p>' if up else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>{h(title)}</title><style>{CSS}</style></head><body>{nav}{body}</body></html>\n")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)[:80] or "_"


def _href(target: Path, page_dir: Path) -> str:
    return quote(Path(os.path.relpath(target, page_dir)).as_posix())


@attrs.frozen
class Counterexample:
    """One counterexample scenario file of one run, with the rules and message it was reported under."""

    run: RunInfo
    path: str  # relative to the run directory
    rules: tuple[str, ...]
    message: str
    machine: str

    @property
    def scenario(self) -> Path:
        return Path(self.run.path) / self.path


_HEADER = re.compile(r"^# Counterexample: (?P<check>.*?) \((?P<rules>[^)]*)\)\n# (?P<message>.*)$",
                     re.MULTILINE)
_REPLAY = re.compile(r"^# Replay: mqconform scenario \S+ --adapter (\S+)", re.MULTILINE)


def _counterexamples(matrix: Matrix) -> dict[tuple[str, str], Counterexample]:
    """Every counterexample: those the outcomes name, then any other scenario file in the runs' folders."""
    runs = {run.run: run for run in matrix.runs}
    found: dict[tuple[str, str], Counterexample] = {}
    for cell in sorted(matrix.cells.values(), key=lambda c: (c.rule, c.implementation)):
        for rc in cell.runs:
            if rc.counterexample and rc.run in runs:
                key = (rc.run, rc.counterexample)
                old = found.get(key)
                rules = (old.rules if old else ()) + (cell.rule,)
                found[key] = Counterexample(runs[rc.run], rc.counterexample, rules, rc.message, rc.machine)
    for run in matrix.runs:
        folder = Path(run.path) / "counterexamples"
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else ():
            key = (run.run, f"counterexamples/{path.name}")
            if key in found:
                continue
            try:
                match = _HEADER.search(path.read_text(encoding="utf-8")[:4000])
            except OSError:
                match = None
            rules = tuple(r.strip() for r in match["rules"].split(",")) if match else ()
            found[key] = Counterexample(run, key[1], rules, match["message"] if match else "",
                                        path.stem.split("-", 1)[0])
    return found


class HtmlReport:
    """Writes the pages of one report into `out` (index.html, rules/*.html, cx/*.html)."""

    def __init__(self, matrix: Matrix, catalogue: Catalogue, out: Path) -> None:
        self.matrix = matrix
        self.catalogue = catalogue
        self.out = out.resolve()
        self.rule_pages = self._unique({rule: _slug(rule) for rule in matrix.rules})
        self.counterexamples = _counterexamples(matrix)
        self.cx_pages = {key: f"{n}-{_slug(Path(key[1]).stem)}"
                         for n, key in enumerate(self.counterexamples, start=1)}

    @staticmethod
    def _unique(names: dict[str, str]) -> dict[str, str]:
        used: set[str] = set()
        for key, name in names.items():
            candidate, n = name, 1
            while candidate.lower() in used:
                n += 1
                candidate = f"{name}-{n}"
            used.add(candidate.lower())
            names[key] = candidate
        return names

    # ------------------------------------------------------------------ pieces
    def _cx_link(self, run: RunCell, prefix: str) -> str:
        page = self.cx_pages.get((run.run, run.counterexample or ""))
        return f"{prefix}cx/{page}.html" if page else ""

    def _cell_td(self, cell: Cell) -> str:
        first = cell.first_failing
        title = f"{cell.rule} / {cell.implementation.label}: {LABELS[cell.state]}"
        if first is not None and first.message:
            title += f" - {first.message}"
        target = (self._cx_link(first, "") if first is not None else "") or \
            f"rules/{self.rule_pages[cell.rule]}.html"
        runs = f' <span class="small">{len(cell.runs)} runs</span>' if len(cell.runs) > 1 else ""
        return (f'<td class="st st-{h(cell.state)}" title="{h(title)}"><a href="{h(target)}" '
                f'style="color:inherit">{h(LABELS[cell.state])}</a>{runs}</td>')

    def _statement(self, rule_id: str) -> str:
        rule = self.catalogue.rules.get(rule_id)
        return rule.statement if rule is not None else "(not in the spec catalogue)"

    # ------------------------------------------------------------------ pages
    def index(self) -> str:
        m = self.matrix
        counts = m.counts()
        verdict_class = "st-fail" if m.failing else "st-pass"
        failing = counts["fail"] + counts["flaky"]
        verdict = f"{failing} failing rule cell(s)" if m.failing else "no failing rule"
        summary = " · ".join(f'<span class="st-{s}" style="padding:1px 6px">{h(LABELS[s])}: '
                             f"{counts[s]}</span>" for s in STATES if counts[s])
        head = "".join(f"<th>{h(i.label)}</th>" for i in m.implementations)
        rows = []
        for rule in m.rules:
            stmt = self._statement(rule)
            short = stmt if len(stmt) <= 110 else stmt[:109] + "…"
            cells = "".join(self._cell_td(m.cell(rule, i)) for i in m.implementations)
            rows.append(f'<tr><td><a href="rules/{self.rule_pages[rule]}.html">{h(rule)}</a></td>'
                        f'<td class="small" title="{h(stmt)}">{h(short)}</td>{cells}</tr>')
        runs = "".join(
            f"<tr><td>{h(r.run)}</td><td>{h(r.adapter)}</td><td>{h(r.profile)}</td>"
            f"<td>{h(r.started or '')}</td><td>{h(r.exit_code if r.exit_code is not None else '')}</td>"
            f'<td class="small">{h(r.path)}</td></tr>'
            for r in m.runs)
        bad = ""
        if m.bad:
            items = "".join(f"<li>{h(b.path)}{':' + h(b.line) if b.line else ''}: {h(b.problem)}</li>"
                            for b in m.bad)
            bad = f"<h2>Inputs excluded from the verdicts</h2><ul>{items}</ul>"
        # several versions of one implementation: the version matrix (reports/render/versions.py) is beside
        several = len({(i.adapter, i.profile) for i in m.implementations}) < len(m.implementations)
        versions = ('<p><a href="versions.html">Version matrix</a>: which releases break which rule, '
                    "and since when</p>") if several else ""
        body = (f"<h1>mqconform compliance matrix</h1>"
                f'<p><span class="verdict {verdict_class}">{h(verdict)}</span> '
                f'<span class="small">{len(m.rules)} rules x {len(m.implementations)} implementation(s), '
                f"{len(m.runs)} run(s), engine {h(m.engine)}</span></p><p>{summary}</p>{versions}"
                f"<h2>Matrix</h2><table><thead><tr><th>Rule</th><th>Statement</th>{head}</tr></thead>"
                f"<tbody>{''.join(rows)}</tbody></table>"
                '<p class="small">A cell links to the counterexample of its first failing run, or to the '
                "rule. FLAKY: some runs passed and others failed. n/a: the implementation lacks a capability "
                "the rule needs.</p>"
                f"{self._cx_list()}"
                f"<h2>Runs</h2><table><tr><th>Run</th><th>Adapter</th><th>Profile</th><th>Started</th>"
                f"<th>Exit</th><th>Path</th></tr>{runs}</table>{bad}")
        return _page("mqconform compliance matrix", body)

    def rule_page(self, rule_id: str) -> str:
        rule = self.catalogue.rules.get(rule_id)
        if rule is not None:
            meta = (f"<p>{h(rule.statement)}</p><table>"
                    f"<tr><th>Kind</th><td>{h(rule.kind)}</td></tr>"
                    f"<tr><th>Source</th><td>{h(rule.source)}</td></tr>"
                    f"<tr><th>Defined at</th><td>{h(rule.location)}</td></tr>"
                    f"<tr><th>Profiles</th><td>{h(', '.join(sorted(rule.profiles)))}</td></tr>"
                    + (f"<tr><th>Notes</th><td>{h(rule.notes)}</td></tr>" if rule.notes else "")
                    + "</table>")
        else:
            meta = "<p>This rule id is not in the spec catalogue.</p>"
        sections = []
        for impl in self.matrix.implementations:
            cell = self.matrix.cell(rule_id, impl)
            rows = "".join(
                f'<tr><td>{h(r.run)}</td><td class="st st-{h(r.state)}">'
                f"{h(LABELS.get(r.state, r.state))}</td>"
                f"<td>{h(r.source)}</td><td>{self._evidence(r)}</td></tr>" for r in cell.runs)
            first = (f"<p>First failing run: {h(cell.first_failing.run)}</p>"
                     if cell.first_failing is not None else "")
            sections.append(f'<h2>{h(impl.label)}: <span class="st-{h(cell.state)}" style="padding:1px 6px">'
                            f"{h(LABELS[cell.state])}</span></h2>{first}"
                            + (f"<table><tr><th>Run</th><th>State</th><th>From</th><th>Evidence</th></tr>"
                               f"{rows}</table>" if rows else "<p>No run checked this rule.</p>"))
        body = f"<h1>{h(rule_id)}</h1>{meta}{''.join(sections)}"
        return _page(rule_id, body, up="../")

    def _evidence(self, run: RunCell) -> str:
        parts = []
        link = self._cx_link(run, "../")
        if link:
            parts.append(f'<a href="{h(link)}">counterexample timeline</a>')
        if run.message:
            parts.append(h(run.message))
        return " - ".join(parts)

    def _cx_list(self) -> str:
        if not self.counterexamples:
            return ""
        rows = "".join(
            f'<tr><td><a href="cx/{self.cx_pages[key]}.html">{h(Path(cx.path).name)}</a></td>'
            f"<td>{h(', '.join(cx.rules))}</td><td>{h(cx.run.adapter)} ({h(cx.run.profile)})</td>"
            f'<td>{h(cx.run.run)}</td><td class="small">{h(cx.message)}</td></tr>'
            for key, cx in self.counterexamples.items())
        return (f"<h2>Counterexamples ({len(self.counterexamples)})</h2><table><tr><th>Timeline</th>"
                f"<th>Rules</th><th>Implementation</th><th>Run</th><th>Message</th></tr>{rows}</table>")

    def cx_page(self, cx: Counterexample) -> str:
        rules, run_id, scenario = cx.rules, cx.run.run, cx.scenario
        impl = f"{cx.run.adapter} ({cx.run.profile})"
        timeline = timeline_of_file(scenario)
        page_dir = self.out / "cx"
        program = scenario.parent / f"test_{scenario.stem.replace('-', '_')}.py"
        files = f'scenario <a href="{h(_href(scenario, page_dir))}">{h(scenario)}</a>'
        if program.exists():
            files += f' · pytest program <a href="{h(_href(program, page_dir))}">{h(program.name)}</a>'
        problem = f'<p class="msg">Timeline incomplete: {h(timeline.problem)}</p>' if timeline.problem else ""
        try:
            steps_text = scenario.read_text(encoding="utf-8")
        except OSError as exc:
            steps_text = f"(cannot read {scenario}: {exc.strerror})"
        replay = _REPLAY.search(steps_text)
        adapter = replay.group(1) if replay else "ADAPTER"
        rule_links = ", ".join(f'<a href="../rules/{self.rule_pages[r]}.html">{h(r)}</a>'
                               if r in self.rule_pages else h(r) for r in rules)
        body = (f"<h1>Counterexample: {rule_links}</h1>"
                f"<p>{h(impl)} · run {h(run_id)} · machine {h(cx.machine)} · profile "
                f"{h(timeline.profile)}</p>"
                f'<p class="msg">{h(cx.message or "(no message)")}</p>'
                f"<p class=\"small\">{files}. Replay: <code>mqconform scenario {h(scenario)} --adapter "
                f"{h(adapter)}</code></p>"
                "<h2>Timeline</h2><p class=\"small\">The steps replayed on the model of the claimed profile "
                "(what the implementation should have done); the check failed after the last step "
                "(shaded).</p>"
                f"{legend_html()}{problem}{render_svg(timeline, failing_step=timeline.steps)}"
                f"<h2>Scenario</h2><pre>{h(steps_text)}</pre>")
        return _page(f"counterexample {cx.path}", body, up="../")

    # ------------------------------------------------------------------ writing
    def write(self) -> Path:
        (self.out / "rules").mkdir(parents=True, exist_ok=True)
        (self.out / "cx").mkdir(exist_ok=True)
        for rule, name in self.rule_pages.items():
            (self.out / "rules" / f"{name}.html").write_text(self.rule_page(rule), encoding="utf-8")
        for key, name in self.cx_pages.items():
            (self.out / "cx" / f"{name}.html").write_text(self.cx_page(self.counterexamples[key]),
                                                          encoding="utf-8")
        index = self.out / "index.html"
        index.write_text(self.index(), encoding="utf-8")
        return index


def write_html(matrix: Matrix, catalogue: Catalogue, out: Path) -> Path:
    """Write the HTML report into `out`; returns the path of index.html."""
    return HtmlReport(matrix, catalogue, out).write()
