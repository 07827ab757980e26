"""A failure is replayed before it is reported: one whose counterexample never fails again is *flaky*
(its rules unknown, the run inconclusive: exit 3), never a pass nor a failure (tests/flaky_adapter.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqconform.cli import main


def test_a_glitch_that_does_not_replay_is_reported_flaky(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = main(["run", "--adapter", "tests.flaky_adapter:OnceWrongCounts", "--areas", "delivery",
                 "--settings", "ci", "--max-examples", "20", "--no-report", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 3, printed
    assert "FLAKY counters.message_count" in printed and "FAIL " not in printed
    outcomes = {o["rule"]: o for o in map(json.loads, (out / "outcomes.jsonl").read_text().splitlines())}
    assert "fail" not in {o["outcome"] for o in outcomes.values()}
    flaky = [o for o in outcomes.values() if o["outcome"] == "unknown" and "flaky:" in (o["message"] or "")]
    assert flaky and all(o["counterexample"] for o in flaky)  # the counterexample is kept


def test_a_glitch_in_a_receive_that_does_not_replay_is_reported_flaky(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An operation's result compares one value too (the message a receive gives): a receive that once
    answers nothing where the model delivers, and never again on replay, is flaky, not a failure."""
    code = main(["run", "--adapter", "tests.flaky_adapter:OnceLateReceive", "--areas", "delivery",
                 "--settings", "ci", "--max-examples", "20", "--no-report", "--out", str(tmp_path / "run")])
    printed = capsys.readouterr().out
    assert code == 3, printed
    assert "FLAKY " in printed and "FAIL " not in printed


def test_a_glitch_that_replays_is_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the example adapter's bug shows every time: replayed, it fails again, so it is a plain failure
    code = main(["run", "--adapter", "tests.example_adapter:FifoAdapter", "-o", "lose_returns=true",
                 "--areas", "delivery", "--settings", "ci", "--max-examples", "20", "--no-report",
                 "--out", str(tmp_path / "run")])
    printed = capsys.readouterr().out
    assert code == 1 and "FAIL " in printed and "FLAKY" not in printed
