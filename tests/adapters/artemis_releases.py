"""What the Artemis feature tests share: the two releases they run on (the line's newest served
release before the current one, and the current one; conftest.py's `artemis` fixture starts the
adapter's own broker on each in turn, no skips: without mvn or java it fails), and the scenario check
most of them make."""

from __future__ import annotations

from pathlib import Path

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario

RELEASES = ("2.40.0", "2.56.0")
SCENARIOS = Path(__file__).parent / "scenarios"


def holds_on_the_model_and_the_broker(artemis: ArtemisAdapter, namespace: str, name: str, *,
                                      strict: bool = False) -> None:
    """The scenario tests/adapters/scenarios/<name>.yaml passes on the artemis profile's model (with the
    file's `options`, e.g. the model of older releases) and on the broker, which is the release it was
    asked for."""
    scenario = load(SCENARIOS / f"{name}.yaml")
    assert scenario.profile in (None, "artemis")
    assert run_scenario(scenario, ReferenceAdapter(options=scenario.model_options())).verdict == "pass"
    outcome = run_scenario(scenario, artemis, strict=strict, namespace=namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()
    assert artemis.server_version == artemis.version
