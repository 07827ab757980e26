"""DELIVERY-48 on Artemis: QueueControl#moveMessage(id, otherQueueName) moves one pending message to
another queue (acknowledged in its own, added to the other's binding only, a new broker id, no
expiration). Against the adapter's own brokers, 2.40.0 and 2.56.0 one after the other (no skips:
without mvn or java the fixture fails)."""

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

SCENARIO = Path(__file__).parent / "scenarios" / "artemis-move-message.yaml"


@pytest.fixture(scope="module", params=["2.40.0", "2.56.0"])
def artemis(request: pytest.FixtureRequest) -> Iterator[ArtemisAdapter]:
    adapter = ArtemisAdapter(version=request.param)
    yield adapter
    adapter.shutdown()


@pytest.mark.rules("DELIVERY-48")
def test_a_moved_message_is_acknowledged_here_added_there(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario passes on the model and on the broker."""
    scenario = load(SCENARIO)
    assert run_scenario(scenario, ReferenceAdapter(options=profile("artemis"))).verdict == "pass"
    outcome = run_scenario(scenario, artemis, namespace=namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()
    assert artemis.server_version == artemis.version


@pytest.mark.rules("DELIVERY-48")
def test_move_is_offered_on_every_served_release() -> None:
    """QueueControl#moveMessage(long, String) is there on every release the adapter serves (2.18.0 has
    it too); no broker is started for this."""
    for version in ("2.18.0", "2.40.0", "2.56.0"):
        assert "move" in ArtemisAdapter(version=version).capabilities
