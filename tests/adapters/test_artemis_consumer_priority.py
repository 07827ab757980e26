"""DELIVERY-25 on Artemis: a consumer's priority is the AMQP receiver's attach property `priority`,
and each priority level keeps a rotation cursor of its own (the profile's cursor_per_priority).
Against the adapter's own brokers, 2.40.0 and 2.56.0 one after the other (no skips: without mvn or
java the fixture fails)."""

from __future__ import annotations

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.profiles import profile
from mqconform.scenario.loader import load, parse
from mqconform.scenario.runner import run_scenario
from tests.adapters.artemis_releases import SCENARIOS, holds_on_the_model_and_the_broker

pytestmark = pytest.mark.broker("artemis")

SCENARIO = SCENARIOS / "artemis-consumer-priority-levels.yaml"



@pytest.mark.rules("DELIVERY-25", "DELIVERY-24")
def test_a_cursor_per_priority_level(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario holds on the artemis profile and on the broker; one cursor over all consumers
    (cursor_per_priority=False) fails it at m3, the first message a priority-0 consumer takes, and
    without the priorities it fails at once (m1 goes to L1, the first consumer)."""
    holds_on_the_model_and_the_broker(artemis, namespace, "artemis-consumer-priority-levels", strict=True)
    scenario = load(SCENARIO)
    claimed = profile("artemis")
    one_cursor = run_scenario(scenario, ReferenceAdapter(options=claimed.evolve(cursor_per_priority=False)))
    assert (one_cursor.verdict, one_cursor.step) == ("fail", 9)
    stripped = parse(SCENARIO.read_text().replace(", priority: 5", ""), SCENARIO.name)
    assert (run_scenario(stripped, ReferenceAdapter(options=claimed)).step) == 7
