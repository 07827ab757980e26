"""DELIVERY-49 on Artemis: message groups (the AMQP properties group-id). Against the adapter's own
brokers, 2.40.0 and 2.56.0 one after the other (no skips: without mvn or java the fixture fails)."""

from __future__ import annotations

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from tests.adapters.artemis_releases import holds_on_the_model_and_the_broker

pytestmark = pytest.mark.broker("artemis")


@pytest.mark.rules("DELIVERY-49")
def test_a_group_stays_with_its_consumer_until_it_closes(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario passes on the model and on the broker: a busy group consumer holds the queue back,
    a closing one releases its groups."""
    holds_on_the_model_and_the_broker(artemis, namespace, "artemis-message-groups")


@pytest.mark.rules("DELIVERY-49")
def test_a_pulling_group_consumer_holds_back_the_others(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario passes on the model and on the broker: a pull that finds another consumer's group
    at the head gets nothing, not even the ungrouped message behind it."""
    holds_on_the_model_and_the_broker(artemis, namespace, "artemis-message-groups-pull")
