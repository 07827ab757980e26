"""`mqconform scenario`: the seeds' worked examples pass, broken files and mismatches are reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mqconform.cli import main
from mqconform.spec import load_catalogue

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "spec" / "examples").glob("*.yaml"))
RING = """\
profile: artemis
steps:
  - queue: {name: q, ring_size: 3}
  - consumer: {name: c, queue: q}
  - send: {to: q, id: 1}
  - send: {to: q, id: 2}
  - send: {to: q, id: 3}
  - send: {to: q, id: 4}
    expect: {result: accepted, queue: {message_count: 4, delivering_count: 4}}
  - close: c
    expect: {queue: {pending: [2, 3, 4], replaced: 1}}
"""


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_example_has_the_header_lines() -> None:
    assert len(EXAMPLES) >= 15
    known = {rule.id for rule in load_catalogue()}
    for path in EXAMPLES:
        lines = path.read_text().splitlines()
        assert lines[0].startswith("# ") and lines[1].startswith("# source: "), path.name
        ids = re.findall(r"[A-Z]+-\d+", lines[2])
        assert lines[2].startswith("# rules: ") and ids and set(ids) <= known, path.name


@pytest.mark.rules("RING-13", "SCHED-14", "REDELIVERY-29", "REDELIVERY-30", "REDELIVERY-11",
                   "DELIVERY-13", "THROTTLE-6", "ADMISSION-10", "STORAGE-5", "PAGING-9", "RING-8",
                   "REDELIVERY-7", "REDELIVERY-5", "SCHED-4", "SCHED-3", "ADMISSION-6", "ADMISSION-8",
                   "STORAGE-10", "STORAGE-7", "STORAGE-8", "PAGING-3")
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_passes_on_the_model(path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["scenario", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"PASS {path}" in out and "not applicable" not in out


@pytest.mark.rules("PAGING-10", "PAGING-11")
def test_close_with_held_paged_messages_reads_nothing_past_the_budget(capsys) -> None:  # type: ignore[no-untyped-def]
    """The model side of docs/findings/artemis-close-return-overreads-page.md: m4..m6, read from the page
    and held, return on a close and fill the read budget again, so m7 stays in the page (a browse after
    a new consumer takes them again lists m4..m6 first). Artemis 2.40.0 over-reads m7 in some runs."""
    findings = Path(__file__).resolve().parents[2] / "docs" / "findings"
    path = findings / "artemis-close-return-overreads-page.yaml"
    assert main(["scenario", str(path)]) == 0
    assert f"PASS {path}: 11 steps, 3 expectations held" in capsys.readouterr().out


def test_quiet_prints_only_verdicts(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["scenario", "-q", str(_write(tmp_path, RING))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("PASS ") and "6 expectations held" not in lines[0]


@pytest.mark.rules("RING-13")
def test_mismatch_exits_1_with_step_and_values(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = _write(tmp_path, RING.replace("pending: [2, 3, 4]", "pending: [1, 2, 3]"))
    assert main(["scenario", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {path}: step 7 (close): queue q pending: expected [1, 2, 3], actual [2, 3, 4]" in out


def test_result_mismatch(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = _write(tmp_path, RING.replace("result: accepted", "result: dropped"))
    assert main(["scenario", "-q", str(path)]) == 1
    assert "step 6 (send): result: expected dropped, actual accepted" in capsys.readouterr().out


@pytest.mark.parametrize(("text", "line", "message"), [
    ("steps: [{queue: {name: q}}, {sned: {to: q, id: 1}}]\n", 1, "unknown operation 'sned'"),
    ("profile: artemis\nsteps:\n  - queue: {name: q, ring: 3}\n", 3, "unknown key 'ring' in queue"),
    ("steps:\n  - queue: {name: q}\n  - send: {to: q}\n", 3, "missing key 'id' in send"),
    ("steps:\n  - queue: {name: q}\n  - receive: c\n", 3, "unknown consumer 'c'"),
    ("profile: nosuch\nsteps: [{advance: 1}]\n", 1, "unknown profile 'nosuch'"),
    ("steps:\n  - advance: -5\n", 2, "time only moves forward"),
    ("steps:\n  - queue: {name: a}\n  - queue: {name: b}\n  - expect: {queue: {pending_count: 0}}\n", 4,
     "name the queue"),
    ("steps:\n  - queue: {name: a}\n  - expect: {result: 1}\n", 3, "needs an operation"),
    ("steps:\n  - queue: {name: a}\n    expect: {queue: {pending_count: many}}\n", 3, "must be an integer"),
    ("steps:\n  - queue: {name: a}\n  - send: {to: a, id: 1}\n    advance: 5\n", 4,
     "more than one operation"),
    ("options: {no_such_option: 1}\nsteps: [{advance: 1}]\n", 1, "unknown model option"),
    ("steps: [{queue: {name: q}\n", 2, "malformed YAML"),
    ("", 1, "empty file"),
])
def test_invalid_file_exits_2_with_file_and_line(tmp_path: Path, capsys, text: str, line: int,  # type: ignore[no-untyped-def]
                                                 message: str) -> None:
    path = _write(tmp_path, text)
    assert main(["scenario", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"mqconform: {path}:{line}: ") and message in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_model_misuse_at_run_time_is_invalid(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    text = "steps:\n  - queue: {name: q}\n  - send: {to: q, id: 1}\n  - send: {to: q, id: 1}\n"
    path = _write(tmp_path, text)
    assert main(["scenario", "-q", str(path)]) == 2
    assert "step 3 (send): line 4: the model rejects send" in capsys.readouterr().out


def test_missing_file_and_bad_usage(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["scenario", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read the file" in capsys.readouterr().err
    ring = str(_write(tmp_path, RING))
    assert main(["scenario", ring, "--profile", "nosuch"]) == 2
    assert main(["scenario", ring, "--adapter", "nosuch"]) == 2
    assert "unknown adapter 'nosuch'" in capsys.readouterr().err


@pytest.mark.rules("RING-13")
def test_json_scenarios(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import yaml

    data = yaml.safe_load(RING)
    path = _write(tmp_path, json.dumps(data, indent="\t"), "s.json")
    assert main(["scenario", "-q", str(path)]) == 0
    broken = _write(tmp_path, '{"steps": [\n  {"advance": 1},\n  ]\n}', "b.json")
    assert main(["scenario", str(broken)]) == 2
    assert f"{broken}:3: malformed JSON" in capsys.readouterr().err


@pytest.mark.rules("RING-14")
def test_profile_option_changes_the_model(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = _write(tmp_path, RING.replace("ring_size: 3", "ring_size: 3").replace("profile: artemis\n", ""))
    # RabbitMQ classic: requeue then drop head keeps 2, 3, 4 as well; its bound counts ready messages
    assert main(["scenario", "-q", str(path), "--profile", "rabbitmq-classic"]) == 0
    jetstream = main(["scenario", "-q", str(path), "--profile", "jetstream"])
    assert jetstream == 1  # max_msgs counts stored messages: the 4th send evicts an unacked one
    assert "FAIL" in capsys.readouterr().out


def test_options_key_applies_to_the_profile(tmp_path: Path) -> None:
    text = RING.replace("profile: artemis\n", "profile: artemis\noptions: {return_placement: tail}\n")
    assert main(["scenario", "-q", str(_write(tmp_path, text))]) == 1


def test_unobservable_expectations_are_not_applicable_unless_strict(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # the FIFO example adapter cannot observe delivery counts or pending order
    text = ("steps:\n  - queue: {name: q}\n  - consumer: {name: c, queue: q, window_bytes: 0}\n"
            "  - send: {to: q, id: m1}\n    expect: {result: accepted, queue: {pending: [m1]}}\n"
            "  - receive: c\n    expect: {result: m1, delivery_count: {id: m1, count: 1}}\n")
    path = str(_write(tmp_path, text))
    adapter = "tests.example_adapter:FifoAdapter"
    assert main(["scenario", path, "--adapter", adapter]) == 0
    out = capsys.readouterr().out
    assert "2 expectations held, 2 not applicable" in out and "pending_order" in out
    assert main(["scenario", "-q", path, "--adapter", adapter, "--strict"]) == 1
    assert "[strict]" in capsys.readouterr().out


def test_unsupported_operation_is_not_applicable(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = str(_write(tmp_path, "steps:\n  - queue: {name: q, ring_size: 3}\n"))
    assert main(["scenario", "-q", path, "--profile", "hornetq"]) == 0
    assert main(["scenario", "-q", path, "--profile", "hornetq", "--strict"]) == 1
    assert "not supported" in capsys.readouterr().out


def test_several_files_exit_with_the_worst_code(tmp_path: Path) -> None:
    good = str(_write(tmp_path, RING, "good.yaml"))
    bad = str(_write(tmp_path, RING.replace("replaced: 1", "replaced: 2"), "bad.yaml"))
    assert main(["scenario", "-q", good, bad, good]) == 1


def test_each_step_prints_the_pending_order(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["scenario", str(_write(tmp_path, RING))]) == 0
    out = capsys.readouterr().out
    assert "q order: [1, 2, 3, 4]" not in out  # all four were dispatched to c
    assert "q order: [2, 3, 4]" in out and "q order: []" in out


@pytest.mark.rules("REDELIVERY-8")
def test_with_an_adapter_the_first_difference_shows_model_and_implementation(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    text = ("profile: rabbitmq-classic\nsteps:\n  - queue: {name: q}\n"
            "  - consumer: {name: c, queue: q, window_bytes: 0}\n  - send: {to: q, id: m1}\n"
            "  - receive: c\n  - close: c\n    expect: {queue: {pending_count: 1}}\n")
    path = str(_write(tmp_path, text))
    assert main(["scenario", path, "--adapter", "tests.example_adapter:FifoAdapter",
                 "-o", "lose_returns=true"]) == 1
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "implementation" in line)
    assert "model" in header
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("q pending_count")]
    assert rows == [["q", "pending_count", "1", "0", "<-"]]


@pytest.mark.rules("DELIVERY-8")
def test_batch_operations_run_their_single_operations(tmp_path: Path) -> None:
    text = ("steps:\n  - queue: {name: q}\n  - consumer: {name: c, queue: q, window_bytes: 0}\n"
            "  - send_batch: {to: q, ids: [1, 2, 3]}\n"
            "    expect: {result: [accepted, accepted, accepted], queue: {pending: [1, 2, 3]}}\n"
            "  - receive_batch: {consumer: c, count: 4}\n    expect: {result: [1, 2, 3, null]}\n"
            "  - ack_batch: {consumer: c, ids: [1, 3, 3]}\n"
            "    expect: {result: [ok, ok, failed], queue: {message_count: 1, acknowledged: 2}}\n")
    assert main(["scenario", "-q", str(_write(tmp_path, text))]) == 0


def test_an_unsupported_operation_ends_the_scenario_as_na_never_pass(capsys) -> None:  # type: ignore[no-untyped-def]
    """The artemis model has no per-subject limits: the declaration is refused as unsupported, nothing
    after it runs, so the verdict is N/A (exit 0, not a failure) and never PASS; --strict fails it."""
    path = Path(__file__).resolve().parents[2] / "spec" / "examples" / "jetstream-max-msgs-per-subject.yaml"
    assert main(["scenario", "-q", "--profile", "artemis", str(path)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"N/A {path}: step 1 (queue): queue is not supported"), line
    assert "the rest was not run (after 0 steps, 0 held)" in line
    assert main(["scenario", "-q", "--strict", "--profile", "artemis", str(path)]) == 1
    assert capsys.readouterr().out.startswith("FAIL ")


def test_versions_needs_a_release_line(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["scenario", "--versions", "all", str(EXAMPLES[0])]) == 2
    assert "scenario --versions starts each release's own server" in capsys.readouterr().err
    assert main(["scenario", "--adapter", "redis", "--versions", "5.0", str(EXAMPLES[0])]) == 2
    assert "redis: no release '5.0' (known: 6.2, 7.0, 9.1)" in capsys.readouterr().err


def test_every_result_a_machine_compares_is_in_the_counterexample() -> None:
    """A counterexample replays what the run compared: each operation whose answer a conformance
    machine compares (``d.both(op, ..., compare=...)``) gets its model result written into the file
    (operations.COMPARED), or the replay of a fetch or a join the run failed would say PASS."""
    from mqconform.operations import COMPARED

    root = Path(__file__).resolve().parents[2] / "mqconform" / "conformance"
    compared = set()
    for source in root.rglob("*.py"):
        compared |= set(re.findall(r'both\("([a-z_]+)"[^\n]*compare=', source.read_text()))
    assert {"fetch", "join", "purge", "send", "ack", "nack"} <= compared
    assert compared - {"consumer"} <= COMPARED, sorted(compared - COMPARED)
