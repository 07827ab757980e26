"""`mqconform report`: exit codes, one-line errors on bad input, and one matrix over runs of two adapters."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.cli import main
from mqconform.commands import report as report_command
from mqconform.reference_model.config import Message

RUN = ["run", "--settings", "ci", "--max-examples", "10", "--areas", "delivery", "--no-report"]


class LyingAdapter(ReferenceAdapter):
    """The model, except that every send claims the message was dropped (found at once, shrinks fast)."""

    name = "liar"

    def send(self, to: str, message: Message) -> Result:
        super().send(to, message)
        return Result.ok("dropped")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A passing run of the reference adapter and a failing run of another adapter."""
    root = tmp_path_factory.mktemp("runs")
    assert main([*RUN, "--adapter", "reference", "--out", str(root / "ref")]) == 0
    code = main([*RUN, "--adapter", f"{__name__}:LyingAdapter", "--out", str(root / "liar")])
    assert code == 1
    return {"ref": root / "ref", "liar": root / "liar"}


def report(*args: str | Path) -> int:
    return main(["report", "--engine", "python", *(str(a) for a in args)])


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.rules("DELIVERY-2")
def test_two_adapters_in_one_matrix(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert report(runs["ref"], runs["liar"], "--out", out) == 1
    doc = json.loads((out / "report.json").read_text())
    assert [i["adapter"] for i in doc["implementations"]] == ["liar", "reference"]
    states = {(c["rule"], c["implementation"].split(" ")[0]): c["state"] for c in doc["cells"]}
    assert states[("DELIVERY-2", "reference")] == "pass" and states[("DELIVERY-2", "liar")] == "fail"
    failing = [c for c in doc["cells"] if c["state"] == "fail"]
    assert failing and all(c["implementation"].startswith("liar") for c in failing)
    from_outcomes = [c for c in failing if any(r["source"] == "outcome" and r["state"] == "fail"
                                                for r in c["runs"])]
    assert from_outcomes and all(Path(c["counterexample"]).exists() for c in from_outcomes)
    cases = ET.parse(out / "junit.xml").getroot().findall("./testsuite/testcase")
    assert len(cases) == 2 * len(doc["rules"])
    index = (out / "index.html").read_text()
    assert "liar (artemis)" in index and "reference (artemis)" in index
    assert list((out / "cx").glob("*.html")) and (out / "summary.md").read_text().startswith("## mqconform")


def test_passing_run_exits_zero(runs: dict[str, Path], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert report(runs["ref"], "--out", tmp_path / "r") == 0
    assert "no failing rule" in (tmp_path / "r" / "index.html").read_text()
    assert "index.html" in capsys.readouterr().out


def test_a_folder_of_runs_is_read_like_its_runs(runs: dict[str, Path], tmp_path: Path) -> None:
    assert report(runs["ref"].parent, "--out", tmp_path / "r") == 1
    doc = json.loads((tmp_path / "r" / "report.json").read_text())
    assert len(doc["runs"]) == 2


def test_missing_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report(tmp_path / "nosuch", "--out", tmp_path / "r") == 2
    assert "nosuch" in one_line_error(capsys)
    assert not (tmp_path / "r").exists()


def test_folder_without_runs_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert report(tmp_path / "empty", "--out", tmp_path / "r") == 2
    assert one_line_error(capsys).startswith("mqconform: report:")


def _copy(run: Path, dest: Path) -> Path:
    dest.mkdir()
    for name in ("run.json", "outcomes.jsonl"):
        (dest / name).write_text((run / name).read_text())
    return dest


def test_corrupt_outcomes_exit_2_unless_ignored(runs: dict[str, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = _copy(runs["ref"], tmp_path / "bad")
    with (bad / "outcomes.jsonl").open("a") as handle:
        handle.write('{"rule": "DELIVERY-1", "outc\n')
    assert report(bad, "--out", tmp_path / "r") == 2
    assert "outcomes.jsonl" in one_line_error(capsys)
    assert report(bad, "--ignore-bad", "--out", tmp_path / "r2") == 0
    doc = json.loads((tmp_path / "r2" / "report.json").read_text())
    assert doc["bad_inputs"] and doc["bad_inputs"][0]["path"].endswith("outcomes.jsonl")


def test_incomplete_run_is_bad_input(runs: dict[str, Path], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    bad = _copy(runs["ref"], tmp_path / "incomplete")
    meta = json.loads((bad / "run.json").read_text())
    (bad / "run.json").write_text(json.dumps({**meta, "status": "incomplete"}))
    assert report(bad, "--out", tmp_path / "r") == 2
    assert "incomplete" in one_line_error(capsys)
    assert report(bad, "--ignore-bad", "--out", tmp_path / "r") == 2  # nothing usable left
    assert "no usable run" in one_line_error(capsys)


def test_unwritable_out_is_exit_2(runs: dict[str, Path], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert report(runs["ref"], "--out", blocker / "r") == 2
    assert "cannot write" in one_line_error(capsys)


class SparkStartError(RuntimeError):
    """Stands for whatever the Spark engine raises when the JVM does not come up."""


@pytest.mark.parametrize("error", [SparkStartError("Java gateway process exited"),
                                   ImportError("No module named 'pyspark'", name="pyspark")])
def test_spark_that_cannot_start_is_exit_3(runs: dict[str, Path], tmp_path: Path, error: Exception,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(report_command, "_pipeline", broken)
    assert main(["report", str(runs["ref"]), "--out", str(tmp_path / "r")]) == 3
    assert "Spark could not start" in one_line_error(capsys)


def test_usage_error_is_exit_2() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", "--engine", "flink", "x"])
    assert exit_info.value.code == 2


def test_run_ends_with_its_report(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main([*RUN[:-1], "--adapter", "reference", "--engine", "python", "--out", str(out)]) == 0
    assert (out / "report" / "index.html").exists() and (out / "report" / "junit.xml").exists()
