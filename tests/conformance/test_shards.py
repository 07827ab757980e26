"""An area explored in parts at once (`mqconform run --shards K`, mqconform.conformance.exploring.shards): the
parts share out the examples, draw from seeds of their own, write histories the report reads as one
area, and their results merge into the area's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mqconform.cli import main
from mqconform.conformance.execution import merge_parts
from mqconform.conformance.exploring.runner import Finding, MachineResult
from mqconform.conformance.exploring.shards import EXAMPLE_STRIDE, Part, parts_for


@pytest.mark.parametrize("total", [1, 2, 7, 40, 41])
@pytest.mark.parametrize("count", [1, 2, 3, 6])
def test_the_parts_share_out_every_example(total: int, count: int) -> None:
    parts = parts_for(count, total)
    assert len(parts) == min(count, total)
    shares = [part.examples(total) for part in parts]
    assert sum(shares) == total and min(shares) >= 1 and max(shares) - min(shares) <= 1


def test_each_part_draws_from_a_seed_of_its_own() -> None:
    parts = parts_for(4, 40)
    assert parts[0].seed(123, "expiry") == 123  # part 0 keeps the run's seed
    assert parts[0].seed(None, "expiry") is None  # ... and derandomized settings stay derandomized
    drawn = [part.seed(123, "expiry") for part in parts]
    assert len(set(drawn)) == 4
    fixed = [part.seed(None, "expiry") for part in parts[1:]]
    assert len(set(fixed)) == 3 and fixed == [part.seed(None, "expiry") for part in parts[1:]]
    assert [part.namespace_prefix for part in parts] == ["mqc", "mqc-p1", "mqc-p2", "mqc-p3"]
    assert [part.suffix for part in parts] == ["", ".1", ".2", ".3"]
    with pytest.raises(ValueError):
        Part(2, 2)


def _finding(check: str) -> Finding:
    return Finding("ring", check, ("RING-1",), "m", [], 1.0)


def test_the_parts_results_add_up_and_the_wall_time_is_the_longest() -> None:
    one = MachineResult("ring", findings=[_finding("a")], checked={"a", "b"}, examples=10, steps=100,
                        seconds=30.0, timing={"clock": 20.0, "suite": 10.0},
                        latency={"samples": 5, "median_ms": 1.0, "p90_ms": 2.0})
    two = MachineResult("ring", findings=[_finding("c")], checked={"c"}, examples=9, steps=80, seconds=40.0,
                        timing={"clock": 30.0, "answers": 10.0}, unknown="broker gone",
                        latency={"samples": 50, "median_ms": 3.0, "p90_ms": 4.0})
    merged = merge_parts("ring", [one, two])
    assert [f.check for f in merged.findings] == ["a", "c"]
    assert merged.checked == {"a", "b", "c"}
    assert (merged.examples, merged.steps, merged.seconds, merged.part_seconds) == (19, 180, 40.0, 70.0)
    assert merged.timing == {"clock": 50.0, "suite": 10.0, "answers": 10.0}
    assert merged.unknown == "broker gone" and merged.parts == 2
    assert merged.latency is not None and merged.latency["samples"] == 50
    assert merge_parts("ring", [one]) is one


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mqconform.cli", *args], capture_output=True, text=True,
                          timeout=600, check=False)


BASE = ("run", "--adapter", "reference", "--settings", "ci", "--max-examples", "6", "--max-findings", "2",
        "--areas", "delivery,ring", "--shards", "2")


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def parts_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One run in parts with its report, shared by the tests that read it."""
    out = tmp_path_factory.mktemp("parts") / "run"
    return out, _cli(*BASE, "--out", str(out), "--engine", "python")


def test_a_run_in_parts_writes_one_history_per_part_that_the_report_reads_as_the_area(
        parts_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, done = parts_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert "each area in 2 parts at once" in done.stdout
    names = sorted(p.name for p in (out / "history").glob("*.jsonl"))
    assert names == ["delivery.1.jsonl", "delivery.jsonl", "ring.1.jsonl", "ring.jsonl"]
    first = {r["example"] for r in _records(out / "history" / "ring.jsonl")}
    second = {r["example"] for r in _records(out / "history" / "ring.1.jsonl")}
    assert first and second and max(first) < EXAMPLE_STRIDE <= min(second)  # type: ignore[type-var]
    assert {r["machine"] for r in _records(out / "history" / "ring.1.jsonl")} == {"ring"}
    # the report (its history checks over both parts) agrees with the run: every rule passes
    report = json.loads((out / "report" / "report.json").read_text())
    states = {entry["state"] for cell in report["cells"] for entry in cell["runs"]}
    assert states <= {"pass", "not_applicable"} and "pass" in states
    meta = json.loads((out / "run.json").read_text())
    assert meta["settings"]["shards"] == 2 and meta["settings"]["workers"] == 2


def test_a_run_in_parts_on_derandomized_settings_explores_the_same_examples_again(
        parts_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    first, _ = parts_run
    again = _cli(*BASE, "--out", str(tmp_path / "again"), "--no-report")
    assert again.returncode == 0, again.stdout + again.stderr
    for name in ("ring.jsonl", "ring.1.jsonl"):
        a, b = _records(first / "history" / name), _records(tmp_path / "again" / "history" / name)
        def steps(records: list[dict[str, object]]) -> list[tuple[object, ...]]:
            return [(r["example"], r["f"], r["value"]) for r in records]

        assert steps(a) == steps(b)


def test_a_run_in_parts_still_finds_a_violation(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _cli(*BASE, "--out", str(out), "--no-report", "--profile", "rabbitmq-classic")
    assert done.returncode == 1, done.stdout + done.stderr
    assert list((out / "counterexamples").glob("*.yaml"))


def test_zero_shards_is_one_line_and_exit_2(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", "--adapter", "reference", "--shards", "0", "--no-report"]) == 2
    assert "--shards must be at least 1" in capsys.readouterr().err


def test_the_workers_of_a_killed_run_stop(tmp_path: Path) -> None:
    """A run killed outright (it cannot shut its pool down) leaves no worker exploring on."""
    import os
    import signal
    import time

    command = [sys.executable, "-m", "mqconform.cli", "run", "--adapter", "reference", "--settings",
               "thorough", "--areas", "ring", "--shards", "2", "--no-report", "--out", str(tmp_path / "run")]
    parent = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert parent.stdout is not None
    assert "each area in 2 parts" in parent.stdout.readline()
    workers: list[int] = []
    for _ in range(600):  # the workers spawn after the first line
        workers = _children(parent.pid)
        if len(workers) >= 2:
            break
        time.sleep(0.1)
    assert workers, "the run started no worker processes"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.5)
    assert not [pid for pid in workers if _alive(pid)], "workers kept exploring after their run died"


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(fields[1]) == pid and b"spawn_main" in cmdline:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
