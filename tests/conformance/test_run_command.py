"""`mqconform run`: exit codes, the run directory, and one-line errors on bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
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
    printed = capsys.readouterr().out
    # honest coverage: the rules with a verdict, absolute and relative (reference claims artemis)
    line = next(line for line in printed.splitlines() if line.startswith("rules: "))
    covered = sum(1 for o in outcomes if o["outcome"] in ("pass", "fail", "deviation"))
    assert re.search(rf"rules covered: {covered} of \d+ \(\d+ %\)$", line), line


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
    budget = ["--settings", "ci", "--max-examples", "40", "--no-report"]
    assert main(["run", "--adapter", "tests.example_adapter:FifoAdapter", *budget,
                 "--out", str(tmp_path / "ok")]) == 0
    assert main(["run", "--adapter", "tests.example_adapter:FifoAdapter", "-o", "lose_returns=true",
                 *budget, "--max-findings", "1", "--out", str(tmp_path / "bug")]) == 1


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


def _histories(out: Path) -> dict[str, list[dict[str, object]]]:
    """Per history file, its records without the run id and the timestamps."""
    found: dict[str, list[dict[str, object]]] = {}
    for path in sorted((out / "history").glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        found[path.name] = [{k: v for k, v in r.items() if k not in ("run", "time")} for r in records]
    return found


def _outcomes(out: Path) -> list[tuple[str, str, str]]:
    return sorted((o["machine"], o["rule"], o["outcome"])
                  for o in map(json.loads, (out / "outcomes.jsonl").read_text().splitlines()))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`mqconform` in a fresh process: the local modules loaded before the machines run are then
    the same for `-n 1` and `-n 2` (runner.stable_imports), whatever this pytest process loaded."""
    return subprocess.run([sys.executable, "-m", "mqconform.cli", *args], capture_output=True, text=True,
                          timeout=600, check=False)


def test_two_workers_give_the_same_outcomes_as_one(tmp_path: Path) -> None:
    base = ["run", "--adapter", "reference", "--settings", "ci", "--max-examples", "8", "--max-findings", "2",
            "--no-report", "--areas", "delivery,ring,scheduling"]
    one = _cli(*base, "--out", str(tmp_path / "one"), "-n", "1")
    two = _cli(*base, "--out", str(tmp_path / "two"), "-n", "2")
    assert (one.returncode, two.returncode) == (0, 0), one.stderr + two.stderr
    assert "2 workers" in two.stdout
    assert _outcomes(tmp_path / "one") == _outcomes(tmp_path / "two")
    assert _histories(tmp_path / "one") == _histories(tmp_path / "two")
    meta = json.loads((tmp_path / "two" / "run.json").read_text())
    assert meta["status"] == "complete" and meta["settings"]["workers"] == 2

    def summary(text: str) -> list[str]:  # the area lines, in printed order, without the wall times
        return [re.sub(r" [0-9.]+ s\b", "", " ".join(line.split()))
                for line in text.splitlines() if line.startswith("  ")]

    assert summary(one.stdout) == summary(two.stdout)
    assert [line.split()[0] for line in summary(two.stdout)] == ["delivery", "ring", "scheduling"]


def test_two_workers_find_the_same_violations(tmp_path: Path) -> None:
    args = ["--profile", "rabbitmq-classic", "--areas", "delivery,ring"]
    assert _run(tmp_path, "--out", str(tmp_path / "one"), *args) == 1
    assert _run(tmp_path, "--out", str(tmp_path / "two"), "-n", "2", *args) == 1
    assert _outcomes(tmp_path / "one") == _outcomes(tmp_path / "two")
    names = sorted(p.name for p in (tmp_path / "two" / "counterexamples").iterdir())
    assert names and names == sorted(p.name for p in (tmp_path / "one" / "counterexamples").iterdir())


def _dev(out: Path, *extra: str) -> int:
    return main(["run", "--adapter", "reference", "--settings", "dev", "--max-examples", "6",
                 "--areas", "delivery,redelivery", "--no-report", "--out", str(out), *extra])


def test_the_same_seed_explores_the_same_examples(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert _dev(tmp_path / "a", "--seed", "12345") == 0
    assert "seed 12345" in capsys.readouterr().out.splitlines()[0]
    assert _dev(tmp_path / "b", "--seed", "12345") == 0
    assert _dev(tmp_path / "c", "--seed", "54321") == 0
    a, b, c = (_histories(tmp_path / x) for x in "abc")
    assert a == b
    assert a != c
    assert json.loads((tmp_path / "a" / "run.json").read_text())["seed"] == 12345


def test_without_a_seed_one_is_drawn_recorded_and_replays(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert _dev(tmp_path / "a") == 0
    seed = json.loads((tmp_path / "a" / "run.json").read_text())["seed"]
    assert isinstance(seed, int)
    assert f"seed {seed}" in capsys.readouterr().out
    assert _dev(tmp_path / "b", "--seed", str(seed)) == 0
    assert _histories(tmp_path / "a") == _histories(tmp_path / "b")


def test_areas_that_cannot_run_say_what_they_need(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "run"
    code = main(["run", "--adapter", "tests.example_adapter:FifoAdapter", "--settings", "ci",
                 "--max-examples", "5", "--areas", "delivery,ring,scheduling", "--no-report",
                 "--out", str(out)])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split() == ["ring", "n/a", "(needs:", "ring)"] for line in lines)
    assert any(line.strip().startswith("scheduling  n/a (needs: scheduling") for line in lines)
    assert not any("0 examples" in line for line in lines)
    not_run = json.loads((out / "run.json").read_text())["not_run"]
    # rabbitmq-classic has ring queues, the example adapter does not; it has no scheduling at all
    assert not_run["ring"] == {"needs": ["ring"], "not_in_profile": [], "adapter_lacks": ["ring"]}
    assert "scheduling" in not_run["scheduling"]["not_in_profile"]
    records = map(json.loads, (out / "outcomes.jsonl").read_text().splitlines())
    messages = {o["rule"]: o["message"] for o in records if o["outcome"] == "not_applicable"}
    assert any("applies but not covered (capability missing: ring)" in (m or "") for m in messages.values())
    assert any("not in the claimed profile" in (m or "") for m in messages.values())
    # the report keeps the distinction (JUnit <skipped> message)
    assert main(["report", str(out), "--engine", "python", "--out", str(tmp_path / "report")]) == 0
    junit = (tmp_path / "report" / "junit.xml").read_text()
    assert ('skipped message="n/a: area ring not run: applies but not covered (capability missing: ring)"'
            in junit)


@pytest.mark.parametrize(("args", "message"), [
    (["-n", "0"], "-n must be at least 1"),
    (["-n", "many"], "-n expects a number or auto"),
])
def test_bad_worker_count_is_one_line_and_exit_2(args: list[str], message: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", "--adapter", "reference", "--no-report", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_worker_process_that_dies_is_a_fault_not_a_traceback(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["run", "--adapter", "tests.conformance.test_run_command:DiesInWorkers", "--settings", "ci",
                 "--max-examples", "3", "--areas", "delivery,redelivery", "-n", "2", "--no-report",
                 "--out", str(tmp_path / "run")])
    captured = capsys.readouterr()
    assert code == 3
    assert "the worker process failed: BrokenProcessPool" in captured.out
    assert "Traceback" not in captured.out + captured.err
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "incomplete"


class DiesInWorkers:
    """The example adapter, except that it kills the process it is built in when that is a worker."""

    def __new__(cls, **options: object) -> object:
        import multiprocessing
        import os

        from tests.example_adapter import FifoAdapter

        if multiprocessing.parent_process() is not None:
            os._exit(1)
        return FifoAdapter(**options)  # type: ignore[arg-type]
def test_a_failure_line_names_only_the_claimed_profiles_rules() -> None:
    from mqconform.conformance.judging.rules import failure_rules, profile_rule_ids

    rules = ("REDELIVERY-11", "DELIVERY-1", "REDELIVERY-14")
    assert profile_rule_ids(rules, "artemis") == ("REDELIVERY-11", "DELIVERY-1")
    assert profile_rule_ids(rules, "rabbitmq-quorum") == ("DELIVERY-1", "REDELIVERY-14")
    assert failure_rules(("REDELIVERY-11",), "jetstream") == "REDELIVERY-11"  # never an empty list
