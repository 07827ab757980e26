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
                                  OBSERVED / "activemq-consumer-priority.yaml",
                                  OBSERVED / "artemis-consumer-priority-levels.yaml"], ids=lambda p: p.stem)
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
    hornetq = Broker(profile("hornetq"))
    with pytest.raises(Unsupported):
        hornetq.declare_queue(QueueConfig("q", single_active_consumer=True))
    hornetq.declare_queue(QueueConfig("q"))
    with pytest.raises(Unsupported):
        hornetq.open_consumer(ConsumerConfig("c", "q", priority=1))
    assert "c" not in hornetq.consumers
    rabbit = Broker(profile("rabbitmq-classic"))
    rabbit.declare_queue(QueueConfig("q", single_active_consumer=True))
    with pytest.raises(Unsupported):
        rabbit.open_consumer(ConsumerConfig("c", "q", window_bytes=0))


@pytest.mark.rules("DELIVERY-25", "DELIVERY-24")
def test_priorities_with_a_cursor_rotation() -> None:
    """The artemis profile: with the cursor rotation, consumers of equal priority are offered messages
    from the cursor on."""
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q"))
    for name, prio in (("low", 0), ("h1", 3), ("h2", 3)):
        b.open_consumer(ConsumerConfig(name, "q", priority=prio, **PREFETCH))  # type: ignore[arg-type]
    for m in ("m1", "m2", "m3"):
        b.send("q", Message(m))
    assert [b.receive(c) for c in ("h1", "h2", "h1", "low")] == ["m1", "m2", "m3", None]


@pytest.mark.rules("DELIVERY-26")
def test_artemis_returns_before_the_handover() -> None:
    """The Artemis regression scenario (observed on 2.40.0 and 2.56.0) holds on the artemis profile; a
    handover before the returns (RabbitMQ quorum's single_active_handover_first) fails it at the
    close, step 8."""
    scenario = load(OBSERVED / "artemis-exclusive-queue-handover.yaml")
    claimed = profile("artemis")
    assert run_scenario(scenario, ReferenceAdapter(options=claimed)).verdict == "pass"
    handover_first = claimed.evolve(single_active_handover_first=True)
    first = run_scenario(scenario, ReferenceAdapter(options=handover_first))
    assert (first.verdict, first.step) == ("fail", 8)


def _exclusive(next_rule: str) -> Broker:
    """An artemis broker (consumer priorities, DELIVERY-25) with the given single_active_next, its
    queue q single_active_consumer."""
    b = Broker(profile("artemis").evolve(single_active_next=next_rule))
    b.declare_queue(QueueConfig("q", single_active_consumer=True))
    return b


@pytest.mark.rules("DELIVERY-26")
def test_at_dispatch_the_first_of_the_consumer_list_becomes_active() -> None:
    """single_active_next "dispatch" (Artemis): nobody is active until a message is dispatched; then
    the highest priority consumer present (not the first to subscribe, as under "priority") takes it
    and keeps its turn against a later consumer of higher priority; when it closes, what it held goes
    to the highest priority consumer left, the earliest registered among equals."""
    got: dict[str, list[str | None]] = {}
    for rule in ("dispatch", "priority"):
        b = _exclusive(rule)
        for name, prio in (("low", 0), ("high", 5)):
            b.open_consumer(ConsumerConfig(name, "q", priority=prio, **PREFETCH))  # type: ignore[arg-type]
        b.send("q", Message("m1"))
        got[rule] = [b.receive("low"), b.receive("high")]
    assert got == {"dispatch": [None, "m1"], "priority": ["m1", None]}
    b = _exclusive("dispatch")
    b.open_consumer(ConsumerConfig("a", "q", **PREFETCH))  # type: ignore[arg-type]
    b.send("q", Message("m1"))
    for name, prio in (("b", 0), ("top", 9), ("c", 9)):
        b.open_consumer(ConsumerConfig(name, "q", priority=prio, **PREFETCH))  # type: ignore[arg-type]
    b.send("q", Message("m2"))
    assert [b.receive(c) for c in ("top", "a", "a")] == [None, "m1", "m2"]
    b.close("a")
    assert [b.receive(c) for c in ("b", "c", "top", "top")] == [None, None, "m1", "m2"]


@pytest.mark.rules("DELIVERY-26")
def test_at_dispatch_a_close_with_nothing_to_return_leaves_nobody_active() -> None:
    """"dispatch": the active consumer closes holding nothing and nothing is pending, so no dispatch
    picks the next: a consumer of higher priority that subscribes before the next message gets it;
    under "priority" the close made the waiting consumer of priority 5 active already."""
    got: dict[str, list[str | None]] = {}
    for rule in ("dispatch", "priority"):
        b = _exclusive(rule)
        b.open_consumer(ConsumerConfig("a", "q", **PREFETCH))  # type: ignore[arg-type]
        b.send("q", Message("m1"))
        assert b.receive("a") == "m1" and b.ack("a", "m1") == "ok"
        b.open_consumer(ConsumerConfig("mid", "q", priority=5, **PREFETCH))  # type: ignore[arg-type]
        b.close("a")
        b.open_consumer(ConsumerConfig("top", "q", priority=9, **PREFETCH))  # type: ignore[arg-type]
        b.send("q", Message("m2"))
        got[rule] = [b.receive("mid"), b.receive("top")]
    assert got == {"dispatch": [None, "m2"], "priority": ["m2", None]}


def _drain(b: Broker, consumer: str) -> list[str]:
    """What the consumer receives until it receives nothing."""
    got: list[str] = []
    while (m := b.receive(consumer)) is not None:
        got.append(m)
    return got


@pytest.mark.rules("DELIVERY-25", "DELIVERY-24")
def test_each_priority_level_keeps_its_own_cursor() -> None:
    """cursor_per_priority (Artemis PriorityCollection): a, h (priority 5, room for one), b; m1 goes to
    h, m2 and m3 to the priority 0 level while h is full; h acks and takes m4; m5 goes on at that level
    from just past the consumer it served last. One cursor over all consumers (the option off) is
    just past h each time h is served, so b takes m2 and m5."""
    got: dict[bool, dict[str, list[str]]] = {}
    for per_level in (True, False):
        b = Broker(profile("artemis").evolve(cursor_per_priority=per_level))
        b.declare_queue(QueueConfig("q"))
        for name, prio, room in (("a", 0, 5), ("h", 5, 1), ("b", 0, 5)):
            b.open_consumer(ConsumerConfig(name, "q", priority=prio, window_bytes=-1, max_unacked=room))
        for m in ("m1", "m2", "m3"):
            b.send("q", Message(m))
        assert b.receive("h") == "m1" and b.ack("h", "m1") == "ok"
        for m in ("m4", "m5"):
            b.send("q", Message(m))
        got[per_level] = {c: _drain(b, c) for c in ("h", "a", "b")}
    assert got == {True: {"h": ["m4"], "a": ["m2", "m5"], "b": ["m3"]},
                   False: {"h": ["m4"], "a": ["m3"], "b": ["m2", "m5"]}}
