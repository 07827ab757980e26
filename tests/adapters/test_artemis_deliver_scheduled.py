"""SCHED-16 on Artemis: QueueControl#deliverScheduledMessage(id) delivers one scheduled message now
(ARTEMIS-3872, 2.25.0 and later). Against the adapter's own brokers, 2.40.0 and 2.56.0 one after the
other (no skips: without mvn or java the fixture fails)."""

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

SCENARIO = Path(__file__).parent / "scenarios" / "artemis-deliver-scheduled-now.yaml"


@pytest.fixture(scope="module", params=["2.40.0", "2.56.0"])
def artemis(request: pytest.FixtureRequest) -> Iterator[ArtemisAdapter]:
    adapter = ArtemisAdapter(version=request.param)
    yield adapter
    adapter.shutdown()


@pytest.mark.rules("SCHED-16")
def test_a_scheduled_message_delivered_now_goes_to_the_head(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario passes on the model and on the broker."""
    scenario = load(SCENARIO)
    assert run_scenario(scenario, ReferenceAdapter(options=profile("artemis"))).verdict == "pass"
    outcome = run_scenario(scenario, artemis, namespace=namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()
    assert artemis.server_version == artemis.version


@pytest.mark.rules("SCHED-16")
def test_no_deliver_scheduled_before_2_25() -> None:
    """Not offered where QueueControl has no deliverScheduledMessage (2.24.0 and before); no broker
    is started for this."""
    old = ArtemisAdapter(version="2.24.0")
    assert "deliver_scheduled" not in old.capabilities and "scheduling" not in old.capabilities
    assert "ARTEMIS-3872" in old.UNSUPPORTED["deliver_scheduled"]
    assert "deliver_scheduled" in ArtemisAdapter(version="2.25.0").capabilities
