"""`mqconform run`: exit codes, the run directory, and one-line errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqconform.cli import main


def _run(tmp_path: Path, *extra: str) -> int:
    return main(["run", "--adapter", "reference", "--settings", "ci", "--max-examples", "15",
                 "--max-findings", "2", "--no-report", *extra])


def test_reference_run_exits_zero_and_writes_a_complete_run_directory(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "run"
    assert _run(tmp_path, "--out", str(out)) == 0
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "complete" and meta["exit_code"] == 0
    outcomes = [json.loads(line) for line in (out / "outcomes.jsonl").read_text().splitlines()]
    assert outcomes and all(o["outcome"] in ("pass", "not_applicable") for o in outcomes)
    assert any(o["outcome"] == "pass" for o in outcomes)
    histories = list((out / "history").glob("*.jsonl"))
    assert len(histories) >= 5
    first = json.loads(histories[0].read_text().splitlines()[0])
    assert {"index", "time", "process", "type", "f", "value", "run", "example", "machine"} <= set(first)
    assert "rules covered:" in capsys.readouterr().out


def test_profile_mismatch_reports_violations_with_counterexamples(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code = _run(tmp_path, "--out", str(out), "--profile", "rabbitmq-classic", "--areas", "delivery")
    assert code == 1
    scenarios = list((out / "counterexamples").glob("*.yaml"))
    programs = list((out / "counterexamples").glob("test_*.py"))
    assert scenarios and programs
    failed = [json.loads(x) for x in (out / "outcomes.jsonl").read_text().splitlines()]
    assert any(o["outcome"] == "fail" and o["counterexample"] for o in failed)


def test_counterexample_program_fails_as_a_plain_pytest_test(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(tmp_path, "--out", str(out), "--profile", "rabbitmq-classic", "--areas", "delivery")
    program = next((out / "counterexamples").glob("test_*.py"))
    namespace: dict[str, object] = {}
    exec(compile(program.read_text(), str(program), "exec"), namespace)
    with pytest.raises(AssertionError):
        namespace["test_counterexample"]()  # type: ignore[operator]


@pytest.mark.parametrize(("args", "message"), [
    (["--adapter", "nosuch"], "unknown adapter 'nosuch'"),
    (["--adapter", "not a target:"], "malformed adapter"),
    (["--adapter", "tests.example_adapter:Missing"], "has no Missing"),
    (["--adapter", "tests.conformance.test_run_command:NotAnAdapter"], "does not meet the contract"),
    (["--adapter", "reference", "--profile", "nosuch"], "unknown profile 'nosuch'"),
    (["--adapter", "reference", "--areas", "ring,nosuch"], "unknown area 'nosuch'"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", "--no-report", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_unwritable_out_dir_is_exit_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", "--adapter", "reference", "--no-report", "--out", str(blocker / "run")]) == 2
    assert "cannot write the run directory" in capsys.readouterr().err


def test_unreachable_implementation_is_exit_3(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["run", "--adapter", "tests.conformance.test_run_command:DownAdapter", "--no-report",
                 "--out", str(tmp_path / "run")])
    assert code == 3
    assert "cannot reach" in capsys.readouterr().err


def test_outside_example_adapter_runs_and_a_bug_in_it_is_found(tmp_path: Path) -> None:
    budget = ["--settings", "ci", "--max-examples", "40", "--max-findings", "2", "--no-report"]
    assert main(["run", "--adapter", "tests.example_adapter:FifoAdapter", *budget,
                 "--out", str(tmp_path / "ok")]) == 0
    assert main(["run", "--adapter", "tests.example_adapter:FifoAdapter", "-o", "lose_returns=true",
                 *budget, "--out", str(tmp_path / "bug")]) == 1


class NotAnAdapter:
    name = "x"
    profile = "artemis"
    capabilities = frozenset()


class DownAdapter:
    """Meets the contract but its broker is down."""

    name = "down"
    profile = "artemis"
    capabilities = frozenset({"queues"})

    def open(self, namespace: str) -> None:
        from mqconform.adapters.contract import AdapterError

        raise AdapterError("connection refused on 127.0.0.1:1")

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return lambda *a, **k: None
