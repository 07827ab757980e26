"""Issue 32 item 6: each registry entry with a bug model (mqconform/reference_model/bugs) reproduces its
own regression scenario, and explains no other entry's. An implementation that is the bug model must
fail the entry's scenario file as the broker does, and the registry must explain that failure (the
shape pre-filter and the replay agree); the scenario of another entry whose bug is modelled too,
failing on that bug's model, must not be explained by this one (its bug switched on in that
scenario's profile). A problem is one line naming the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.judging.bug_replay import holds_under
from mqconform.conformance.judging.deviations import Deviation, load_registry
from mqconform.conformance.judging.known_scenarios import known_bugs
from mqconform.reference_model.bugs import bug_model
from mqconform.reference_model.profiles import profile
from mqconform.scenario import load, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = load_registry()
MODELLED = [d for d in SHIPPED.deviations if d.model is not None]


def _profile(entry: Deviation) -> str:
    return sorted(entry.profiles or ())[0]


def _fake(entry: Deviation) -> ReferenceAdapter:
    """The implementation the entry's bug model describes: the model of its profile with the bug."""
    assert entry.model is not None
    return ReferenceAdapter(options=bug_model(entry.model).enable(profile(_profile(entry))))


def _steps(scenario: str) -> list[dict[str, object]]:
    return [{s.op: s.args} for s in load(ROOT / scenario).steps if s.op is not None]


def test_every_bug_model_is_named_by_an_entry_with_a_regression_scenario() -> None:
    assert MODELLED, "no entry names a bug model"
    for entry in MODELLED:
        assert entry.scenario and (ROOT / entry.scenario).exists(), \
            f"{entry.location}: bug model {entry.model} has no regression scenario"


def test_every_shipped_entry_has_a_bug_model_or_says_why_not() -> None:
    for entry in SHIPPED.deviations:
        assert (entry.model is None) == bool(entry.unmodelled), \
            f"{entry.location}: name the bug model (model:) or say why there is none (unmodelled:)"


@pytest.mark.parametrize("entry", MODELLED, ids=lambda d: f"{d.model}@{d.location}")
def test_a_bug_model_reproduces_its_own_regression_scenario(entry: Deviation) -> None:
    assert entry.scenario is not None
    path = ROOT / entry.scenario
    outcome = run_scenario(load(path), _fake(entry), namespace="mqc-bug-model")
    if outcome.verdict != "fail":
        pytest.fail(f"{entry.location}: bug model {entry.model} does not reproduce its regression scenario "
                    f"{entry.scenario} (its verdict on the bug model: {outcome.verdict})", pytrace=False)
    found = known_bugs(SHIPPED, path, _steps(entry.scenario), entry.adapter, entry.measured.fails[0],
                       _profile(entry), _profile(entry), implementation=_fake(entry)).explained_by
    if found is not entry:
        pytest.fail(f"{entry.location}: bug model {entry.model} does not explain its regression scenario "
                    f"{entry.scenario} (explained by: {found.location if found else 'none'})", pytrace=False)


@pytest.mark.parametrize("entry", MODELLED, ids=lambda d: f"{d.model}@{d.location}")
def test_a_bug_model_explains_no_other_entrys_scenario(entry: Deviation) -> None:
    assert entry.model is not None
    others = [d for d in MODELLED if d.source != entry.source and d.scenario is not None]
    assert others, "a second bug model is needed to test this"
    for other in others:
        assert other.scenario is not None
        steps = _steps(other.scenario)
        claimed = profile(_profile(other))  # the bug switched on in the other scenario's profile
        if holds_under(steps, entry.model, claimed, lambda other=other: _fake(other)):  # type: ignore[misc]
            pytest.fail(f"{entry.location}: bug model {entry.model} also explains {other.scenario} "
                        f"(entry {other.location}, bug model {other.model})", pytrace=False)
