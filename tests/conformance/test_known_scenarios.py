"""`mqconform scenario` consults the known-deviation registry: a failing scenario that is a registered
bug's regression scenario, on that bug's adapter and releases, is a DEVIATION naming the bug (exit 0;
--strict keeps it a failure); the same failure on a release outside the bug's range, or in another file
of the same shape, excuses nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.cli import main
from mqconform.conformance.judging.deviations import load_registry
from mqconform.conformance.judging.known_scenarios import known_bugs
from mqconform.reference_model.profiles import profile as load_profile
from tests.conformance.bug_model_support import loaded_steps

ROOT = Path(__file__).resolve().parents[2]
PRIORITY = ROOT / "docs/findings/artemis-priority-after-cancel.yaml"
SOURCE = "https://github.com/apache/activemq-artemis/commit/ef3b5fa02c905c503d6b4271b4ce0849600f0215"



@pytest.mark.rules("DELIVERY-3")
def test_the_regression_scenario_is_explained_only_in_the_bugs_range(tmp_path: Path) -> None:
    registry = load_registry()
    steps = loaded_steps(PRIORITY)

    def on(adapter: str, version: str, profile: str = "artemis") -> Any:
        return known_bugs(registry, PRIORITY, steps, adapter, version, profile, profile).explained_by

    bugs = known_bugs(registry, PRIORITY, steps, "artemis", "2.40.0", "artemis", "artemis")
    assert bugs.explained_by is not None and bugs.explained_by.source == SOURCE
    # the releases before the regression hold: nothing to explain there, nor on another broker
    assert on("artemis", "2.35.0") is None and on("nats", "2.40.0", "jetstream") is None
    # the same steps in another file have the bug's shape, but excuse nothing
    copy = tmp_path / "my-priority-case.yaml"
    shutil.copy(PRIORITY, copy)
    other = known_bugs(registry, copy, steps, "artemis", "2.40.0", "artemis", "artemis")
    # alike: every entry of that shape (ARTEMIS-4985's, and the ring eviction's, which shares it)
    assert other.explained_by is None and SOURCE in [d.source for d in other.alike]
    assert {d.shape for d in other.alike} == {bugs.explained_by.shape}
    # a scenario without the shape (no second add at the same priority) is like no registered bug
    plain = [{"queue": {"name": "q"}}, {"send": {"to": "q", "id": "m1", "size": 100}}]
    assert known_bugs(registry, copy, plain, "artemis", "2.40.0", "artemis", "artemis") == type(other)(None)


class PriorityBugArtemis(ReferenceAdapter):
    """The model with ARTEMIS' priority regression seen from outside: m5, sent at priority 5 right after
    the cancel returned m1 at 5, comes after the default-priority messages already pending."""

    name = "artemis"
    server_version = "2.40.0"

    def __init__(self) -> None:
        super().__init__("artemis")
        self.aside: str | None = None

    def receive(self, consumer: str) -> Result:
        got = super().receive(consumer)
        if got.is_ok and got.value == "m5" and self.aside is None:
            self.aside = "m5"
            got = super().receive(consumer)
        if got.is_ok and got.value is None and self.aside is not None:
            got, self.aside = Result.ok(self.aside), None
        return got


@pytest.mark.rules("DELIVERY-3")
@pytest.mark.parametrize(("version", "strict", "code", "verdict"), [
    ("2.40.0", False, 0, "DEVIATION"), ("2.40.0", True, 1, "FAIL"), ("2.35.0", False, 1, "FAIL")])
def test_scenario_names_the_registered_bug(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str], version: str, strict: bool,
                                           code: int, verdict: str) -> None:
    import mqconform.commands.scenario as command

    monkeypatch.setattr(PriorityBugArtemis, "server_version", version)
    monkeypatch.setattr(command, "_adapter", lambda args, scenario, options: PriorityBugArtemis())
    strictly = ["--strict"] if strict else []
    assert main(["scenario", str(PRIORITY), "--adapter", "artemis", *strictly]) == code
    out = capsys.readouterr().out
    assert f"{verdict} {PRIORITY}: step 10 (receive_batch)" in out
    assert (SOURCE in out) == (version == "2.40.0")
    assert ("known bug: " in out) == (version == "2.40.0")


class RepeatAndResetArtemis(ReferenceAdapter):
    """The artemis model with two registered bugs at once: the non-destructive repeat and the scheduled
    fire that resets every consumer's iterator (as Artemis 2.40.0-2.56.0 have both)."""

    name = "artemis"
    server_version = "2.56.0"

    def __init__(self) -> None:
        from mqconform.reference_model.bugs import bug_model

        both = bug_model("artemis-non-destructive-scheduled-reoffers").enable(
            bug_model("artemis-non-destructive-ring-repeats-replaced").enable(load_profile("artemis")))
        super().__init__(options=both)


REPEAT = {"repeat_after_removal_returns_twice": True}
#: a pull consumer stands on m1 to repeat it when m2 supersedes it; a scheduled fire comes next
RESET_AFTER_A_REPEAT = [
    {"queue": {"name": "q", "last_value_key": "lvk", "non_destructive": True}},
    {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
    {"send": {"to": "q", "id": "m1", "size": 100, "properties": {"lvk": "A"}}},
    {"send": {"to": "q", "id": "m2", "size": 100, "properties": {"lvk": "A"}}},
    {"send": {"to": "q", "id": "m3", "size": 100, "scheduled_at_ms": 10}},
    {"advance": 10},
    {"receive_batch": {"consumer": "c", "count": 3}},
]


@pytest.mark.rules("LASTVALUE-1", "SCHED-4")
def test_a_counterexample_explored_past_one_bug_is_explained_by_another(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A counterexample whose area explored past the repeat bug (its file's `options`) and then met the
    scheduled reset: the scheduled bug's replay keeps the file's options, as the run's own judge does,
    and explains it; without them it does not (the reset alone changes nothing on these steps)."""
    import yaml

    import mqconform.commands.scenario as command
    from mqconform.scenario import annotate

    path = tmp_path / "lastvalue-4-receive_id.yaml"
    expected = annotate(RESET_AFTER_A_REPEAT, load_profile("artemis").evolve(**REPEAT))
    path.write_text(yaml.safe_dump({"profile": "artemis", "options": REPEAT, "steps": expected}))
    registry = load_registry()
    explained = known_bugs(registry, path, RESET_AFTER_A_REPEAT, "artemis", "2.56.0", "artemis", "artemis",
                           implementation=RepeatAndResetArtemis(), options=REPEAT).explained_by
    assert explained is not None and explained.model == "artemis-non-destructive-scheduled-reoffers"
    assert known_bugs(registry, path, RESET_AFTER_A_REPEAT, "artemis", "2.56.0", "artemis", "artemis",
                      implementation=RepeatAndResetArtemis()).explained_by is None
    monkeypatch.setattr(command, "_adapter", lambda args, scenario, options: RepeatAndResetArtemis())
    assert main(["scenario", str(path), "--adapter", "artemis", "-q"]) == 0
    assert f"DEVIATION {path}: step 7 (receive_batch)" in capsys.readouterr().out
