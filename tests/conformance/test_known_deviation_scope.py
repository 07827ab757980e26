"""A registered deviation explains only the finding it names, and exploration goes on after it.

The adapters (tests/buggy_quorum.py) are the model under rabbitmq-quorum named ``rabbitmq`` at
server version 3.10.8, where mqconform/conformance/judging/deviations.yaml registers rabbitmq-server#5609 with
its bug model: one has a made-up bug of its own (after *any* nack one ready message is shown as
delivering), another is the bug model itself, a third has that and an unrelated counters bug (a drop
at the delivery limit counted killed twice). The #5609 counterexamples are the regression scenarios
the suite found on 3.10.8 (tests/adapters/scenarios). No broker is needed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.cli import main
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.driver import Step
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import Finding, MachineResult, run_machine
from mqconform.conformance.judging.deviations import load_registry
from mqconform.conformance.judging.verdict import Judge, Verdict, judge
from mqconform.reference_model.profiles import profile
from mqconform.scenario import load
from tests.buggy_quorum import CreditTwice, CreditTwiceAndMiscounts

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_5609 = [*sorted((ROOT / "tests/adapters/scenarios").glob("rabbitmq-5609-*.yaml")),
                  ROOT / "tests/adapters/scenarios/rabbitmq-quorum-closes-then-nack-at-limit.yaml"]
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
    """The acceptance test: rabbitmq 3.10.8 under rabbitmq-quorum has a registered bug model
    (rabbitmq-server#5609) that explains a finding of any check it reproduces, and a made-up bug of
    the counts (after any nack) still fails the run: the bug model's replay does not hold on it. The run
    stops at its first finding (each further one is shrunk as well: 23 s against 4 s)."""
    registered = [d for d in load_registry().deviations
                  if d.applies("rabbitmq", "3.10.8", "rabbitmq-quorum", "rabbitmq-quorum")]
    assert [d.model for d in registered] == ["rabbitmq-server-5609"]
    assert _run(tmp_path / "run", "AnyNackSkews", "--max-findings", "1") == 1
    labels = _labels(capsys.readouterr().out)
    assert [kind for kind, _ in labels] == ["FAIL"], labels
    outcomes = _outcomes(tmp_path / "run")
    assert outcomes["DELIVERY-16"] == "fail" and "deviation" not in outcomes.values()
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["exit_code"] == 1 and meta["deviations"] == {}


def _finding(scenario: Path, check: str) -> Finding:
    """A finding of `check` whose counterexample is the steps of `scenario` (expectations left out)."""
    steps = [Step(s.op, s.args) for s in load(scenario).steps if s.op is not None]
    return Finding("redelivery", check, ("DELIVERY-16",), "a difference", steps, 1.0)


@pytest.mark.parametrize("scenario", SCENARIOS_5609, ids=lambda p: p.stem)
def test_the_bug_model_explains_each_counterexample_and_nothing_else_does(scenario: Path) -> None:
    """Every counterexample the suite found for #5609 (each through another check), as a finding of
    any check, replayed on the bug model itself, is the registered bug on 3.10.8; --strict, a fixed
    release (3.11.0), a judge without the implementation at hand (nothing to replay on), the plain
    model and the bug model with an unrelated counters bug in the same example leave it a failure."""
    registry = load_registry()
    entry = next(d for d in registry.deviations if d.model == "rabbitmq-server-5609")

    def verdict(version: str = "3.10.8", strict: bool = False,
                adapter: Callable[[], ReferenceAdapter] | None = CreditTwice) -> Verdict:
        result = MachineResult("redelivery", findings=[_finding(scenario, "counters.pending_count")],
                           examples=1)
        return judge([result], "rabbitmq-quorum", Judge(registry, "rabbitmq", version, "rabbitmq-quorum",
                                                        "rabbitmq-quorum", strict=strict,
                                                        adapter_factory=adapter), ["redelivery"])

    known = verdict()
    assert known.exit_code() == 0 and known.outcomes["DELIVERY-16"] == "deviation"
    assert known.by_rule["DELIVERY-16"] is entry and entry.source.endswith("/5609")
    for other in (verdict(strict=True), verdict("3.11.0"), verdict(adapter=None),
                  verdict(adapter=lambda: ReferenceAdapter("rabbitmq-quorum")),
                  verdict(adapter=CreditTwiceAndMiscounts)):
        assert other.exit_code() == 1 and other.outcomes["DELIVERY-16"] == "fail"


def test_the_scenario_command_names_the_bug_only_on_the_bug_model(capsys: pytest.CaptureFixture[str]) -> None:
    """`mqconform scenario` on the regression scenario: the bug model itself is the registered bug
    (exit 0); with a made-up counters bug besides, a failure (exit 1)."""
    path = str(ROOT / "tests/adapters/scenarios/rabbitmq-5609-duplicate-credit.yaml")
    assert main(["scenario", path, "--adapter", "tests.buggy_quorum:CreditTwice"]) == 0
    printed = capsys.readouterr().out
    assert "known bug:" in printed and "rabbitmq-server/pull/5609" in printed
    assert printed.splitlines()[-1].startswith("DEVIATION ")
    assert main(["scenario", path, "--adapter", "tests.buggy_quorum:CreditTwiceAndMiscounts"]) == 1
    printed = capsys.readouterr().out
    assert "known bug:" not in printed and printed.splitlines()[-1].startswith("FAIL ")


def test_exploration_goes_on_after_every_finding() -> None:
    """The runner knows no deviation: each finding disables its check and the machine runs again.
    (Hypothesis does not shrink here: which check fails is the claim, not the counterexample.)"""
    hyp = settings(suite_settings.get("ci", max_examples=30), phases=[Phase.generate], database=None)
    result = run_machine(MACHINES["ring"], lambda: ReferenceAdapter("artemis"), profile("jetstream"), hyp,
                         max_reruns=3)
    assert len(result.findings) >= 2
    assert len({f.check for f in result.findings}) == len(result.findings)
