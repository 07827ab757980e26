"""The version matrix page (reports/render/versions.py): releases oldest first, the failing ones, the first
and the last, and failing cells linked to their counterexample."""

from __future__ import annotations

import re
from pathlib import Path

from mqconform.reports.api import RunInfo
from mqconform.reports.render.matrix import Cell, Implementation, Matrix, RunCell
from mqconform.reports.render.versions import version_key, version_lines, write_versions
from mqconform.spec import load_catalogue

VERSIONS = ("2.11.3", "2.10.25", "2.9.0", "2.15.1")  # deliberately out of order
FAILS_ON = {"2.9.0", "2.10.25"}


def _matrix(tmp_path: Path) -> Matrix:
    runs, cells = [], {}
    impls = tuple(Implementation("nats", "jetstream", v) for v in VERSIONS)
    for impl in impls:
        run = RunInfo(f"run-{impl.version}", "nats", "jetstream", str(tmp_path / impl.version), "complete",
                      versions={"implementation": impl.version})
        runs.append(run)
        fails = impl.version in FAILS_ON
        cx = "counterexamples/ring-1-counters_message_count.yaml" if fails else None
        if cx:
            (tmp_path / impl.version / "counterexamples").mkdir(parents=True)
            (tmp_path / impl.version / cx).write_text("profile: jetstream\nsteps: []\n")
        rc = RunCell(run.run, "", "fail" if fails else "pass", "ring", cx, run.path, "expected 2, gave 1")
        cells[("RING-5", impl)] = Cell("RING-5", impl, rc.state, (rc,), rc if fails else None)
        ok = RunCell(run.run, "", "pass", "delivery", None, run.path)
        cells[("DELIVERY-1", impl)] = Cell("DELIVERY-1", impl, "pass", (ok,))
        na = RunCell(run.run, "", "not_applicable", "paging", None, run.path)
        cells[("PAGING-1", impl)] = Cell("PAGING-1", impl, "not_applicable", (na,))
    return Matrix(("DELIVERY-1", "RING-5", "PAGING-1"), tuple(sorted(impls)), cells, tuple(runs))


def test_releases_are_ordered_and_the_first_and_last_failing_are_named(tmp_path: Path) -> None:
    (line,) = version_lines(_matrix(tmp_path))
    assert [i.version for i in line.releases] == ["2.9.0", "2.10.25", "2.11.3", "2.15.1"]
    rows = {row.rule: row for row in line.rows}
    assert set(rows) == {"DELIVERY-1", "RING-5"}  # PAGING-1 applies to no release
    assert rows["RING-5"].failing == ("2.9.0", "2.10.25")
    assert (rows["RING-5"].first, rows["RING-5"].last) == ("2.9.0", "2.10.25")
    assert rows["DELIVERY-1"].failing == () and rows["DELIVERY-1"].first == ""


def test_the_page_links_failing_cells_to_their_counterexample(tmp_path: Path) -> None:
    out = tmp_path / "report"
    out.mkdir()
    page = write_versions(_matrix(tmp_path), load_catalogue(), out)
    assert page is not None
    html = page.read_text()
    ring = html[html.index(">RING-5<"):].split("</tr>", 1)[0]
    links = re.findall(r'<td class="st st-(\w+)"[^>]*><a href="([^"]+)"', ring)
    assert [state for state, _ in links] == ["fail", "fail", "pass", "pass"]
    assert all(href.startswith("cx/") for _, href in links[:2])
    assert all(href.startswith("rules/") for _, href in links[2:])
    assert "<td>2.9.0, 2.10.25</td><td>2.9.0</td><td>2.10.25</td>" in ring
    md = (out / "versions.md").read_text()
    assert "| RING-5 | [❌ FAIL](" in md and "| 2.9.0, 2.10.25 | 2.9.0 | 2.10.25 |" in md


def test_one_version_per_implementation_writes_no_page(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path)
    one = Matrix(matrix.rules, matrix.implementations[:1], matrix.cells, matrix.runs[:1])
    assert write_versions(one, load_catalogue(), tmp_path) is None


def test_version_order_reads_the_numbers() -> None:
    ordered = ["6.2.14", "7.0.15", "valkey-9.1.2"]
    assert sorted(["valkey-9.1.2", "7.0.15", "6.2.14"], key=version_key) == ordered
    assert sorted(["2.10.0", "2.9.10", "2.10.0-RC.1"], key=version_key)[0] == "2.9.10"
