"""docs/known-bugs.md is what `mqconform spec --known-bugs` renders from the shipped registry: one row
per upstream bug, every entry of the registry in some row."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.cli import main
from mqconform.conformance.judging.verdict import load_deviations

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "known-bugs.md"


def _rows(text: str) -> list[list[str]]:
    """The table rows below the header, split into cells (an escaped ``\\|`` stays in its cell)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")][1:]
    return [[c.strip() for c in line.replace("\\|", "\0").strip("|").split(" | ")] for line in lines]


def test_the_page_is_what_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--known-bugs"]) == 0
    printed = capsys.readouterr().out
    assert PAGE.read_text(encoding="utf-8") == printed, \
        "docs/known-bugs.md is stale: `mqconform spec --known-bugs > docs/known-bugs.md`"


def test_one_row_per_upstream_bug_holding_every_entry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--known-bugs"]) == 0
    rows = _rows(capsys.readouterr().out)
    entries = load_deviations().deviations
    by_source = {row[-1]: row for row in rows}
    assert len(rows) == len(by_source) == len({e.source for e in entries})
    for entry in entries:
        row = by_source[entry.source]
        adapter, ranges, fails, holds, rules, shown, scenario = (row[0], row[2], row[3], row[4], row[5],
                                                                 row[6], row[7])
        assert entry.adapter in adapter.split(", ")
        assert f"`{entry.versions.text}`" in ranges
        assert set(entry.measured.fails) <= set(fails.split(", "))
        assert set(entry.measured.holds) <= set(holds.split(", "))
        assert set(entry.rules) <= set(rules.split(", "))
        assert (f"bug model `{entry.model}`" if entry.model is not None else f"`{entry.check}`") in shown
        assert entry.scenario is None or f"(../{entry.scenario})" in scenario
    # the entry counts shown per check add up to the registry's entries
    counted = 0
    for row in rows:
        for check in row[6].split(", "):
            counted += int(check.rsplit("(", 1)[1].rstrip(")")) if check.endswith(")") else 1
    assert counted == len(entries)


def test_the_scenarios_the_page_links_exist() -> None:
    for entry in load_deviations().deviations:
        if entry.scenario is not None:
            assert (ROOT / entry.scenario).is_file(), entry.scenario
