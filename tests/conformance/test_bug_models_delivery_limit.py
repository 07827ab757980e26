"""The two bug models hooked where a returned message reaches its delivery limit
(reference_model/redelivery.py): rabbitmq-server#5609 (a quorum queue grants the nacking consumer credit
twice) and Artemis' double decDelivering of a message an individual cancel drops. Each reproduces every
counterexample the suite found for it (the scenario files fail on the bug model as on the broker, and
the broker's answers, replayed, are the bug model's at every step), the plain model holds them, and no
other bug model explains them. What each changes, case by case: tests/model/test_delivery_limit_bugs.py.
No broker is needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.judging.bug_replay import holds_under
from mqconform.conformance.judging.deviations import load_registry
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import profile
from mqconform.scenario import load, run_scenario
from tests.buggy_artemis import WithBug
from tests.conformance.bug_model_support import bug_model, loaded_steps

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests/adapters/scenarios"
RABBITMQ = "rabbitmq-server-5609"
ARTEMIS = "artemis-drop-at-limit-delivering-negative"
#: bug model -> (profile, the counterexamples the suite found for it on the broker)
FOUND = {
    RABBITMQ: ("rabbitmq-quorum", [*sorted(SCENARIOS.glob("rabbitmq-5609-*.yaml")),
                                   SCENARIOS / "rabbitmq-quorum-closes-then-nack-at-limit.yaml"]),
    ARTEMIS: ("artemis", [SCENARIOS / "artemis-drop-at-limit-delivering-negative.yaml"]),
}
CASES = [(bug, prof, path) for bug, (prof, paths) in FOUND.items() for path in paths]


def _model(bug: str | None, prof: str) -> ReferenceAdapter:
    return bug_model(bug, prof)



def test_the_counterexamples_are_all_there() -> None:
    assert len(FOUND[RABBITMQ][1]) == 6 and all(p.exists() for _, _, p in CASES)


@pytest.mark.parametrize(("bug", "prof", "path"), CASES, ids=lambda v: getattr(v, "stem", v))
def test_the_bug_model_fails_each_counterexample_as_the_broker_and_the_plain_model_holds_it(
        bug: str, prof: str, path: Path) -> None:
    assert not getattr(profile(prof), BUGS[bug].option)
    assert run_scenario(load(path), _model(None, prof), namespace="t").verdict == "pass"
    assert run_scenario(load(path), _model(bug, prof), namespace="t").verdict == "fail"
    # the counterexample replayed on an implementation that is the bug model holds at every step,
    # on the plain model it does not
    steps = loaded_steps(path)
    assert holds_under(steps, bug, profile(prof), lambda: _model(bug, prof))
    assert not holds_under(steps, bug, profile(prof), lambda: _model(None, prof))


@pytest.mark.parametrize(("bug", "prof", "path"), CASES, ids=lambda v: getattr(v, "stem", v))
def test_no_other_bug_model_explains_the_counterexample(bug: str, prof: str, path: Path) -> None:
    steps = loaded_steps(path)
    for other in BUGS:
        if other != bug:
            assert not holds_under(steps, other, profile(prof), lambda: _model(bug, prof)), other


def test_the_registry_names_one_entry_per_bug_with_its_bug_model() -> None:
    for bug, (prof, _) in FOUND.items():
        entries = [d for d in load_registry().deviations if d.model == bug]
        assert len(entries) == 1 and entries[0].profiles == frozenset({prof})
        assert entries[0].rules == BUGS[bug].rules and not entries[0].unmodelled


def test_artemis_the_fake_broker_with_the_bug_is_the_registered_bug() -> None:
    """The artemis fake with this bug model (tests/buggy_artemis.py WithBug) fails the regression
    scenario and the registry explains it on 2.40.0 and 2.56.0 only by the replay."""
    from mqconform.conformance.judging.known_scenarios import known_bugs

    path = FOUND[ARTEMIS][1][0]
    registry = load_registry()
    entry = next(d for d in registry.deviations if d.model == ARTEMIS)
    assert run_scenario(load(path), WithBug(ARTEMIS), namespace="t").verdict == "fail"
    for version in ("2.40.0", "2.56.0"):
        found = known_bugs(registry, path, loaded_steps(path), "artemis", version, "artemis", "artemis",
                           implementation=WithBug(ARTEMIS, version)).explained_by
        assert found is entry
    other = known_bugs(registry, path, loaded_steps(path), "artemis", "2.40.0", "artemis", "artemis",
                       implementation=WithBug()).explained_by  # ARTEMIS-4985's model: not this bug
    assert other is None
