"""The `activemq` adapter against a real ActiveMQ Classic (Debian's, installed by
scripts/install-debian.sh; the adapter starts its own broker once per process). No mocks, no
skips: a missing ActiveMQ is a failure."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import stomp
from hypothesis import Phase, settings

from mqconform.adapters.activemq.adapter import CAPABILITIES, ActiveMQAdapter, _Listener, raw_roundtrip_loop
from mqconform.adapters.contract import Result, contract_violation
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring.machines.delivery import DeliveryMachine
from mqconform.conformance.exploring.machines.redelivery import RedeliveryMachine
from mqconform.conformance.exploring.runner import run_machine
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import profile
from tests.adapters.conftest import assert_unreachable

pytestmark = pytest.mark.broker("activemq")


def prefetch(n: int) -> dict[str, Any]:
    return {"window_bytes": -1, "max_unacked": n}


@pytest.fixture(scope="module")
def shared() -> Iterator[ActiveMQAdapter]:
    adapter = ActiveMQAdapter()
    yield adapter
    adapter.shutdown()


@pytest.fixture
def amq(shared: ActiveMQAdapter, namespace: str) -> Iterator[ActiveMQAdapter]:
    shared.open(namespace)
    yield shared
    shared.close()


def values(results: list[Result]) -> list[Any]:
    return [(r.type, r.value if r.is_ok else r.error) for r in results]


def nack_steps(a: Any) -> list[Result]:
    out = [a.declare_queue(QueueConfig("q")), a.open_consumer(ConsumerConfig("c", "q", **prefetch(3)))]
    out += [a.send("q", Message(f"m{i}")) for i in (1, 2, 3)]
    out += [a.receive("c"), a.receive("c"), a.nack("c", "m1"), a.nack("c", "m1")]
    out += [a.receive("c"), a.receive("c")]
    out += [a.close_consumer("c"), a.open_consumer(ConsumerConfig("c", "q", **prefetch(3)))]
    out += [a.receive("c"), a.receive("c"), a.ack("c", "m2"), a.ack("c", "m2"), a.receive("c")]
    return out


@pytest.mark.rules("REDELIVERY-8", "REDELIVERY-10", "DELIVERY-8")
def test_nack_dead_letters_and_close_returns_to_the_head(amq: ActiveMQAdapter) -> None:
    got = values(nack_steps(amq))
    assert got[5:9] == [("ok", "m1"), ("ok", "m2"), ("ok", "ok"), ("ok", "failed")]
    assert got[9:11] == [("ok", "m3"), ("ok", None)]  # m1 is not redelivered: it went to the DLQ
    assert got[13:] == [("ok", "m2"), ("ok", "m3"), ("ok", "ok"), ("ok", "failed"), ("ok", None)]
    model = ReferenceAdapter("activemq-classic")
    model.open("x")
    assert values(nack_steps(model)) == got


def test_nacked_persistent_message_is_in_its_dlq(amq: ActiveMQAdapter) -> None:
    amq.declare_queue(QueueConfig("q"))
    amq.open_consumer(ConsumerConfig("c", "q", **prefetch(1)))
    amq.send("q", Message("m1"))
    assert amq.receive("c").value == "m1"
    assert amq.nack("c", "m1").value == "ok"
    listener = amq.listener
    dlq = amq.queues["q"].destination.replace("/queue/", "/queue/DLQ.", 1)
    amq.conn.subscribe(dlq, id="peek", ack="client-individual")
    assert listener.wait_for(lambda: bool(listener.frames["peek"]), 5.0)
    frame = listener.frames["peek"].popleft()
    assert frame.headers["mqc-id"] == "m1"
    amq.conn.ack(frame.headers["ack"])
    amq.queues["q"].nacked -= 1  # taken out of the DLQ here, so close() has none to drain
    amq.conn.unsubscribe(id="peek")


@pytest.mark.rules("DELIVERY-5")
def test_prefetch_bounds_unacked_deliveries(amq: ActiveMQAdapter) -> None:
    a = amq
    a.declare_queue(QueueConfig("q"))
    a.open_consumer(ConsumerConfig("c", "q", **prefetch(2)))
    for i in (1, 2, 3):
        a.send("q", Message(f"m{i}"))
    assert [a.receive("c").value for _ in range(3)] == ["m1", "m2", None]
    a.ack("c", "m1")
    assert a.receive("c").value == "m3"


def test_what_stomp_cannot_do_is_unsupported(amq: ActiveMQAdapter) -> None:
    a = amq
    assert contract_violation(a) is None and a.profile == "activemq-classic"
    assert a.capabilities == CAPABILITIES
    assert a.declare_queue(QueueConfig("r", ring_size=3)).error.startswith("unsupported")
    assert a.declare_queue(QueueConfig("q")).is_ok
    assert a.declare_queue(QueueConfig("q2", address="q")).error.startswith("unsupported")
    assert a.open_consumer(ConsumerConfig("pull", "q", window_bytes=0)).error.startswith("unsupported")
    for result in (a.counters("q"), a.browse("q"), a.delivery_count("q", "m1"), a.commit("c"),
                   a.advance(5), a.send("q", Message("s", scheduled_at_ms=5))):
        assert result.type == "fail" and (result.error or "").startswith("unsupported")
    assert a.receive("nobody").type == "fail"


def test_close_drains_what_the_namespace_left(shared: ActiveMQAdapter, namespace: str) -> None:
    shared.open(namespace)
    shared.declare_queue(QueueConfig("q"))
    shared.open_consumer(ConsumerConfig("c", "q", **prefetch(1)))
    for i in (1, 2, 3):
        shared.send("q", Message(f"m{i}"))
    shared.receive("c")
    destination = shared.queues["q"].destination
    assert shared.broker is not None
    port = shared.broker.port
    shared.close()
    listener = _Listener()
    conn = stomp.Connection12([("127.0.0.1", port)], heartbeats=(0, 0))
    conn.set_listener("x", listener)
    conn.connect("admin", "admin", wait=True)
    try:
        conn.subscribe(destination, id="check", ack="auto")
        assert not listener.wait_for(lambda: bool(listener.frames["check"]), 0.5)
    finally:
        conn.disconnect()


def test_unreachable_broker_is_an_adapter_error(free_port: int) -> None:
    adapter = ActiveMQAdapter(url=f"stomp://admin:secret@127.0.0.1:{free_port}", timeout=1.0)
    assert_unreachable(adapter, f"activemq: cannot use stomp://admin:***@127.0.0.1:{free_port}",
                       max_seconds=10)


#: finding a difference needs no shrinking (shrinking replays against the broker many times)
FIND = settings(deadline=None, derandomize=True, database=None,
                phases=(Phase.explicit, Phase.reuse, Phase.generate))
FAST = settings(max_examples=8, stateful_step_count=12, deadline=None, derandomize=True, database=None)


@pytest.mark.rules("DELIVERY-3", "DELIVERY-5", "DELIVERY-7")
def test_small_conformance_run_under_the_claimed_profile(shared: ActiveMQAdapter) -> None:
    result = run_machine(DeliveryMachine, lambda: shared, profile("activemq-classic"), FAST, max_reruns=0)
    assert result.unknown is None, result.unknown
    assert result.findings == [], [f.message for f in result.findings]
    assert "receive.id" in result.checked


@pytest.mark.rules("REDELIVERY-8", "REDELIVERY-10")
def test_artemis_profile_finds_that_stomp_nack_dead_letters(shared: ActiveMQAdapter) -> None:
    """Under artemis a nacked message comes back; ActiveMQ's STOMP NACK sends it to the DLQ."""
    hyp = settings(FIND, max_examples=60, stateful_step_count=20)
    result = run_machine(RedeliveryMachine, lambda: shared, profile("artemis"), hyp, max_reruns=0)
    assert result.unknown is None, result.unknown
    assert result.findings, "the suite did not notice the dead-lettering NACK"
    finding = result.findings[0]
    assert finding.check == "receive.id" and "REDELIVERY-10" in finding.rules
    assert "nack" in [s.op for s in finding.steps]


def test_raw_roundtrip_loop(shared: ActiveMQAdapter) -> None:
    assert raw_roundtrip_loop(20) > 0


def test_broker_killed_mid_test_gives_info(namespace: str) -> None:
    """Kills the process-wide broker; the next open() of any adapter starts a new one."""
    adapter = ActiveMQAdapter(timeout=1.0)
    try:
        adapter.open(namespace)
        assert adapter.broker is not None
        adapter.declare_queue(QueueConfig("q"))
        adapter.open_consumer(ConsumerConfig("c", "q", **prefetch(1)))
        assert adapter.send("q", Message("m1")).is_ok
        adapter.broker.kill()
        t0 = time.monotonic()
        results = [adapter.send("q", Message("m2")), adapter.receive("c")]
        assert results[0].type == "info" and (results[0].error or "").startswith("activemq: ")
        assert results[1].type in ("info", "ok")  # m1 may already sit in the prefetch buffer
        assert time.monotonic() - t0 < 10
        adapter.close()
    finally:
        adapter.shutdown()


@pytest.mark.rules("DELIVERY-24")
def test_the_consumer_served_moves_to_the_end_of_the_list(shared: ActiveMQAdapter, namespace: str) -> None:
    """A campaign (seed 1, delivery area): Queue#doActualDispatch moves the consumer it served to
    the end of the consumer list, and a full consumer keeps its place. The model's consumer_rotation
    move_to_end holds both scenarios on the broker; a cursor (Artemis) fails the first, RabbitMQ's
    rotation (a full consumer loses its turn) the second, on the broker too."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    here = Path(__file__).parent / "scenarios"
    moves = load(here / "activemq-served-consumer-moves-to-the-end.yaml")
    loses_turn = load(here / "rabbitmq-full-consumer-loses-its-turn.yaml")
    claimed = profile("activemq-classic")
    assert run_scenario(moves, ReferenceAdapter(options=claimed)).verdict == "pass"
    cursor = ReferenceAdapter(options=claimed.evolve(consumer_rotation="cursor"))
    assert run_scenario(moves, cursor).verdict == "fail"
    assert run_scenario(moves, shared, namespace=namespace).verdict == "pass"
    assert run_scenario(loses_turn, ReferenceAdapter(options=claimed)).verdict == "fail"
    outcome = run_scenario(loses_turn, shared, namespace=f"{namespace}-b")
    assert (outcome.verdict, outcome.step) == ("fail", 12), outcome.verdict_line()


@pytest.mark.rules("DELIVERY-25", "DELIVERY-24")
def test_consumer_priority_header_orders_the_consumer_list(shared: ActiveMQAdapter, namespace: str) -> None:
    """SUBSCRIBE activemq.priority: the broker keeps its consumer list sorted by priority (a stable sort
    after each move to the end), so the priority 5 subscriptions take turns ahead of the earlier
    priority 0 one while they have room. The model holds it; stripped of the priorities it fails
    (tests/model/test_consumer_priority.py)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "activemq-consumer-priority.yaml")
    assert run_scenario(scenario, ReferenceAdapter(options=profile("activemq-classic"))).verdict == "pass"
    outcome = run_scenario(scenario, shared, namespace=namespace, strict=True)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("DELIVERY-26", "DELIVERY-24")
def test_exclusive_consumers_hand_over_and_a_higher_priority_takes_over(shared: ActiveMQAdapter,
                                                                        namespace: str) -> None:
    """SUBSCRIBE activemq.exclusive on every subscription of a single_active_consumer queue: only the
    exclusive owner is dispatched; when it closes, what it held returns to the first subscription of
    the highest priority, in order; a new subscription of higher priority takes over at once
    (Queue#addSubscription / #removeSubscription). The activemq-classic profile (single_active_next
    priority_takeover) holds it, on the model and on the broker; RabbitMQ classic's choice (no
    takeover) fails it on the model."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "activemq-exclusive-consumer-handover.yaml")
    claimed = profile("activemq-classic")
    assert run_scenario(scenario, ReferenceAdapter(options=claimed)).verdict == "pass"
    no_takeover = ReferenceAdapter(options=claimed.evolve(single_active_next="priority"))
    assert run_scenario(scenario, no_takeover).verdict == "fail"
    outcome = run_scenario(scenario, shared, namespace=namespace, strict=True)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("REDELIVERY-17", "DELIVERY-26")
def test_a_close_appends_to_the_redelivery_list(shared: ActiveMQAdapter, namespace: str) -> None:
    """A campaign (seed 4, delivery area): a closed subscription's messages join the tail of the
    queue's redelivery list (QueueDispatchPendingList#addForRedelivery), behind earlier returns nobody
    took yet. The profile's return_placement returns holds it on the model and the broker; the head
    placement it had before fails at the first receive, on the model."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    here = Path(__file__).parent / "scenarios"
    scenario = load(here / "activemq-returns-queue-behind-earlier-returns.yaml")
    claimed = profile("activemq-classic")
    assert run_scenario(scenario, ReferenceAdapter(options=claimed)).verdict == "pass"
    at_head = run_scenario(scenario, ReferenceAdapter(options=claimed.evolve(return_placement="head",
                                                                               return_order="newest_first")))
    assert (at_head.verdict, at_head.step) == ("fail", 10)
    outcome = run_scenario(scenario, shared, namespace=namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()
