"""The `mqtt` adapter against real mosquitto processes (the adapter's own, one per queue limit).
No mocks, no skips: a missing mosquitto is a failure."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import Phase, settings

from mqconform.adapters.contract import Result, contract_violation
from mqconform.adapters.mqtt.adapter import CAPABILITIES, MqttAdapter, _Link, raw_roundtrip_loop
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring.machines.delivery import DeliveryMachine
from mqconform.conformance.exploring.machines.ring import RingMachine
from mqconform.conformance.exploring.runner import run_machine
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import profile
from tests.adapters.conftest import assert_unreachable

pytestmark = pytest.mark.broker("mqtt")

PULL = {"window_bytes": 0}


@pytest.fixture(scope="module")
def shared() -> Iterator[MqttAdapter]:
    """One adapter (and its mosquitto processes) per module and xdist worker."""
    adapter = MqttAdapter()
    yield adapter
    adapter.shutdown()


@pytest.fixture
def mqtt(shared: MqttAdapter, namespace: str) -> Iterator[MqttAdapter]:
    shared.open(namespace)
    yield shared
    shared.close()


def values(results: list[Result]) -> list[Any]:
    return [(r.type, r.value if r.is_ok else r.error) for r in results]


def ring_steps(a: Any) -> list[Result]:
    """broker-semantics.md live probe: ring 2, a pull consumer, 4 sends, receive, close, ack."""
    out = [a.declare_queue(QueueConfig("q", ring_size=2)), a.open_consumer(ConsumerConfig("c", "q", **PULL))]
    out += [a.send("q", Message(f"m{i}")) for i in (1, 2, 3, 4)]
    out += [a.receive("c"), a.receive("c"), a.receive("c")]
    out += [a.close_consumer("c"), a.open_consumer(ConsumerConfig("c", "q", **PULL))]
    out += [a.receive("c"), a.ack("c", "m1"), a.ack("c", "m1")]
    out += [a.send("q", Message("m5")), a.send("q", Message("m6")), a.receive("c"), a.receive("c"),
            a.receive("c")]
    return out


@pytest.mark.rules("RING-3", "RING-4", "RING-5", "DELIVERY-2", "DELIVERY-8", "REDELIVERY-10")
def test_full_session_drops_the_newest_silently(mqtt: MqttAdapter) -> None:
    got = values(ring_steps(mqtt))
    assert got[2:6] == [("ok", "accepted")] * 4  # m3, m4 dropped, the publisher still got PUBACK
    assert got[6:9] == [("ok", "m1"), ("ok", "m2"), ("ok", None)]
    assert got[11:14] == [("ok", "m1"), ("ok", "ok"), ("ok", "failed")]
    # stored m2 (unacked) + m5 = 2: m6 dropped although only one message is pending
    assert got[14:] == [("ok", "accepted"), ("ok", "accepted"), ("ok", "m2"), ("ok", "m5"), ("ok", None)]
    model = ReferenceAdapter("mosquitto")
    model.open("x")
    assert values(ring_steps(model)) == got


@pytest.mark.rules("REDELIVERY-8", "REDELIVERY-10")
def test_close_then_reconnect_resends_in_order_with_dup(mqtt: MqttAdapter) -> None:
    a = mqtt
    a.declare_queue(QueueConfig("q"))
    a.open_consumer(ConsumerConfig("c", "q", **PULL))
    for i in (1, 2, 3):
        a.send("q", Message(f"m{i}"))
    assert [a.receive("c").value for _ in range(2)] == ["m1", "m2"]
    assert a.close_consumer("c").is_ok
    assert a.receive("c").type == "fail"  # closed
    a.open_consumer(ConsumerConfig("c", "q", **PULL))
    a.send("q", Message("m4"))  # forces a reconnect of the session
    assert [a.receive("c").value for _ in range(5)] == ["m1", "m2", "m3", "m4", None]
    dup = a.queues["q"].dup
    assert dup["m1"] and dup["m2"] and dup["m3"]  # in flight since the first sync: resent, DUP=1
    assert not dup["m4"]


@pytest.mark.rules("DELIVERY-2")
def test_two_queues_on_one_address_each_get_a_copy(mqtt: MqttAdapter) -> None:
    a = mqtt
    a.declare_queue(QueueConfig("q1", address="t"))
    a.declare_queue(QueueConfig("q2", address="t"))
    a.open_consumer(ConsumerConfig("c1", "q1", **PULL))
    a.open_consumer(ConsumerConfig("c2", "q2", **PULL))
    a.send("t", Message("m1"))
    assert a.receive("c1").value == "m1" and a.receive("c2").value == "m1"
    assert a.declare_queue(QueueConfig("q3", address="t", ring_size=2)).error.startswith("unsupported")


def test_what_mosquitto_cannot_do_is_unsupported(mqtt: MqttAdapter) -> None:
    a = mqtt
    assert contract_violation(a) is None and a.profile == "mosquitto" and a.capabilities == CAPABILITIES
    assert a.declare_queue(QueueConfig("z", ring_size=0)).is_ok
    assert a.open_consumer(ConsumerConfig("cz", "z", **PULL)).is_ok
    assert a.send("z", Message("m0")).value == "accepted"
    assert a.receive("cz").value is None  # zero capacity: dropped silently
    assert a.declare_queue(QueueConfig("q")).is_ok
    assert a.declare_queue(QueueConfig("q")).type == "fail"
    assert a.open_consumer(ConsumerConfig("push", "q")).error.startswith("unsupported")
    capped = ConsumerConfig("cap", "q", window_bytes=0, max_unacked=2)
    assert a.open_consumer(capped).error.startswith("unsupported")
    assert a.open_consumer(ConsumerConfig("c", "q", **PULL)).is_ok
    a.send("q", Message("m1"))
    assert a.receive("c").value == "m1"
    for result in (a.nack("c", "m1"), a.counters("q"), a.browse("q"), a.delivery_count("q", "m1"),
                   a.advance(5), a.send("q", Message("s", scheduled_at_ms=5))):
        assert result.type == "fail" and (result.error or "").startswith("unsupported")
    assert a.receive("nobody").type == "fail"


def test_close_removes_the_sessions(shared: MqttAdapter, namespace: str) -> None:
    shared.open(namespace)
    shared.declare_queue(QueueConfig("q", ring_size=3))
    shared.open_consumer(ConsumerConfig("c", "q", **PULL))
    shared.send("q", Message("m1"))
    queue = shared.queues["q"]
    shared.close()
    link = _Link("127.0.0.1", queue.port, queue.client_id, 3.0, None)
    link.connect(clean_start=False, expiry=0)
    flags: list[bool] = []
    link.client.on_connect = lambda _c, _u, f, _r, _p: flags.append(f.session_present)
    link.close()
    link = _Link("127.0.0.1", queue.port, queue.client_id, 3.0, None)
    link.client.on_connect = lambda _c, _u, f, _r, _p: (flags.append(f.session_present),
                                                        setattr(link, "connected", True))
    link.connect(clean_start=False, expiry=0)
    link.close()
    assert flags == [False]  # the session (and its message) is gone


def test_unreachable_broker_is_an_adapter_error(free_port: int) -> None:
    adapter = MqttAdapter(url=f"mqtt://user:secret@127.0.0.1:{free_port}", timeout=1.0)
    assert_unreachable(adapter, f"mqtt: cannot use mqtt://127.0.0.1:{free_port}")


def test_broker_killed_mid_test_gives_info(namespace: str) -> None:
    adapter = MqttAdapter(timeout=1.0)
    try:
        adapter.open(namespace)
        adapter.declare_queue(QueueConfig("q", ring_size=2))
        adapter.open_consumer(ConsumerConfig("c", "q", **PULL))
        assert adapter.send("q", Message("m1")).is_ok
        adapter.pool.processes[2].kill()
        t0 = time.monotonic()
        results = [adapter.send("q", Message("m2")), adapter.receive("c")]
        assert [r.type for r in results] == ["info", "info"]
        assert all((r.error or "").startswith("mqtt: ") for r in results)
        assert time.monotonic() - t0 < 10
        adapter.close()  # must not hang or raise
    finally:
        adapter.shutdown()


#: finding a difference needs no shrinking (shrinking replays against the broker many times)
FIND = settings(deadline=None, derandomize=True, database=None,
                phases=(Phase.explicit, Phase.reuse, Phase.generate))
FAST = settings(max_examples=8, stateful_step_count=12, deadline=None, derandomize=True, database=None)


@pytest.mark.rules("RING-3", "RING-6", "DELIVERY-3", "DELIVERY-7")
def test_small_conformance_run_under_the_claimed_profile(shared: MqttAdapter) -> None:
    for machine in (DeliveryMachine, RingMachine):
        result = run_machine(machine, lambda: shared, profile("mosquitto"), FAST, max_reruns=0)
        assert result.unknown is None, result.unknown
        assert result.findings == [], [f.message for f in result.findings]
        assert "receive.id" in result.checked and "send.result" in result.checked


@pytest.mark.rules("RING-3", "RING-6")
def test_artemis_profile_finds_that_mosquitto_drops_the_newest(shared: MqttAdapter) -> None:
    """Under artemis a full ring evicts its head; Mosquitto keeps the head and drops the new one."""
    hyp = settings(FIND, max_examples=60, stateful_step_count=20)
    result = run_machine(RingMachine, lambda: shared, profile("artemis"), hyp, max_reruns=0)
    assert result.findings, "the suite did not tell Mosquitto from a ring queue"
    finding = result.findings[0]
    assert finding.check == "receive.id" and "RING-6" in finding.rules
    ops = [s.op.removesuffix("_batch") for s in finding.steps]  # a batch step is its single ops
    sent = sum(len(s.args["ids"]) if s.op == "send_batch" else s.op == "send" for s in finding.steps)
    assert sent >= 2 and "receive" in ops


def test_raw_roundtrip_loop() -> None:
    assert raw_roundtrip_loop(20) > 0


@pytest.mark.rules("REDELIVERY-23")
def test_two_closes_give_back_in_original_order(shared: MqttAdapter, namespace: str) -> None:
    """A campaign (seed 9, delivery area): what two closed consumers held comes back in its
    original order (the session's in-flight messages), which the profile's return_placement sorted
    says; a head placement in close order fails on the model and the broker does not follow it."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "mosquitto-returns-in-original-order.yaml")
    assert run_scenario(scenario, ReferenceAdapter("mosquitto")).verdict == "pass"
    head = ReferenceAdapter(options=profile("mosquitto").evolve(return_placement="head"))
    assert run_scenario(scenario, head).verdict == "fail"
    outcome = run_scenario(scenario, shared, namespace=namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()
