"""A registered bug is an executable variant of the model (mqconform.reference_model.bugs): a finding is
explained by it only when its counterexample, replayed on the implementation against the model with
that bug, holds at every step under every observation.

The adapters (tests/buggy_artemis.py) are the artemis model named ``artemis`` at 2.40.0: one with
ARTEMIS-4985's bug model switched on, one with a made-up bug, one with both. No broker is needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.cli import main
from mqconform.conformance.exploring.driver import Step
from mqconform.conformance.exploring.runner import Finding, MachineResult, merge_outcomes
from mqconform.conformance.judging.bug_replay import holds_under
from mqconform.conformance.judging.deviations import Deviation, load_registry
from mqconform.conformance.judging.known_scenarios import known_bugs
from mqconform.conformance.judging.verdict import Judge
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import profile
from mqconform.scenario import annotate, from_data, run_scenario
from tests.buggy_artemis import IgnoresPriority, MiscountsAfterClose, WithBug, WithBugs
from tests.conformance.bug_model_support import scenario_steps

ROOT = Path(__file__).resolve().parents[2]
PRIORITY = ROOT / "docs/findings/artemis-priority-after-cancel.yaml"
TWO_BUGS = ROOT / (
    "tests/adapters/scenarios/artemis-non-destructive-last-value-two-fires-then-"
    "prune-repeats.yaml")
REPEATS = "artemis-non-destructive-ring-repeats-replaced"
REOFFERS = "artemis-non-destructive-scheduled-reoffers"
SHIPPED = load_registry()


def _steps(path: Path) -> list[dict[str, Any]]:
    return scenario_steps(path)


def _entry(model: str) -> Deviation:
    return next(d for d in SHIPPED.deviations if d.model == model)


def _finding(steps: list[dict[str, Any]], check: str = "receive.id") -> Finding:
    return Finding("delivery", check, ("DELIVERY-3",), "a difference", [Step(*next(iter(s.items())))
                                                                          for s in steps], 1.0)


def _fails_claimed(adapter: ReferenceAdapter, steps: list[dict[str, Any]]) -> bool:
    scenario = from_data({"profile": "artemis", "steps": annotate(steps, profile("artemis"))}, "t")
    return run_scenario(scenario, adapter, namespace="t").verdict == "fail"


def test_the_bug_model_gives_the_brokers_answers_where_the_model_does_not() -> None:
    """ARTEMIS-4985's bug model fails the regression scenario as 2.37.0 to 2.56.0 do (m2, m3, m4, then
    m5), and so the plain-send variant of the report (m3 before m5); the claimed model holds."""
    steps = _steps(PRIORITY)
    claimed = profile("artemis")
    with_bug = BUGS["artemis-4985"].enable(claimed)
    assert not claimed.stale_priority_iterators and with_bug.stale_priority_iterators
    assert annotate(steps, claimed)[-1]["expect"]["result"] == ["m5", "m2", "m3", "m4"]
    assert annotate(steps, with_bug)[-1]["expect"]["result"] == ["m2", "m3", "m4", "m5"]
    plain: list[dict[str, Any]] = [
             {"queue": {"name": "q"}}, {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
             {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"], "size": 100}},
             {"send": {"to": "q", "id": "m4", "size": 100, "priority": 5}},
             {"receive": "c"}, {"receive": "c"}, {"receive": "c"},
             {"send": {"to": "q", "id": "m5", "size": 100, "priority": 5}}, {"receive": "c"}]
    assert annotate(plain, claimed)[-1]["expect"]["result"] == "m5"
    assert annotate(plain, with_bug)[-1]["expect"]["result"] == "m3"
    # without the cancel (m1 acknowledged instead) the last add is at 4, m5's add resets the iterators
    acked: list[dict[str, Any]] = [
             {"queue": {"name": "q"}}, {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
             {"send": {"to": "q", "id": "m1", "size": 100, "priority": 5}},
             {"send_batch": {"to": "q", "ids": ["m2", "m3", "m4"], "size": 100}},
             {"receive": "c"}, {"ack": {"consumer": "c", "id": "m1"}},
             {"send": {"to": "q", "id": "m5", "size": 100, "priority": 5}},
             {"receive_batch": {"consumer": "c", "count": 4}}]
    assert annotate(acked, with_bug)[-1]["expect"] == annotate(acked, claimed)[-1]["expect"]


def test_a_fake_broker_with_the_bug_is_explained_and_one_with_another_bug_is_not() -> None:
    """The regression scenario's steps as a finding: explained on the bug model itself, on 2.40.0 only,
    never under --strict nor without a replay; a made-up bug (priorities ignored) or the bug with a
    made-up counters bug in the same example fails."""
    steps = _steps(PRIORITY)
    entry = _entry("artemis-4985")

    def explained(adapter: Any, version: str = "2.40.0", strict: bool = False) -> Deviation | None:
        finding = _finding(steps)
        assert _fails_claimed(adapter, steps)
        factory = (lambda: adapter) if adapter is not None else None
        return Judge(SHIPPED, "artemis", version, "artemis", "artemis", strict=strict,
                     adapter_factory=factory).deviation(finding)

    assert explained(WithBug()) is entry
    assert explained(WithBug(), "2.35.0") is None
    assert explained(WithBug(), strict=True) is None
    assert Judge(SHIPPED, "artemis", "2.40.0", "artemis", "artemis").deviation(_finding(steps)) is None
    assert explained(IgnoresPriority()) is None
    assert explained(MiscountsAfterClose()) is None
    assert not holds_under(steps, "artemis-4985", profile("artemis"), MiscountsAfterClose)


def test_scenario_names_the_bug_only_where_its_model_replays() -> None:
    """`mqconform scenario`'s answer (known_scenarios.known_bugs) with the adapter at hand: the bug
    model decides, on any file; another bug's adapter only looks alike."""
    steps = _steps(PRIORITY)
    args = ("artemis", "2.40.0", "artemis", "artemis")
    elsewhere = Path("/elsewhere/copy.yaml")
    assert known_bugs(SHIPPED, elsewhere, steps, *args, implementation=WithBug()).explained_by is \
        _entry("artemis-4985")
    other = known_bugs(SHIPPED, PRIORITY, steps, *args, implementation=IgnoresPriority())
    assert other.explained_by is None and _entry("artemis-4985") in other.alike


def test_the_scenario_command_replays_the_bug_model(capsys: pytest.CaptureFixture[str]) -> None:
    """`mqconform scenario` hands its adapter to the registry: on the bug model itself the regression
    scenario is the registered bug (exit 0); on the bug model with a made-up counters bug as well it
    fails (the unrelated bug in the same example is not excused)."""
    assert main(["scenario", str(PRIORITY), "--adapter", "tests.buggy_artemis:WithBug"]) == 0
    printed = capsys.readouterr().out
    assert "known bug:" in printed and printed.splitlines()[-1].startswith("DEVIATION ")
    assert main(["scenario", str(PRIORITY), "--adapter", "tests.buggy_artemis:MiscountsAfterClose"]) == 1
    printed = capsys.readouterr().out
    assert "known bug:" not in printed and printed.splitlines()[-1].startswith("FAIL ")


def test_with_workers_the_replays_run_on_one_adapter_built_when_first_needed() -> None:
    """`mqconform run -n N`: the probe is stopped while the workers explore, so a bug model's replay
    (verdict.Judge) gets one adapter built on its first call and shut down with the run."""
    from mqconform.commands._common import Replayer

    built: list[WithBug] = []

    def build() -> WithBug:
        built.append(WithBug())
        return built[-1]

    probe = WithBug()
    assert Replayer(probe, build)() is probe and not built  # one worker: the probe
    replayer = Replayer(None, build)
    replayer.shutdown()
    assert not built  # never needed, never built
    first = replayer()
    assert replayer() is first and built == [first]
    replayer.shutdown()


def test_a_replay_that_cannot_reach_the_implementation_explains_nothing() -> None:
    """An adapter that cannot be built or answer for the replay: the finding stays a failure."""

    def broken() -> Any:
        raise RuntimeError("the broker is down")

    judge = Judge(load_registry(), "artemis", "2.40.0", "artemis", "artemis", adapter_factory=broken)
    replay = judge.replay()
    assert replay is not None and replay([{"queue": {"name": "q"}}], "artemis-4985") is False


def test_a_replay_keeps_the_options_the_finding_was_held_to(monkeypatch: pytest.MonkeyPatch) -> None:
    """A finding made while the area explored on against a known bug carries that bug's option; the
    replay under a second bug model keeps it (else a counterexample that shows both bugs would hold
    under neither model alone)."""
    import mqconform.reference_model.bugs as bugs

    seen: list[Any] = []

    class Recording:
        def enable(self, claimed: Any) -> Any:
            seen.append(claimed)
            raise RuntimeError("recorded")  # the replay stops here: not explained

    monkeypatch.setattr(bugs, "bug_model", lambda name: Recording())
    judge = Judge(load_registry(), "artemis", "2.40.0", "artemis", "artemis",
                  adapter_factory=lambda: ReferenceAdapter("artemis"))
    replay = judge.replay()
    assert replay is not None
    assert replay([{"queue": {"name": "q"}}], "artemis-4985") is False
    assert replay([{"queue": {"name": "q"}}], "artemis-4985",
                  {"cancel_drop_decrements_delivering_twice": True}) is False
    assert [claimed.cancel_drop_decrements_delivering_twice for claimed in seen] == [False, True]


def test_a_replay_that_did_not_hold_during_the_areas_is_made_once_more_after_them() -> None:
    """Judge.second_look (record_outcomes, before the verdict): a finding whose bug-model replay did
    not hold while the areas ran is replayed again; it is the registered bug when that replay holds,
    and each such finding gets a line with the first replay's difference. A finding the bug model
    never held for stays a failure with the second replay's difference; one decided without a replay
    (no entry's shape) gets no line."""
    from tests.buggy_artemis import BugShowsOnSecondRun

    steps = _steps(PRIORITY)
    late = BugShowsOnSecondRun()
    judge = Judge(SHIPPED, "artemis", "2.40.0", "artemis", "artemis", adapter_factory=lambda: late)
    finding = _finding(steps)
    finding.scenario_path = "counterexamples/delivery-1-receive_id.yaml"
    assert judge.label(finding) == "FAIL"
    lines = judge.second_look([finding])
    assert judge.deviation(finding) is _entry("artemis-4985") and judge.label(finding) == "DEVIATION"
    assert len(lines) == 1 and lines[0].startswith(
        "  DEVIATION counterexamples/delivery-1-receive_id.yaml: replayed again after the areas, the bug "
        "model artemis-4985 held (during them: artemis-4985: FAIL ")
    assert judge.second_look([finding]) == []  # decided: not replayed a third time

    never = Judge(SHIPPED, "artemis", "2.40.0", "artemis", "artemis",
                  adapter_factory=lambda: BugShowsOnSecondRun(first=99))
    finding = _finding(steps)
    assert never.label(finding) == "FAIL"
    lines = never.second_look([finding])
    assert never.label(finding) == "FAIL" and len(lines) == 1
    assert lines[0].startswith(
        "  FAIL receive.id: no registered bug model held on replay (artemis-4985: FAIL ")

    shapeless = _finding([{"queue": {"name": "q"}}, {"send": {"to": "q", "id": "m1", "size": 100}}])
    assert never.label(shapeless) == "FAIL" and never.second_look([shapeless]) == []


def test_two_registered_bugs_explain_together_what_neither_explains_alone() -> None:
    """The matrix's LASTVALUE-3 story (two scheduled fires, then a last-value prune of the head offered
    without credit): the broker gives m1 twice, which needs both bug models. The judge names the pair
    (the first entry, the other as `together`); a broker with only one of the two bugs does not fail
    the steps at all, and a pair with a bug that changes nothing there is never replayed as holding."""
    steps = _steps(TWO_BUGS)
    both = WithBugs(REPEATS, REOFFERS)
    assert _fails_claimed(both, steps)
    assert not _fails_claimed(WithBug(REPEATS), steps) and not _fails_claimed(WithBug(REOFFERS), steps)
    claimed = profile("artemis")
    assert not holds_under(steps, REPEATS, claimed, lambda: both)
    assert not holds_under(steps, REOFFERS, claimed, lambda: both)
    assert holds_under(steps, (REPEATS, REOFFERS), claimed, lambda: both)
    assert not holds_under(steps, (REPEATS, REOFFERS, "artemis-4985"), claimed, lambda: both)
    finding = _finding(steps, "lastvalue.no_key")
    found = Judge(SHIPPED, "artemis", "2.40.0", "artemis", "artemis",
                  adapter_factory=lambda: both).deviation(finding)
    assert found is not None and found.together is not None
    assert {found.model, found.together.model} == {REPEATS, REOFFERS}
    assert found.where == f"{found.location} with {found.together.location}"
    assert Judge(SHIPPED, "artemis", "2.40.0", "artemis", "artemis", adapter_factory=lambda: IgnoresPriority()
                 ).deviation(finding) is None
    answer = known_bugs(SHIPPED, TWO_BUGS, steps, "artemis", "2.40.0", "artemis", "artemis",
                        implementation=both)
    assert answer.explained_by is not None and answer.explained_by.together is not None
    assert not answer.alike


def test_a_held_bug_the_implementation_did_not_show_is_no_verdict() -> None:
    """An area that explores on against a known bug's model (runner.run_machine's `explain`) expects the
    bug wherever its model does. Where the implementation does not show it (a trigger the model cannot
    follow: Artemis re-checks its directDeliver flag at most once a second of real time), the
    counterexample holds against the model without the bug on every replay: the finding is *not shown*
    (no verdict on its rules), not a failure (the 2.40.0 ci run's 18-step ring story under the
    last-value nack bug); held on some replays only, it is flaky. An implementation that differs from
    the model without the bug too stays a failure."""
    from mqconform.conformance.exploring.driver import Violation
    from mqconform.conformance.exploring.minimize import Minimized
    from mqconform.conformance.exploring.runner import finding_of

    bug = BUGS["artemis-4985"]
    held = bug.enable(profile("artemis"))
    steps = [Step(*next(iter(s.items()))) for s in _steps(PRIORITY)]
    violation = Violation("receive.id", ("DELIVERY-3",), "expected [m2, m3, m4, m5]", field="")
    shrunk = Minimized(steps, "differs", "result", ["m2", "m3", "m4", "m5"], ["m5", "m2", "m3", "m4"])

    def finding(adapter: Any) -> Finding:
        return finding_of("delivery", violation, shrunk, 1.0, held, lambda: adapter,
                          options={bug.option: True})

    plain = ReferenceAdapter(options=profile("artemis"))
    assert _fails_claimed(WithBug(), _steps(PRIORITY)) and not _fails_claimed(plain, _steps(PRIORITY))
    shown = finding(plain)
    assert shown.unshown and not shown.flaky
    assert shown.message.startswith("not shown:") and "artemis-4985" in shown.message
    # no verdict at all: its rules keep what the other findings give them, and the line says so
    result = MachineResult("delivery")
    result.findings.append(shown)
    assert "fail" not in merge_outcomes([result]).values()
    judge = Judge(SHIPPED, "artemis", "2.40.0", "artemis", "artemis")
    assert judge.label(shown) == "NOT SHOWN" and judge.second_look([shown]) == []
    other = finding(IgnoresPriority())
    assert not other.unshown and not other.flaky
    # held one time of two: flaky (the broker answered both ways)
    answers = iter([plain, WithBug(), plain, WithBug()])
    racy = finding_of("delivery", violation, shrunk, 1.0, held, lambda: next(answers),
                      options={bug.option: True})
    assert racy.flaky and not racy.unshown and racy.message.startswith("flaky:")
    # without the bug held, the same finding is no such case
    alone = finding_of("delivery", violation, shrunk, 1.0, profile("artemis"), lambda: plain)
    assert not alone.flaky and not alone.unshown
