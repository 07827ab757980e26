"""DELIVERY-48 on Artemis: QueueControl#moveMessage(id, otherQueueName) moves one pending message to
another queue (acknowledged in its own, added to the other's binding only, a new broker id, no
expiration). Against the adapter's own brokers, 2.40.0 and 2.56.0 one after the other (no skips:
without mvn or java the fixture fails)."""

from __future__ import annotations

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from tests.adapters.artemis_releases import holds_on_the_model_and_the_broker

pytestmark = pytest.mark.broker("artemis")




@pytest.mark.rules("DELIVERY-48")
def test_a_moved_message_is_acknowledged_here_added_there(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario passes on the model and on the broker."""
    holds_on_the_model_and_the_broker(artemis, namespace, "artemis-move-message")


@pytest.mark.rules("DELIVERY-48")
def test_move_is_offered_on_every_served_release() -> None:
    """QueueControl#moveMessage(long, String) is there on every release the adapter serves (2.18.0 has
    it too); no broker is started for this."""
    for version in ("2.18.0", "2.40.0", "2.56.0"):
        assert "move" in ArtemisAdapter(version=version).capabilities
