"""A registered deviation that names a history check (``history: ring-bound``) excuses a failing result
of that check only when every example that fails it has the entry's shape; any other example, the
wrong adapter or version, or ``--strict`` leaves it failing. The run directories are written the way
the driver records (an invoke and an ok record per operation, counters observations by the observer),
with the model's answers and a broker's pending count.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.cli import main
from mqconform.conformance.judging.deviations import DeviationError, load_registry
from mqconform.history import RunDirectory
from mqconform.operations import call_operation, process_of
from mqconform.reports.pipeline import check_runs

ENTRY = """\
deviations:
  - adapter: artemis
    versions: ">=2.18"
    measured: {fails: [2.18.0, 2.40.0], unmeasured: no release after 2.40.0 is served}
    history: ring-bound
    rules: [RING-17]
    shape: non-destructive-ring-evicts-delivered
    reason: a non-destructive ring that evicts a delivered message keeps it in its pending count
    source: https://github.com/apache/activemq-artemis/blob/2.40.0/artemis-server/src/main/java/org/apache/activemq/artemis/core/server/impl/QueueImpl.java#L4458-L4480
"""

#: a non-destructive ring of 1: m2, held by consumer c, is evicted by the send of m3 (the bug's shape)
EVICTS_HELD = [
    {"queue": {"name": "q", "ring_size": 1, "non_destructive": True}},
    {"send": {"to": "q", "id": "m1", "size": 100}},
    {"send": {"to": "q", "id": "m2", "size": 100}},
    {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
    {"receive": "c"},
    {"send": {"to": "q", "id": "m3", "size": 100}},
]
#: a push consumer holds m1 without a receive step (the artemis ci run's example, first four steps)
EVICTS_PUSHED = [
    {"queue": {"name": "q", "ring_size": 1, "non_destructive": True}},
    {"consumer": {"name": "c", "queue": "q", "window_bytes": -1, "max_unacked": 3}},
    {"send": {"to": "q", "id": "m1", "size": 100}},
    {"send": {"to": "q", "id": "m2", "size": 100}},
]
#: the same ring, nobody holds anything: an eviction that is not the bug's
EVICTS_NOTHING_HELD = [EVICTS_HELD[0], *EVICTS_HELD[1:3], {"send": {"to": "q", "id": "m3", "size": 100}}]


def write_run(path: Path, examples: Sequence[Sequence[dict[str, Any]]], *, adapter: str = "artemis",
              version: str = "2.40.0", extra_pending: int = 1) -> Path:
    """A complete run of area `ring`: each example's steps on the model, recorded as the driver records
    them, then a counters observation of q with `extra_pending` messages more than the model's."""
    run = RunDirectory(path, adapter, "artemis", {"settings": "test"})
    history = run.history("ring")
    for steps in examples:
        history.next_example()
        model = ReferenceAdapter("artemis")
        model.open("ns")
        for step in steps:
            op, args = next(iter(step.items()))
            process = process_of(op, args)
            queue = args.get("name") or args.get("to") if isinstance(args, dict) else None
            history.record("invoke", op, args, process=process, queue=queue)
            answer = call_operation(model, op, args)
            assert answer.is_ok, answer
            history.record("ok", op, answer.value, process=process, queue=queue)
        counters = dict(model.counters("q").value)
        counters["pending_count"] += extra_pending
        counters["message_count"] += extra_pending
        history.record("ok", "counters", counters, process="observer", queue="q")
    history.close()
    run.meta["versions"]["implementation"] = version
    run.finish(0)
    return path


def ring_bound(path: Path, registry_text: str | None, tmp_path: Path) -> Any:
    registry = None
    if registry_text is not None:
        file = tmp_path / "dev.yaml"
        file.write_text(registry_text)
        registry = load_registry([file])
    result = check_runs([path], engine="python", deviations=registry)
    (found,) = [c for c in result.checks if c.check == "ring-bound"]
    return found


def test_the_bugs_shape_in_every_failing_example_is_a_deviation(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [EVICTS_HELD, EVICTS_HELD])
    found = ring_bound(run, ENTRY, tmp_path)
    assert found.verdict == "deviation"
    assert "examples 1, 2" in found.detail and "keeps it in its pending count" in found.detail
    assert "dev.yaml:2" in found.detail


def test_a_message_pushed_to_a_consumer_is_held_too(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [EVICTS_PUSHED])
    assert ring_bound(run, ENTRY, tmp_path).verdict == "deviation"


def test_without_the_registry_it_fails(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [EVICTS_HELD])
    assert ring_bound(run, None, tmp_path).verdict == "fail"


def test_one_example_without_the_shape_keeps_it_failing(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [EVICTS_HELD, EVICTS_NOTHING_HELD])
    assert ring_bound(run, ENTRY, tmp_path).verdict == "fail"


def test_a_passing_example_beside_is_not_asked(tmp_path: Path) -> None:
    """Only the examples that fail the check are asked for the shape: one within the bound does not
    need it."""
    run = tmp_path / "run"
    write_run(run, [EVICTS_HELD])
    within = tmp_path / "within"
    write_run(within, [EVICTS_NOTHING_HELD], extra_pending=0)
    assert ring_bound(within, ENTRY, tmp_path).verdict == "pass"
    assert ring_bound(run, ENTRY, tmp_path).verdict == "deviation"


@pytest.mark.parametrize(("adapter", "version"), [("rabbitmq", "2.40.0"), ("artemis", "2.17.0")])
def test_another_adapter_or_release_is_not_excused(tmp_path: Path, adapter: str, version: str) -> None:
    run = write_run(tmp_path / "run", [EVICTS_HELD], adapter=adapter, version=version)
    assert ring_bound(run, ENTRY, tmp_path).verdict == "fail"


def test_report_command_applies_the_registry_and_strict_does_not(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", [EVICTS_HELD])
    file = tmp_path / "dev.yaml"
    file.write_text(ENTRY)
    base = ["report", str(run), "--engine", "python", "--deviations", str(file)]
    assert main([*base, "--out", str(tmp_path / "r1")]) == 0
    assert "known deviation" in capsys.readouterr().out
    assert main([*base, "--strict", "--out", str(tmp_path / "r2")]) == 1


@pytest.mark.parametrize(("change", "error"), [
    (("history: ring-bound", "history: ring-bounds"), r"dev\.yaml:5: unknown history check 'ring-bounds'"),
    (("history: ring-bound", "history: ring-bound\n    check: receive.id"), r"name the check with check"),
    (("rules: [RING-17]", "rules: [RING-17]\n    observed: higher"), r"observed does not apply to a history"),
    (("rules: [RING-17]", "rules: [DELIVERY-1]"), r"check ring-bound does not report DELIVERY-1"),
    (("    history: ring-bound", "    history: ring-bound\n    area: rings"), r"unknown area 'rings'"),
])
def test_history_entries_are_checked(tmp_path: Path, change: tuple[str, str], error: str) -> None:
    file = tmp_path / "dev.yaml"
    file.write_text(ENTRY.replace(*change))
    with pytest.raises(DeviationError, match=error):
        load_registry([file])
