"""Consumer priorities (DELIVERY-25) and single active consumers (DELIVERY-26) in the model: the
worked examples and observed scenarios need the feature (stripped of it, the model fails them), and
the profile's single_active_next decides who takes over."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import Unsupported
from mqconform.reference_model.profiles import profile
from mqconform.scenario.loader import Scenario, load, parse
from mqconform.scenario.runner import run_scenario

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "spec" / "examples" / "brokers" / "rabbitmq-quorum-consumer-priorities.yaml"
OBSERVED = ROOT / "tests" / "adapters" / "scenarios"
PREFETCH = {"window_bytes": -1, "max_unacked": 5}


def _stripped(path: Path) -> Scenario:
    """The scenario with every consumer priority removed."""
    text = path.read_text()
    for n in (10, 5):
        text = text.replace(f", priority: {n}", "")
    return parse(text, path.name)


@pytest.mark.rules("DELIVERY-25")
@pytest.mark.parametrize("path", [EXAMPLE, OBSERVED / "rabbitmq-consumer-priority-round-robin.yaml",
                                  OBSERVED / "activemq-consumer-priority.yaml"], ids=lambda p: p.stem)
def test_priority_scenarios_need_the_priorities(path: Path) -> None:
    scenario = load(path)
    options = scenario.model_options()
    assert run_scenario(scenario, ReferenceAdapter(options=options)).verdict == "pass"
    assert run_scenario(_stripped(path), ReferenceAdapter(options=options)).verdict == "fail"


@pytest.mark.rules("DELIVERY-26")
def test_single_active_next_decides_who_takes_over() -> None:
    scenario = load(OBSERVED / "rabbitmq-single-active-next-by-priority.yaml")
    classic = profile("rabbitmq-classic")
    assert run_scenario(scenario, ReferenceAdapter(options=classic)).verdict == "pass"
    by_registration = classic.evolve(single_active_next="registration")
    outcome = run_scenario(scenario, ReferenceAdapter(options=by_registration))
    assert (outcome.verdict, outcome.step) == ("fail", 10)
    quorum = run_scenario(scenario, ReferenceAdapter(options=profile("rabbitmq-quorum")))
    assert (quorum.verdict, quorum.step) == ("fail", 10)


@pytest.mark.rules("DELIVERY-26")
@pytest.mark.parametrize("name", ["rabbitmq-classic", "rabbitmq-quorum"])
def test_only_the_active_consumer_gets_messages(name: str) -> None:
    b = Broker(profile(name))
    b.declare_queue(QueueConfig("q", single_active_consumer=True))
    for c in ("c1", "c2"):
        b.open_consumer(ConsumerConfig(c, "q", **PREFETCH))  # type: ignore[arg-type]
    for m in ("m1", "m2"):
        b.send("q", Message(m))
    assert (b.receive("c2"), b.receive("c1"), b.receive("c1")) == (None, "m1", "m2")
    b.close("c1")  # unacked m1, m2 return and go to the next active consumer
    assert (b.receive("c2"), b.receive("c2")) == ("m1", "m2")
    b.close("c2")
    b.send("q", Message("m3"))
    b.open_consumer(ConsumerConfig("c3", "q", **PREFETCH))  # type: ignore[arg-type]
    assert b.receive("c3") == "m1"


@pytest.mark.rules("DELIVERY-26", "DELIVERY-22")
def test_a_channel_error_hands_the_active_turn_over() -> None:
    """DELIVERY-22 closes_channel: the consumer's channel closes (it is cancelled, the next consumer
    becomes active) and it subscribes again at the end of the waiting list."""
    b = Broker(profile("rabbitmq-quorum"))
    b.declare_queue(QueueConfig("q", single_active_consumer=True))
    for c in ("c1", "c2"):
        b.open_consumer(ConsumerConfig(c, "q", **PREFETCH))  # type: ignore[arg-type]
    b.send("q", Message("m1"))
    assert b.receive("c1") == "m1"
    assert b.ack("c1", "nope") == "failed"
    b.send("q", Message("m2"))
    assert (b.receive("c1"), b.receive("c2"), b.receive("c2")) == (None, "m1", "m2")


@pytest.mark.rules("DELIVERY-25", "DELIVERY-26")
def test_profiles_without_the_features_refuse_them() -> None:
    artemis = Broker(profile("artemis"))
    with pytest.raises(Unsupported):
        artemis.declare_queue(QueueConfig("q", single_active_consumer=True))
    artemis.declare_queue(QueueConfig("q"))
    with pytest.raises(Unsupported):
        artemis.open_consumer(ConsumerConfig("c", "q", priority=1))
    assert "c" not in artemis.consumers
    rabbit = Broker(profile("rabbitmq-classic"))
    rabbit.declare_queue(QueueConfig("q", single_active_consumer=True))
    with pytest.raises(Unsupported):
        rabbit.open_consumer(ConsumerConfig("c", "q", window_bytes=0))


@pytest.mark.rules("DELIVERY-25", "DELIVERY-24")
def test_priorities_with_a_cursor_rotation() -> None:
    """Not a profile's choice (Artemis's consumer priorities are not offered yet): with the cursor
    rotation, consumers of equal priority are offered messages from the cursor on."""
    options = profile("artemis").evolve(features=profile("artemis").features | {"consumer_priority"})
    b = Broker(options)
    b.declare_queue(QueueConfig("q"))
    for name, prio in (("low", 0), ("h1", 3), ("h2", 3)):
        b.open_consumer(ConsumerConfig(name, "q", priority=prio, **PREFETCH))  # type: ignore[arg-type]
    for m in ("m1", "m2", "m3"):
        b.send("q", Message(m))
    assert [b.receive(c) for c in ("h1", "h2", "h1", "low")] == ["m1", "m2", "m3", None]
