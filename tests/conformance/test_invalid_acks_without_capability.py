"""An adapter without the capability invalid_ack is held to the contract whatever its profile: an ack
of a message its consumer does not hold answers `failed` and changes nothing (DELIVERY-8), also under
a profile whose broker answers such an ack otherwise (rabbitmq-classic closes the channel)."""

from __future__ import annotations

import pytest
import yaml

from mqconform.adapters.contract import contract_changes, model_for
from mqconform.reference_model.profiles import profile as load_profile
from mqconform.testing import check_adapter
from tests.example_adapter import FifoAdapter


def test_a_missing_capability_holds_the_model_to_the_contract() -> None:
    classic = load_profile("rabbitmq-classic")
    assert classic.invalid_ack == "closes_channel"
    assert contract_changes(classic, frozenset({"queues"})) == {"invalid_ack": "refused"}
    assert model_for(classic, frozenset({"queues"})).invalid_ack == "refused"
    assert model_for(classic, frozenset({"queues", "invalid_ack"})) is classic
    assert contract_changes(load_profile("artemis"), frozenset()) == {}  # it refuses them already


def test_an_adapter_that_accepts_an_ack_it_should_refuse_fails() -> None:
    with pytest.raises(AssertionError) as info:
        check_adapter(lambda: FifoAdapter(sloppy_acks=True), areas=["delivery"], max_examples=50)
    text = str(info.value)
    assert "expected failed, actual ok" in text
    scenario = yaml.safe_load(text.split("save as counterexample.yaml):\n", 1)[1].split("\nreplay:", 1)[0])
    assert scenario["profile"] == "rabbitmq-classic"
    assert scenario["options"] == {"invalid_ack": "refused"}
    assert any("ack" in step for step in scenario["steps"])


def test_the_conforming_adapter_still_passes() -> None:
    report = check_adapter(FifoAdapter, areas=["delivery"], max_examples=50)
    assert "ack.refused" in report.checks["delivery"]
