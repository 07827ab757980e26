"""DELIVERY-48 on Artemis for a scheduled or a paged message: from 2.53.0 (ARTEMIS-5376)
QueueControl#moveMessage(id, otherQueueName) moves it (out of the scheduler or the page subscription,
acknowledged; a scheduled message's copy waits in the target's scheduler for its delivery time), before
it answers false and nothing changes. The release picks the model's option move_listed through the
adapter's capability of the same name. Against the adapter's own brokers, 2.40.0 and 2.56.0 one after
the other (no skips: without mvn or java the fixture fails)."""

from __future__ import annotations

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.contract import model_for
from mqconform.reference_model.profiles import profile
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario
from tests.adapters.artemis_releases import SCENARIOS, holds_on_the_model_and_the_broker

pytestmark = pytest.mark.broker("artemis")

SINCE_2_53 = "artemis-move-scheduled"
BEFORE_2_53 = "artemis-move-scheduled-before-2.53"
#: the step of both files that moves the scheduled s1 (true from 2.53.0, false before)
FIRST_SCHEDULED_MOVE = 9


@pytest.mark.rules("DELIVERY-48", "SCHED-2", "SCHED-4", "SCHED-6", "PAGING-2")
def test_a_scheduled_or_paged_message_is_moved_from_2_53(artemis: ArtemisAdapter, namespace: str) -> None:
    """The release's scenario passes on its model and on the broker; the other release's fails on the
    broker at the move of the scheduled s1 (the releases do differ there)."""
    since = "move_listed" in artemis.capabilities
    assert since == (artemis.version == "2.56.0")
    name, other = (SINCE_2_53, BEFORE_2_53) if since else (BEFORE_2_53, SINCE_2_53)
    holds_on_the_model_and_the_broker(artemis, namespace, name)
    outcome = run_scenario(load(SCENARIOS / f"{other}.yaml"), artemis, namespace=f"{namespace}-other")
    assert (outcome.verdict, outcome.step, outcome.op) == ("fail", FIRST_SCHEDULED_MOVE, "move"), \
        outcome.verdict_line()


@pytest.mark.rules("DELIVERY-48")
def test_the_release_picks_the_model_option() -> None:
    """Without capability move_listed (before 2.53.0) the adapter is held to the model with move_listed
    off (adapters.contract.WITHOUT_CAPABILITY); no broker is started for this."""
    artemis = profile("artemis")
    assert artemis.move_listed
    for version, listed in (("2.18.0", False), ("2.40.0", False), ("2.53.0", True), ("2.56.0", True)):
        caps = frozenset(ArtemisAdapter(version=version).capabilities)
        assert model_for(artemis, caps).move_listed is listed, version
