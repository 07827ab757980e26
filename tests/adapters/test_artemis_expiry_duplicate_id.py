"""EXPIRY-8 on Artemis: a message with a duplicate id (_AMQ_DUPL_ID) that expires goes to its expiry
address even when that address has routed the id already (QueueImpl#expire moves the copy with
rejectDuplicates false, ARTEMIS-3529, 2.19.1 and later). Against the adapter's own brokers, 2.40.0
and 2.56.0 one after the other (no skips: without mvn or java the fixture fails)."""

from __future__ import annotations

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from tests.adapters.artemis_releases import holds_on_the_model_and_the_broker

pytestmark = pytest.mark.broker("artemis")



@pytest.mark.rules("EXPIRY-8")
def test_an_expired_duplicate_id_reaches_the_expiry_address(artemis: ArtemisAdapter, namespace: str) -> None:
    """The scenario passes on the model and on the broker."""
    holds_on_the_model_and_the_broker(artemis, namespace, "artemis-expiry-duplicate-id")


@pytest.mark.rules("EXPIRY-8")
def test_no_duplicate_id_before_2_19_1() -> None:
    """Not offered before ARTEMIS-3529 (2.19.0 and before: the expiry scanner rejected a duplicate
    copy); no broker is started for this."""
    old = ArtemisAdapter(version="2.19.0")
    assert "duplicate_id" not in old.capabilities
    assert "ARTEMIS-3529" in old.UNSUPPORTED["duplicate_id"]
    assert "duplicate_id" in ArtemisAdapter(version="2.21.0").capabilities
