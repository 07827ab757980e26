"""SCHED-16 on Artemis: QueueControl#deliverScheduledMessage(id) delivers one scheduled message now
(ARTEMIS-3872, 2.25.0 and later). Against the adapter's own brokers, 2.40.0 and 2.56.0 one after the
other (no skips: without mvn or java the fixture fails)."""

from __future__ import annotations

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from tests.adapters.artemis_releases import holds_on_the_model_and_the_broker

pytestmark = pytest.mark.broker("artemis")




@pytest.mark.rules("SCHED-16")
def test_a_scheduled_message_delivered_now_goes_to_the_head(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario passes on the model and on the broker."""
    holds_on_the_model_and_the_broker(artemis, namespace, "artemis-deliver-scheduled-now")


@pytest.mark.rules("SCHED-16")
def test_no_deliver_scheduled_before_2_25() -> None:
    """Not offered where QueueControl has no deliverScheduledMessage (2.24.0 and before); no broker
    is started for this."""
    old = ArtemisAdapter(version="2.24.0")
    assert "deliver_scheduled" not in old.capabilities and "scheduling" not in old.capabilities
    assert "ARTEMIS-3872" in old.UNSUPPORTED["deliver_scheduled"]
    assert "deliver_scheduled" in ArtemisAdapter(version="2.25.0").capabilities
