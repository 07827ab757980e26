"""The artemis adapter's delivery count of a message several consumers of a non-destructive queue hold:
the latest delivery's (the broker's one count per message reference), not the first holder's. Against a
real Artemis (2.40.0, started by the adapter; no skips)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.contract import Adapter
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.profiles import profile
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario

pytestmark = pytest.mark.broker("artemis")

SCENARIO = Path(__file__).parent / "scenarios" / "artemis-non-destructive-consumers-share-delivery-count.yaml"


@pytest.fixture(scope="module")
def artemis() -> Iterator[ArtemisAdapter]:
    adapter = ArtemisAdapter()
    yield adapter
    adapter.shutdown()


@pytest.mark.rules("REDELIVERY-1", "DELIVERY-23")
def test_non_destructive_consumers_share_one_count(artemis: ArtemisAdapter, namespace: str) -> None:
    scenario = load(SCENARIO)
    assert run_scenario(scenario, ReferenceAdapter(options=profile("artemis"))).verdict == "pass"
    outcome = run_scenario(scenario, cast(Adapter, artemis), strict=True, namespace=namespace)
    # steps 8 and 10: c-q-2 (the first holder) still holds m1 with its own delivery's count 1
    assert outcome.verdict == "pass", outcome.verdict_line()
