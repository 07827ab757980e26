"""Every machine against the reference adapter: the model under each profile conforms to itself.

Rule ids: every id in mqconform.conformance.judging.rules (the machines' checks).
"""

from __future__ import annotations

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import run_machine
from mqconform.reference_model.profiles import PROFILES, profile
from tests.conformance.test_check_declarations import undeclared

#: the areas whose machines apply to the artemis profile (retention is JetStream's: the jetstream profile
#: runs it in test_reference_conforms_under_every_profile)
#: examples per area under the artemis profile (the others: 40), drawn under the session's profile:
#: derandomized in CI, a random seed elsewhere
ARTEMIS_EXAMPLES = 100
ARTEMIS_AREAS = [area for area, machine in MACHINES.items()
                 if machine.applicable(ReferenceAdapter("artemis").capabilities)]


@pytest.mark.parametrize("area", ARTEMIS_AREAS)
def test_reference_artemis_passes(area: str) -> None:
    result = run_machine(MACHINES[area], lambda: ReferenceAdapter("artemis"), profile("artemis"),
                         suite_settings.get(suite_settings.default_profile(), database=None,
                                            max_examples=ARTEMIS_EXAMPLES), max_reruns=0)
    assert result.findings == [], result.findings[0].message
    assert result.unknown is None
    assert result.checked, f"{area}: no check ran against the reference adapter"
    assert undeclared(area, set(result.checked)) == [], "checks made but not declared in the area's CHECKS"


@pytest.mark.parametrize("name", [p for p in PROFILES if p != "artemis"])
def test_reference_conforms_under_every_profile(name: str) -> None:
    hyp = suite_settings.get(suite_settings.default_profile(), database=None, max_examples=40)
    ran = 0
    for area, machine in MACHINES.items():
        result = run_machine(machine, lambda: ReferenceAdapter(name), profile(name), hyp, max_reruns=0)
        assert result.findings == [], f"{area}: {result.findings[0].message}"
        assert undeclared(area, set(result.checked)) == [], f"{area}: checks made but not declared"
        ran += bool(result.checked)
    assert ran >= 2


def test_profile_mismatch_is_detected() -> None:
    """An artemis implementation checked against rabbitmq-classic must show violations."""
    hyp = suite_settings.get("ci", database=None)
    result = run_machine(MACHINES["delivery"], lambda: ReferenceAdapter("artemis"),
                         profile("rabbitmq-classic"), hyp, max_reruns=0)
    assert result.findings, "priorities differ between artemis and rabbitmq-classic"
