"""A counterexample written by write_counterexample replays: exit 1 against the broken
implementation (at the step where it diverges) and exit 0 against the reference model."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.cli import main
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.counterexamples import write_counterexample
from mqconform.conformance.exploring.driver import Violation
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.replay import replay
from mqconform.conformance.exploring.runner import Finding, run_machine
from mqconform.history import RunDirectory
from mqconform.reference_model.profiles import ARTEMIS
from mqconform.selftest.mutants import MUTANTS

MUTANT = next(m for m in MUTANTS if m.name == "cancel-to-tail")


class CancelToTailAdapter(ReferenceAdapter):
    """The cancel-to-tail mutant, loadable as --adapter module:Class."""

    def __init__(self) -> None:
        super().__init__(options=ARTEMIS, world_factory=MUTANT.world)


@pytest.fixture(scope="module")
def counterexample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Finding]:
    result = run_machine(MACHINES[MUTANT.area], MUTANT.adapter, ARTEMIS,
                         suite_settings.get("ci", database=None), max_reruns=0)
    assert result.findings, "the mutant was not caught"
    finding = result.findings[0]
    run = RunDirectory(tmp_path_factory.mktemp("run"), "reference", "artemis", {})
    write_counterexample(run, finding, "reference", {}, "artemis", 1)
    assert finding.scenario_path is not None
    return run.path / finding.scenario_path, finding


@pytest.mark.rules("RING-8")
def test_scenario_expects_the_model_after_every_step(counterexample: tuple[Path, Finding]) -> None:
    path, finding = counterexample
    steps = yaml.safe_load(path.read_text())["steps"]
    assert len(steps) == len(finding.steps)
    declared = False
    for step in steps:
        declared = declared or "queue" in step
        if declared:
            queues = step["expect"]["queue"]
            assert all({"message_count", "pending_count", "pending"} <= set(q) for q in queues)
        if "send" in step or "receive" in step:
            assert "result" in step["expect"]


@pytest.mark.rules("RING-8")
def test_replays_with_exit_1_on_the_mutant_and_0_on_the_model(counterexample: tuple[Path, Finding],
                                                              capsys) -> None:  # type: ignore[no-untyped-def]
    path, _ = counterexample
    assert main(["scenario", str(path), "--adapter", "reference"]) == 0
    capsys.readouterr()
    adapter = f"{__name__}:CancelToTailAdapter"
    assert main(["scenario", "-q", str(path), "--adapter", adapter]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"FAIL {path}: step ") and "pending" in out


def test_program_replay_agrees(counterexample: tuple[Path, Finding]) -> None:
    _, finding = counterexample
    steps = [s.as_scenario() for s in finding.steps]
    replay(adapter=ReferenceAdapter(), profile="artemis", steps=steps)
    with pytest.raises(Violation) as failure:
        replay(adapter=CancelToTailAdapter(), profile="artemis", steps=steps)
    assert "pending" in failure.value.message
