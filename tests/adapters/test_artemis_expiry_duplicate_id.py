"""EXPIRY-8 on Artemis: a message with a duplicate id (_AMQ_DUPL_ID) that expires goes to its expiry
address even when that address has routed the id already (QueueImpl#expire moves the copy with
rejectDuplicates false, ARTEMIS-3529, 2.19.1 and later). Against the adapter's own brokers, 2.40.0
and 2.56.0 one after the other (no skips: without mvn or java the fixture fails)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.profiles import profile
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario

pytestmark = pytest.mark.broker("artemis")

SCENARIO = Path(__file__).parent / "scenarios" / "artemis-expiry-duplicate-id.yaml"


@pytest.fixture(scope="module", params=["2.40.0", "2.56.0"])
def artemis(request: pytest.FixtureRequest) -> Iterator[ArtemisAdapter]:
    adapter = ArtemisAdapter(version=request.param)
    yield adapter
    adapter.shutdown()


@pytest.mark.rules("EXPIRY-8")
def test_an_expired_duplicate_id_reaches_the_expiry_address(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario passes on the model and on the broker."""
    scenario = load(SCENARIO)
    assert run_scenario(scenario, ReferenceAdapter(options=profile("artemis"))).verdict == "pass"
    outcome = run_scenario(scenario, artemis, namespace=namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()
    assert artemis.server_version == artemis.version


@pytest.mark.rules("EXPIRY-8")
def test_no_duplicate_id_before_2_19_1() -> None:
    """Not offered before ARTEMIS-3529 (2.19.0 and before: the expiry scanner rejected a duplicate
    copy); no broker is started for this."""
    old = ArtemisAdapter(version="2.19.0")
    assert "duplicate_id" not in old.capabilities
    assert "ARTEMIS-3529" in old.UNSUPPORTED["duplicate_id"]
    assert "duplicate_id" in ArtemisAdapter(version="2.21.0").capabilities
