"""Shrinking is bounded by time (`--shrink-seconds`): a finding whose shrinking hit the bound is still
reported, with the smallest counterexample found until then, and says it was cut."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis.internal.conjecture import engine

from mqconform.cli import main
from mqconform.conformance.exploring.runner import shrink_budget


def _run(tmp_path: Path, *extra: str) -> int:
    code = main(["run", "--adapter", "tests.example_adapter:FifoAdapter", "-o", "lose_returns=true",
                 "--areas", "delivery", "--settings", "ci", "--max-examples", "20", "--max-findings", "1",
                 "--no-report", "--out", str(tmp_path / "run"), *extra])
    return code


def test_a_cut_shrink_still_fails_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(tmp_path, "--shrink-seconds", "0.001")
    printed = capsys.readouterr().out
    assert code == 1, printed
    assert "shrinking cut after 0.001 s" in printed
    scenario = next((tmp_path / "run" / "counterexamples").glob("*.yaml")).read_text()
    assert "shrinking cut" in scenario and "steps:" in scenario


def test_an_unhurried_shrink_is_not_marked_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(tmp_path)
    printed = capsys.readouterr().out
    assert code == 1 and "shrinking cut" not in printed, printed


def test_the_budget_is_restored_after_the_run() -> None:
    before = engine.MAX_SHRINKING_SECONDS
    with shrink_budget(5.0):
        assert engine.MAX_SHRINKING_SECONDS == 5.0
    assert before == engine.MAX_SHRINKING_SECONDS


def test_a_non_positive_budget_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--shrink-seconds", "0", "--no-report"])
    assert exit_info.value.code == 2
    assert "seconds must be positive" in capsys.readouterr().err
