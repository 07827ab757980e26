"""A registered deviation explains only the finding it names, and exploration goes on after it.

The adapters (tests/buggy_quorum.py) are the model under rabbitmq-quorum named ``rabbitmq`` at
server version 3.10.8, where mqconform/conformance/deviations.yaml registers rabbitmq-server#5609
through the pending and delivering counts: one has a made-up bug of its own (after *any* nack one
ready message is shown as delivering), another shows it only after a nack at the delivery limit (the
shape of #5609), a third has that and an unrelated delivery-count bug. No broker is needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.cli import main
from mqconform.conformance import settings as suite_settings
from mqconform.conformance.deviations import load_registry
from mqconform.conformance.registry import MACHINES
from mqconform.conformance.runner import run_machine
from mqconform.conformance.verdict import Judge, Verdict, judge
from mqconform.reference_model.profiles import profile

BUDGET = ("--areas", "redelivery", "--settings", "ci", "--max-examples", "40", "--no-report")


def _run(out: Path, adapter: str, *extra: str) -> int:
    return main(["run", "--adapter", f"tests.buggy_quorum:{adapter}", *BUDGET, "--out", str(out), *extra])


def _outcomes(out: Path) -> dict[str, str]:
    lines = (out / "outcomes.jsonl").read_text().splitlines()
    return {o["rule"]: o["outcome"] for o in map(json.loads, lines)}


def _labels(printed: str) -> list[tuple[str, str]]:
    """(FAIL|DEVIATION, check) per finding line of a run's output."""
    found = []
    for line in printed.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] in ("FAIL", "DEVIATION") and " steps: " in line:
            found.append((words[0], words[1]))
    return found


def test_an_unrelated_bug_fails_on_a_release_with_registered_deviations(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The acceptance test: rabbitmq 3.10.8 under rabbitmq-quorum has registered deviations of the
    very checks the made-up bug trips (pending and delivering counts), and the run still fails."""
    registered = [d for d in load_registry().deviations
                  if d.applies("rabbitmq", "3.10.8", "rabbitmq-quorum", "rabbitmq-quorum")]
    assert {d.check for d in registered} >= {"counters.pending_count", "counters.delivering_count"}
    assert _run(tmp_path / "run", "AnyNackSkews") == 1
    labels = _labels(capsys.readouterr().out)
    assert ("FAIL", "counters.pending_count") in labels and all(kind == "FAIL" for kind, _ in labels)
    outcomes = _outcomes(tmp_path / "run")
    assert outcomes["DELIVERY-16"] == "fail" and "deviation" not in outcomes.values()
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["exit_code"] == 1 and meta["deviations"] == {}


def test_the_registered_shape_is_a_deviation_and_another_finding_of_the_area_still_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The #5609 shape (a skew only after a nack at the delivery limit) is explained where both
    counters show it; the area explores on, and the adapter's other bug (a delivery count one too
    high) fails the run (80 derandomized examples: the shape is met after the other bug's findings)."""
    assert _run(tmp_path / "run", "KillingNackSkewsAndMiscounts", "--max-examples", "80",
                "--max-findings", "6") == 1
    labels = _labels(capsys.readouterr().out)
    assert ("DEVIATION", "counters.pending_count") in labels
    assert ("FAIL", "delivery_count") in labels
    assert {kind for kind, check in labels if check.startswith("counters.")} == {"DEVIATION"}
    outcomes = _outcomes(tmp_path / "run")
    assert outcomes["REDELIVERY-12"] == "fail" and outcomes["DELIVERY-16"] == "deviation"
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["exit_code"] == 1 and meta["deviations"]["DELIVERY-16"].startswith("deviations.yaml:")


def test_the_registered_shape_alone_passes_and_strict_or_another_release_fails_it() -> None:
    """One exploration, judged three ways by the one verdict function."""
    from tests.buggy_quorum import KillingNackSkews

    hyp = settings(suite_settings.get("ci", max_examples=120), database=None)
    adapter = KillingNackSkews()
    result = run_machine(MACHINES["redelivery"], lambda: adapter, profile("rabbitmq-quorum"), hyp,
                         max_reruns=1)
    assert [f.check for f in result.findings] == ["counters.pending_count", "counters.delivering_count"]
    registry = load_registry()

    def verdict(version: str, strict: bool = False) -> Verdict:
        return judge([result], "rabbitmq-quorum", Judge(registry, "rabbitmq", version, "rabbitmq-quorum",
                                                        "rabbitmq-quorum", strict=strict), ["redelivery"])

    known = verdict("3.10.8")
    assert known.exit_code() == 0 and known.outcomes["DELIVERY-16"] == "deviation"
    assert all(known.label(f) == "DEVIATION" for f in result.findings)
    assert known.by_rule["DELIVERY-16"].source.endswith("/5609")
    for other in (verdict("3.10.8", strict=True), verdict("3.11.0")):
        assert other.exit_code() == 1 and other.outcomes["DELIVERY-16"] == "fail"
        assert all(other.label(f) == "FAIL" for f in result.findings)


def test_exploration_goes_on_after_every_finding() -> None:
    """The runner knows no deviation: each finding disables its check and the machine runs again."""
    hyp = settings(suite_settings.get("ci", max_examples=30), phases=[Phase.generate, Phase.shrink],
                   database=None)
    result = run_machine(MACHINES["ring"], lambda: ReferenceAdapter("artemis"), profile("jetstream"), hyp,
                         max_reruns=3)
    assert len(result.findings) >= 2
    assert len({f.check for f in result.findings}) == len(result.findings)
