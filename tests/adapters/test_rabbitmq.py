"""The `rabbitmq` adapter against the machine's RabbitMQ 3.10.8 (127.0.0.1:5672, guest/guest), classic
and quorum queues. No mocks, no skips: a missing broker is a failure (also under CI=true)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions as pex
import pytest
from hypothesis import Phase, settings

from mqconform.adapters.contract import Result, contract_violation
from mqconform.adapters.rabbitmq.adapter import CAPABILITIES, RabbitMQAdapter, raw_roundtrip_loop, redact
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.machines.delivery import DeliveryMachine
from mqconform.conformance.exploring.machines.redelivery import RedeliveryMachine
from mqconform.conformance.exploring.machines.ring import RingMachine
from mqconform.conformance.exploring.runner import run_machine
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import profile
from tests.adapters.conftest import assert_same_names_do_not_meet, assert_unreachable

pytestmark = pytest.mark.broker("rabbitmq")

SERVICE_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
PULL = {"window_bytes": 0}
QUEUE_TYPES = ("classic", "quorum")


@pytest.fixture(params=QUEUE_TYPES)
def rabbit(request: pytest.FixtureRequest, namespace: str) -> Iterator[RabbitMQAdapter]:
    adapter = RabbitMQAdapter(url=SERVICE_URL, queue_type=request.param)
    adapter.open(namespace)
    yield adapter
    adapter.shutdown()


def queue_exists(name: str) -> bool:
    conn = pika.BlockingConnection(pika.URLParameters(SERVICE_URL))
    try:
        conn.channel().queue_declare(name, passive=True)
        return True
    except pex.ChannelClosedByBroker as exc:
        assert exc.reply_code == 404
        return False
    finally:
        if conn.is_open:
            conn.close()


def delete_queues(names: list[str], exchanges: list[str] = ()) -> None:  # type: ignore[assignment]
    conn = pika.BlockingConnection(pika.URLParameters(SERVICE_URL))
    try:
        channel = conn.channel()
        for name in names:
            channel.queue_delete(name)
        for exchange in exchanges:
            channel.exchange_delete(exchange)
    finally:
        conn.close()


def values(results: list[Result]) -> list[Any]:
    return [(r.type, r.value if r.is_ok else r.error) for r in results]


def small(max_examples: int) -> settings:
    return suite_settings.get("dev", max_examples=max_examples, database=None, derandomize=True)


def test_contract_and_capabilities() -> None:
    for queue_type, claimed in (("classic", "rabbitmq-classic"), ("quorum", "rabbitmq-quorum")):
        adapter = RabbitMQAdapter(url=SERVICE_URL, queue_type=queue_type)
        assert contract_violation(adapter) is None
        assert adapter.profile == claimed
        assert adapter.capabilities == CAPABILITIES[queue_type]
        for missing in ("browse", "pending_order", "scheduling", "transactions", "window_bytes",
                        "max_unacked", "counter:added", "counter:replaced", "counter:killed"):
            assert missing not in adapter.capabilities
    assert "delivery_count" in CAPABILITIES["quorum"] and "delivery_count" not in CAPABILITIES["classic"]
    with pytest.raises(TypeError):
        RabbitMQAdapter(queue_type="stream")


@pytest.mark.rules("DELIVERY-1", "DELIVERY-2", "DELIVERY-4", "DELIVERY-8")
def test_round_trip_and_counters(rabbit: RabbitMQAdapter) -> None:
    a = rabbit
    assert a.declare_queue(QueueConfig("q")).is_ok
    assert a.open_consumer(ConsumerConfig("c", "q", **PULL)).is_ok
    assert a.receive("c").value is None
    assert a.send("q", Message("m1")).value == "accepted"
    assert a.send("q", Message("m2")).value == "accepted"
    assert a.receive("c").value == "m1"
    assert a.counters("q").value == {"message_count": 2, "pending_count": 1, "delivering_count": 1}
    assert a.ack("c", "m1").value == "ok"
    assert a.ack("c", "m1").value == "failed"
    assert a.counters("q").value == {"message_count": 1, "pending_count": 1, "delivering_count": 0}


def ring_steps(a: Any) -> list[Result]:
    """environment.md probe: x-max-length 3 drop-head, 3 unacked, a 4th publish, channel close."""
    out = [a.declare_queue(QueueConfig("q", ring_size=3)), a.open_consumer(ConsumerConfig("c", "q", **PULL))]
    out += [a.send("q", Message(f"m{i}")) for i in (1, 2, 3)]
    out += [a.receive("c") for _ in range(3)]
    out += [a.send("q", Message("m4")), a.counters("q"), a.close_consumer("c"), a.counters("q"),
            a.open_consumer(ConsumerConfig("c", "q", **PULL))]
    out += [a.receive("c") for _ in range(4)]
    return out


@pytest.mark.rules("RING-3", "RING-4", "RING-5", "RING-7")
def test_max_length_counts_ready_only_and_drop_head_after_requeue(rabbit: RabbitMQAdapter) -> None:
    got = values(ring_steps(rabbit))
    assert got[9] == ("ok", {"message_count": 4, "pending_count": 1, "delivering_count": 3})
    assert got[11] == ("ok", {"message_count": 3, "pending_count": 3, "delivering_count": 0})
    assert [v for _, v in got[13:]] == ["m2", "m3", "m4", None]  # m1 dropped after the requeue
    model = ReferenceAdapter(rabbit.profile)
    model.open("x")
    expected = values(ring_steps(model))
    expected[9] = ("ok", {k: expected[9][1][k] for k in got[9][1]})
    expected[11] = ("ok", {k: expected[11][1][k] for k in got[11][1]})
    assert got == expected


@pytest.mark.rules("DELIVERY-1", "DELIVERY-5")
def test_prefetch_consumer_buffers_up_to_max_unacked(rabbit: RabbitMQAdapter) -> None:
    a = rabbit
    a.declare_queue(QueueConfig("q"))
    assert a.open_consumer(ConsumerConfig("c", "q", window_bytes=-1, max_unacked=2)).is_ok
    for i in range(1, 5):
        assert a.send("q", Message(f"m{i}")).value == "accepted"
    # the broker pushed two: both delivering although not yet received
    assert a.counters("q").value == {"message_count": 4, "pending_count": 2, "delivering_count": 2}
    assert [a.receive("c").value for _ in range(3)] == ["m1", "m2", None]
    assert a.ack("c", "m1").value == "ok"  # frees one prefetch slot: m3 is pushed
    assert a.counters("q").value == {"message_count": 3, "pending_count": 1, "delivering_count": 2}
    assert a.receive("c").value == "m3"
    assert a.close_consumer("c").is_ok  # m2, m3 back to the queue
    assert a.counters("q").value == {"message_count": 3, "pending_count": 3, "delivering_count": 0}


@pytest.mark.rules("REDELIVERY-1", "REDELIVERY-2", "REDELIVERY-5", "REDELIVERY-6")
def test_quorum_delivery_count_and_delivery_limit(namespace: str) -> None:
    a = RabbitMQAdapter(url=SERVICE_URL, queue_type="quorum")
    a.open(namespace)
    try:
        a.declare_address(AddressConfig("dla"))
        a.declare_queue(QueueConfig("dlq", address="dla"))
        a.declare_queue(QueueConfig("q", max_delivery_attempts=1, dead_letter="dla"))
        a.open_consumer(ConsumerConfig("c", "q", **PULL))
        a.send("q", Message("m1"))
        assert a.receive("c").value == "m1"
        assert a.delivery_count("q", "m1").value == 1  # no x-delivery-count header yet
        assert a.nack("c", "m1").value == "ok"
        assert a.receive("c").value == "m1"
        assert a.delivery_count("q", "m1").value == 2  # x-delivery-count 1
        assert a.nack("c", "m1").value == "ok"  # returned twice > limit 1: dead-lettered
        assert a.counters("q").value["message_count"] == 0
        assert a.counters("dlq").value["pending_count"] == 1
        assert a.receive("c").value is None
    finally:
        a.shutdown()


def test_what_rabbitmq_cannot_do_is_unsupported(rabbit: RabbitMQAdapter) -> None:
    a = rabbit
    assert a.declare_queue(QueueConfig("q")).is_ok
    assert a.declare_queue(QueueConfig("d", redelivery_delay_ms=20)).error.startswith("unsupported")
    assert a.declare_address(AddressConfig("paged", max_size_bytes=10)).error.startswith("unsupported")
    assert a.open_consumer(ConsumerConfig("w", "q")).error.startswith("unsupported")
    assert a.open_consumer(ConsumerConfig("b", "q", browser=True)).error.startswith("unsupported")
    capped = ConsumerConfig("c", "q", window_bytes=0, max_unacked=2)
    assert a.open_consumer(capped).error.startswith("unsupported")
    assert a.send("q", Message("s", scheduled_at_ms=5)).error.startswith("unsupported")
    for result in (a.browse("q"), a.pending_ids("q"), a.commit("c"), a.set_ring_size("q", 2), a.paging("q")):
        assert result.type == "fail" and result.error.startswith("unsupported")
    assert a.call("take", queue="x").error.startswith("unsupported: flow-control component")
    assert a.receive("nobody").type == "fail"
    assert a.declare_queue(QueueConfig("q")).type == "fail"


@pytest.mark.rules("DELIVERY-2")
def test_several_queues_on_one_address_each_get_a_copy(rabbit: RabbitMQAdapter) -> None:
    a = rabbit
    a.declare_address(AddressConfig("topic"))
    for name in ("q1", "q2"):
        a.declare_queue(QueueConfig(name, address="topic"))
        a.open_consumer(ConsumerConfig(f"c-{name}", name, **PULL))
    assert a.send("topic", Message("m1")).value == "accepted"
    assert [a.receive("c-q1").value, a.receive("c-q2").value] == ["m1", "m1"]


def test_close_deletes_every_queue(namespace: str) -> None:
    for queue_type in QUEUE_TYPES:
        a = RabbitMQAdapter(url=SERVICE_URL, queue_type=queue_type)
        a.open(namespace)
        for name in ("a", "b"):
            a.declare_queue(QueueConfig(name, ring_size=5))
        a.open_consumer(ConsumerConfig("c", "a", window_bytes=-1, max_unacked=1))
        a.send("a", Message("m1"))
        names = list(a.physical_queues)
        assert len(names) == 2 and all(queue_exists(n) for n in names)
        a.close()
        assert not any(queue_exists(n) for n in names)
        a.shutdown()


def test_two_adapters_with_the_same_names_do_not_meet(namespace: str) -> None:
    assert_same_names_do_not_meet(lambda: RabbitMQAdapter(url=SERVICE_URL), namespace)


def test_unreachable_broker_is_an_adapter_error(free_port: int) -> None:
    adapter = RabbitMQAdapter(url=f"amqp://guest:secret@127.0.0.1:{free_port}/%2F", timeout=1.0)
    assert_unreachable(adapter, f"rabbitmq: cannot use amqp://guest:***@127.0.0.1:{free_port}/")
    assert redact("amqp://127.0.0.1:5672/") == "amqp://127.0.0.1:5672/"


def test_lost_connection_gives_info(namespace: str) -> None:
    a = RabbitMQAdapter(url=SERVICE_URL)
    a.open(namespace)
    try:
        a.declare_queue(QueueConfig("q"))
        a.open_consumer(ConsumerConfig("c", "q", **PULL))
        assert a._conn is not None
        # the TCP connection dies under the adapter (as when the broker goes away)
        a._conn._impl._transport._sock.shutdown(socket.SHUT_RDWR)
        t0 = time.monotonic()
        results = [a.send("q", Message("m1")), a.receive("c"), a.counters("q")]
        assert time.monotonic() - t0 < 10
        assert [r.type for r in results] == ["info", "info", "info"]
        assert all(r.error and r.error.startswith("rabbitmq: ") for r in results)
        names, exchanges = list(a.physical_queues), list(a.exchanges)
    finally:
        a.shutdown()  # must not raise with the connection gone
    a.open(namespace)  # reconnects
    a.shutdown()
    delete_queues(names, exchanges)  # the adapter could not: its connection was gone
    assert not any(queue_exists(n) for n in names)


@pytest.mark.rules("DELIVERY-1", "DELIVERY-3", "DELIVERY-4", "DELIVERY-6", "DELIVERY-7", "DELIVERY-8")
def test_delivery_machine_passes_under_the_claimed_profile(namespace: str) -> None:
    for queue_type in QUEUE_TYPES:
        adapter = RabbitMQAdapter(url=SERVICE_URL, queue_type=queue_type)
        try:
            result = run_machine(DeliveryMachine, lambda a=adapter: a, profile(adapter.profile), small(8))
        finally:
            adapter.shutdown()
        assert result.unknown is None
        assert result.findings == []
        assert "counters.delivering_count" in result.checked


@pytest.mark.rules("REDELIVERY-8", "REDELIVERY-10", "DELIVERY-7")
def test_redelivery_machine_passes_under_rabbitmq_classic() -> None:
    adapter = RabbitMQAdapter(url=SERVICE_URL)
    try:
        result = run_machine(RedeliveryMachine, lambda: adapter, profile("rabbitmq-classic"), small(6))
    finally:
        adapter.shutdown()
    assert result.unknown is None
    assert result.findings == []


@pytest.mark.rules("RING-3", "RING-4")
def test_the_suite_finds_the_ready_only_bound_against_artemis() -> None:
    """Checked against artemis, the suite finds that RabbitMQ counts only ready messages and
    enforces drop-head after a requeue, where Artemis lets a nacked message return over the bound
    (RING-9) and keeps it: a counter or receive finding on the ring rules."""
    adapter = RabbitMQAdapter(url=SERVICE_URL)
    try:
        no_shrink = settings(small(40), phases=(Phase.explicit, Phase.reuse, Phase.generate))
        result = run_machine(RingMachine, lambda: adapter, profile("artemis"), no_shrink, max_reruns=6)
    finally:
        adapter.shutdown()
    assert result.unknown is None
    rules = {rule for finding in result.findings for rule in finding.rules}
    assert rules & {"RING-3", "RING-4", "RING-9"}, [f.message for f in result.findings]


def test_raw_roundtrip_loop() -> None:
    assert raw_roundtrip_loop(20, url=SERVICE_URL) > 0


@pytest.mark.rules("RING-23")
def test_quorum_reject_publish_follows_the_overshoot_and_80_percent_option_and_differs_from_artemis() -> None:
    """A quorum queue with x-overflow reject-publish: the model with the quorum reject options
    (limit checked after the enqueue, accepting again at 80 %) predicts every publish answer, and
    checked against artemis the suite finds the refused publishes (send.result, RING-3)."""
    quorum_reject = profile("rabbitmq-quorum").evolve(overflow="reject_new", reject_check="after",
                                                      unblock_ratio=0.8)
    adapter = RabbitMQAdapter(url=SERVICE_URL, queue_type="quorum", overflow="reject-publish")
    try:
        no_shrink = settings(small(25), phases=(Phase.explicit, Phase.reuse, Phase.generate))
        same = run_machine(RingMachine, lambda: adapter, quorum_reject, no_shrink, max_reruns=3)
        artemis = run_machine(RingMachine, lambda: adapter, profile("artemis"), small(25), max_reruns=0)
    finally:
        adapter.shutdown()
    assert same.unknown is None and "send.result" in same.checked
    assert all(f.check != "send.result" for f in same.findings), [f.message for f in same.findings]
    assert artemis.findings, "checked against artemis, refused publishes must be found"
    assert len(artemis.findings[0].steps) <= 12


@pytest.mark.rules("DELIVERY-16", "REDELIVERY-13")
def test_quorum_duplicate_credit_bug_is_found_exactly_where_it_exists(namespace: str) -> None:
    """rabbitmq-server#5609 (found by this suite on 3.10.8): after a nack dead-letters a message at its
    delivery limit, a prefetch-1 consumer receives a second unacknowledged message. The model holds the
    scenario; a broker before 3.11 breaks it at the last receive, a later one holds it."""
    from pathlib import Path

    from mqconform.conformance.judging.deviations import load_registry, parse_version
    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-5609-duplicate-credit.yaml")
    assert run_scenario(scenario, ReferenceAdapter("rabbitmq-quorum")).verdict == "pass"
    adapter = RabbitMQAdapter(url=SERVICE_URL, queue_type="quorum")
    outcome = run_scenario(scenario, adapter, namespace=namespace)
    version = parse_version(adapter.server_version)
    assert version is not None
    registered = [d for d in load_registry().deviations if d.model == "rabbitmq-server-5609"]
    assert registered and registered[0].source.endswith("/5609") and "DELIVERY-16" in registered[0].rules
    assert registered[0].scenario == "tests/adapters/scenarios/rabbitmq-5609-duplicate-credit.yaml"
    if version < (3, 11):
        assert (outcome.verdict, outcome.step, outcome.op) == ("fail", 13, "receive")
        assert "actual m3" in outcome.message
    else:
        assert outcome.verdict == "pass", outcome.verdict_line()


def _on_rabbitmq(scenario: Any, queue_type: str, namespace: str, strict: bool = False) -> tuple[Any, str]:
    """Run a scenario on the RabbitMQ service (a queue type of its own): its outcome and the server's
    version."""
    from mqconform.scenario.runner import run_scenario

    adapter = RabbitMQAdapter(url=SERVICE_URL, queue_type=queue_type)
    try:
        return run_scenario(scenario, adapter, strict=strict, namespace=namespace), adapter.server_version
    finally:
        adapter.shutdown()


@pytest.mark.rules("RING-14")
def test_classic_requeue_over_max_length_drops_the_requeued_head(namespace: str) -> None:
    """A campaign (ring area, dev settings): with x-max-length 1, a nacked m1 goes back to the head, is
    dropped by maybe_drop_head, and only then is m2 delivered. The model under rabbitmq-classic and
    the broker both hold the scenario; the model without requeue_trims_first does not."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    path = Path(__file__).parent / "scenarios" / "rabbitmq-classic-requeue-drop-head.yaml"
    scenario = load(path)
    assert run_scenario(scenario, ReferenceAdapter("rabbitmq-classic")).verdict == "pass"
    old = ReferenceAdapter(options=profile("rabbitmq-classic").evolve(requeue_trims_first=False))
    assert run_scenario(scenario, old).verdict == "fail"
    outcome, _ = _on_rabbitmq(scenario, "classic", namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()



@pytest.mark.rules("DELIVERY-22")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_invalid_ack_example_holds_on_rabbitmq(queue_type: str, namespace: str) -> None:
    """The worked example: a double ack and a nack of another consumer's message each close the
    sender's channel (406); its messages return and it goes on on a new channel."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parents[2] / "spec" / "examples" / "invalid-ack-closes-channel.yaml")
    claimed = f"rabbitmq-{queue_type}"
    assert run_scenario(scenario, ReferenceAdapter(claimed), strict=True).verdict == "pass"
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace, strict=True)
    assert outcome.verdict == "pass", outcome.verdict_line()



@pytest.mark.rules("REDELIVERY-2", "REDELIVERY-12", "REDELIVERY-13")
def test_quorum_close_counts_as_a_return_once(namespace: str) -> None:
    """A campaign (redelivery area): four closes and a nack make x-delivery-count 5 > limit 4, so the
    nack dead-letters m1, on the model and on the broker; the adapter closes a consumer's channel
    without pika's per-delivery rejects (each of which a quorum queue counts as a return)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-quorum-close-counts-as-return.yaml")
    assert run_scenario(scenario, ReferenceAdapter("rabbitmq-quorum")).verdict == "pass"
    outcome, _ = _on_rabbitmq(scenario, "quorum", namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()
    assert not outcome.not_applicable


@pytest.mark.rules("REDELIVERY-1")
def test_quorum_delivery_count_of_a_message_not_held_is_not_observable(namespace: str) -> None:
    """The count travels on deliveries: for a message the adapter does not hold the answer is
    `not observable` (the suite skips that one observation), never `unsupported` (a capability gap)."""
    adapter = RabbitMQAdapter(url=SERVICE_URL, queue_type="quorum")
    adapter.open(namespace)
    try:
        adapter.declare_queue(QueueConfig("q"))
        adapter.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
        adapter.send("q", Message("m1"))
        unheld = adapter.delivery_count("q", "m1")
        assert unheld.is_not_observable and "m1" in (unheld.error or "")
        assert adapter.receive("c").value == "m1"
        assert adapter.delivery_count("q", "m1") == Result.ok(1)
        adapter.ack("c", "m1")
        assert adapter.delivery_count("q", "m1").is_not_observable
    finally:
        adapter.shutdown()


@pytest.mark.parametrize(("name", "step", "checks"), [
    # a campaign's counterexample: four closes and a nack at the delivery limit dead-letter m1 on both sides
    pytest.param("rabbitmq-quorum-closes-then-nack-at-limit.yaml", 17,
                 {"counters.pending_count", "counters.delivering_count", "receive.id"},
                 marks=pytest.mark.rules("REDELIVERY-8", "REDELIVERY-10", "REDELIVERY-13"), id="four-closes"),
    # a fresh seed's (55331): a close returns m1, a new prefetch-1 consumer takes it, the nack drops it
    # at its delivery limit of 1
    pytest.param("rabbitmq-5609-close-then-nack-at-limit-1.yaml", 7,
                 {"counters.message_count", "purge.result", "ack.result", "delivery_count"},
                 marks=pytest.mark.rules("DELIVERY-1", "DELIVERY-16", "REDELIVERY-12"), id="limit-1"),
])
def test_quorum_nack_at_the_limit_after_a_close_is_5609_before_3_11(
        name: str, step: int, checks: set[str], namespace: str) -> None:
    """The model and the broker agree up to the nack at the delivery limit; before 3.11 the broker's
    duplicate credit (rabbitmq-server#5609) leaves one message fewer ready right after it (the checks
    that showed it: `checks`). The broker's answers are those of the #5609 bug model at every step
    before 3.11 (the registry's replay), and not after."""
    from pathlib import Path

    from mqconform.adapters.contract import model_for
    from mqconform.conformance.judging.bug_replay import holds_under
    from mqconform.conformance.judging.deviations import parse_version
    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    assert checks
    scenario = load(Path(__file__).parent / "scenarios" / name)
    assert run_scenario(scenario, ReferenceAdapter("rabbitmq-quorum")).verdict == "pass"
    outcome, server_version = _on_rabbitmq(scenario, "quorum", namespace)
    version = parse_version(server_version)
    assert version is not None
    steps = [{s.op: s.args} for s in scenario.steps if s.op is not None]
    adapter = RabbitMQAdapter(url=SERVICE_URL, queue_type="quorum")
    try:
        claimed = model_for(profile("rabbitmq-quorum"), frozenset(adapter.capabilities))
        replayed = holds_under(steps, "rabbitmq-server-5609", claimed, lambda: adapter)
    finally:
        adapter.shutdown()
    if version < (3, 11):
        assert (outcome.verdict, outcome.step, outcome.op) == ("fail", step, "nack")
        assert "pending_count: expected 1, actual 0" in outcome.message
        assert replayed
    else:
        assert outcome.verdict == "pass", outcome.verdict_line()
        assert not replayed


@pytest.mark.rules("DELIVERY-22")
def test_invalid_ack_reopens_a_prefetch_consumer(rabbit: RabbitMQAdapter) -> None:
    """A prefetch consumer whose channel the broker closed subscribes again; an unknown id with
    multiple=true is a channel error too. The model says the same (quorum: the close counted)."""
    model = ReferenceAdapter(rabbit.profile)
    for side in (rabbit, model):
        side.declare_queue(QueueConfig("q"))
        side.open_consumer(ConsumerConfig("c", "q", window_bytes=-1, max_unacked=2))
        for m in ("m1", "m2", "m3"):
            side.send("q", Message(m))
    got = [(side.receive("c").value, side.nack("c", "nope", requeue=False, multiple=True).value,
            side.counters("q").value["delivering_count"], side.receive("c").value,
            side.ack("c", "m1").value) for side in (rabbit, model)]
    assert got[0] == got[1] == ("m1", "failed", 2, "m1", "ok")
    if rabbit.queue_type == "quorum":
        assert rabbit.receive("c").value == "m2" and rabbit.delivery_count("q", "m2").value == 2


@pytest.mark.rules("DELIVERY-24")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_a_consumer_found_full_rejoins_the_rotation_at_the_end(queue_type: str, namespace: str) -> None:
    """A campaign: a consumer a dispatch finds without room leaves the rotation and rejoins behind the
    others once it has room (rabbit_queue_consumers block/unblock; rabbit_fifo's service queue). The
    model's consumer_rotation active_queue holds it on both queue types; the other rotations do not."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-full-consumer-loses-its-turn.yaml")
    claimed = profile(f"rabbitmq-{queue_type}")
    assert run_scenario(scenario, ReferenceAdapter(options=claimed)).verdict == "pass"
    for other in ("cursor", "move_to_end"):
        wrong = ReferenceAdapter(options=claimed.evolve(consumer_rotation=other))
        assert run_scenario(scenario, wrong).verdict == "fail", other
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("DELIVERY-24", "RING-14")
def test_an_ack_puts_a_full_consumer_back_in_the_rotation_at_once(namespace: str) -> None:
    """A campaign (seed 4, ring area): the ack that gives a blocked consumer room puts it back
    at the end of the rotation at once, with nothing waiting, so the next message goes to it and not
    to a consumer opened after the ack. The model and the broker agree on the counts after the close."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-ack-rejoins-the-rotation-at-once.yaml")
    assert run_scenario(scenario, ReferenceAdapter("rabbitmq-classic")).verdict == "pass"
    outcome, _ = _on_rabbitmq(scenario, "classic", namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("REDELIVERY-31")
def test_quorum_get_returns_come_back_in_tag_text_order(namespace: str) -> None:
    """A campaign (quorum seed 4, redelivery area): messages taken by basic.get return on the
    channel's close in the order of their delivery tags as text (one rabbit_fifo consumer per get,
    tagged integer_to_binary(DeliveryTag), cancelled in maps:keys order). The profile's option
    pull_return_order tag_text holds it on the model and the broker; delivery order does not."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    here = Path(__file__).parent / "scenarios"
    scenario = load(here / "rabbitmq-quorum-get-returns-in-tag-text-order.yaml")
    quorum = profile("rabbitmq-quorum")
    assert run_scenario(scenario, ReferenceAdapter(options=quorum)).verdict == "pass"
    in_order = ReferenceAdapter(options=quorum.evolve(pull_return_order="delivery"))
    assert run_scenario(scenario, in_order).verdict == "fail"
    outcome, _ = _on_rabbitmq(scenario, "quorum", namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()


def test_the_machines_keep_a_quorum_pull_consumer_at_32_gets() -> None:
    """REDELIVERY-31 beyond 32 gets is not predictable: under tag_text the machines never let a pull
    consumer hold more (checked on the reference model, where the count is visible)."""
    from mqconform.conformance.exploring import settings as suite_settings
    from mqconform.conformance.exploring.machines.redelivery import RedeliveryMachine
    from mqconform.conformance.exploring.runner import run_machine

    seen: list[int] = []

    class Watching(ReferenceAdapter):
        def receive(self, consumer: str) -> Any:
            result = super().receive(consumer)
            state = self.world.broker.consumers[consumer]
            if state.no_buffering:
                seen.append(len(state.received))
            return result

    hyp = suite_settings.get("ci", database=None, max_examples=40)
    result = run_machine(RedeliveryMachine, lambda: Watching("rabbitmq-quorum"), profile("rabbitmq-quorum"),
                         hyp, max_reruns=0)
    assert result.findings == [] and result.unknown is None
    assert seen and max(seen) <= 32, max(seen)


@pytest.mark.rules("DELIVERY-24")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_a_quorum_consumer_without_credit_leaves_the_rotation(queue_type: str, namespace: str) -> None:
    """A campaign (quorum seed 9): rabbit_fifo takes a consumer out of its service queue as soon
    as a delivery uses up its credit, so after a nack the message goes to the consumer opened
    meanwhile; a classic queue gives it back to the first consumer. The scenario (written for quorum)
    holds on the quorum model and broker, and fails at the same step on the classic model and broker."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    here = Path(__file__).parent / "scenarios"
    scenario = load(here / "rabbitmq-quorum-consumer-without-credit-leaves-at-once.yaml")
    model = run_scenario(scenario, ReferenceAdapter(f"rabbitmq-{queue_type}"))
    broker, _ = _on_rabbitmq(scenario, queue_type, namespace)
    expected = ("pass", None) if queue_type == "quorum" else ("fail", 7)
    assert (model.verdict, model.step) == expected, model.verdict_line()
    assert (broker.verdict, broker.step) == expected, broker.verdict_line()


@pytest.mark.rules("DELIVERY-25", "DELIVERY-24")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_consumer_priorities_come_first_while_they_have_room(queue_type: str, namespace: str) -> None:
    """x-priority on basic.consume: the two priority 5 consumers take turns, the priority 0 one gets
    what they have no room for, and an ack gives the higher priority its turn back (classic
    rabbit_queue_consumers, quorum rabbit_fifo's service queue). The model holds it on both queue
    types; stripped of the priorities it fails (tests/model/test_consumer_priority.py)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-consumer-priority-round-robin.yaml")
    claimed = profile(f"rabbitmq-{queue_type}")
    assert run_scenario(scenario, ReferenceAdapter(options=claimed)).verdict == "pass"
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace, strict=True)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("EXPIRY-3", "EXPIRY-4", "EXPIRY-5")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_expiry_at_the_head_and_after_a_requeue(queue_type: str, namespace: str) -> None:
    """A short per-message TTL waits behind a longer-lived head; a held message past its
    time is dead-lettered (expired) the moment it is requeued; the lower TTL wins. Both queue types
    hold it; the model with Artemis's scope (ready), combination (message_first) or JetStream's drop
    does not."""
    from pathlib import Path

    import attrs

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    path = Path(__file__).parent / "scenarios" / "rabbitmq-expiry-head-and-requeue.yaml"
    scenario = attrs.evolve(load(path), profile=f"rabbitmq-{queue_type}")
    claimed = scenario.model_options()
    assert run_scenario(scenario, ReferenceAdapter(options=claimed)).verdict == "pass"
    for change in ({"expiry_scope": "ready"}, {"ttl_combination": "message_first"},
                   {"expired_to": "drop"}):
        wrong = ReferenceAdapter(options=claimed.evolve(**change))
        assert run_scenario(scenario, wrong).verdict == "fail", change
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("EXPIRY-4")
def test_an_expired_message_brought_to_the_head_is_awaited(namespace: str) -> None:
    """A quorum queue expires what a get brings to its head by a timer of its own, after the get-ok:
    the adapter waits for it before the next observation. Five runs (before the wait, about one run
    in ten read the counts too early)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-quorum-expiry-behind-the-head.yaml")
    assert run_scenario(scenario, ReferenceAdapter("rabbitmq-quorum")).verdict == "pass"
    for attempt in range(5):
        outcome, _ = _on_rabbitmq(scenario, "quorum", f"{namespace}-{attempt}")
        assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("EXPIRY-4", "EXPIRY-7")
def test_what_a_checkout_expires_is_awaited_in_the_dead_letter_queue(namespace: str) -> None:
    """A quorum queue's checkout (a prefetch consumer's basic.consume, an ack freeing its prefetch)
    expires the messages past their TTL it brings to the head at once, and dead-letters them by an
    effect after the command: the adapter waits for the dead-letter queue before the next
    observation. Ten runs (before the wait, 1 run in 20 read the dead-letter queue short; a fresh
    quorum seed, 454032, found it as a FLAKY counters.message_count)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios"
                    / "rabbitmq-quorum-checkout-expiry-reaches-the-dlq-later.yaml")
    assert run_scenario(scenario, ReferenceAdapter("rabbitmq-quorum")).verdict == "pass"
    for attempt in range(10):
        outcome, _ = _on_rabbitmq(scenario, "quorum", f"{namespace}-{attempt}")
        assert outcome.verdict == "pass", outcome.verdict_line()


def test_the_service_order_follows_the_broker_count() -> None:
    """The quorum queue's service order: returns first, then as sent; what left unseen left from the
    head (trim), and the leading messages past their TTL are those a get brings to the head."""
    from mqconform.adapters.rabbitmq.records import _ServiceOrder

    order = _ServiceOrder()
    for msg_id in ("m1", "m2", "m3", "m4"):
        order.add(msg_id)
    order.taken("m1")
    order.returned("m1")
    assert order.leading(lambda m: m in {"m1", "m2"}) == 2
    assert order.leading(lambda m: m == "m2") == 0
    order.trim(2)  # m1 and m2 left unseen, from the head
    assert (order.returns, order.sent) == ([], ["m3", "m4"])
    order.trim(5)
    assert order.sent == ["m3", "m4"]


@pytest.mark.rules("DELIVERY-26")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_the_next_single_active_consumer(queue_type: str, namespace: str) -> None:
    """When the active consumer of an x-single-active-consumer queue closes, a classic queue activates
    the waiting consumer of the highest x-priority, a quorum queue the earliest registered. The
    scenario says classic: it passes there and fails at the same step on quorum, for the broker and
    for the model (single_active_next)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-single-active-next-by-priority.yaml")
    claimed = profile(f"rabbitmq-{queue_type}")
    model = run_scenario(scenario, ReferenceAdapter(options=claimed))
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace, strict=True)
    expected = ("pass", None) if queue_type == "classic" else ("fail", 10)
    assert (model.verdict, model.step if model.verdict == "fail" else None) == expected
    assert (outcome.verdict, outcome.step if outcome.verdict == "fail" else None) == expected, \
        outcome.verdict_line()


@pytest.mark.rules("DELIVERY-26")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_a_quorum_queue_serves_the_next_single_active_consumer_before_the_returns(
        queue_type: str, namespace: str) -> None:
    """A campaign (quorum seed 2): closing the active consumer (basic.cancel, channel.close)
    makes a quorum queue serve the next one from the queue before what the closed one held returns;
    a classic queue returns it first. The scenario says quorum: it passes there and fails at the
    same step on classic, for the broker and for the model (single_active_handover_first)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    path = Path(__file__).parent / "scenarios" / "rabbitmq-quorum-single-active-handover-first.yaml"
    scenario = load(path)
    claimed = profile(f"rabbitmq-{queue_type}")
    model = run_scenario(scenario, ReferenceAdapter(options=claimed))
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace)
    expected = ("pass", None) if queue_type == "quorum" else ("fail", 8)
    assert (model.verdict, model.step if model.verdict == "fail" else None) == expected, model.verdict_line()
    assert (outcome.verdict, outcome.step if outcome.verdict == "fail" else None) == expected, \
        outcome.verdict_line()


@pytest.mark.rules("DELIVERY-26")
def test_no_pull_consumer_on_a_single_active_consumer_queue(rabbit: RabbitMQAdapter) -> None:
    assert rabbit.declare_queue(QueueConfig("q", single_active_consumer=True)).is_ok
    refused = rabbit.open_consumer(ConsumerConfig("c", "q", **PULL))
    assert refused.type == "fail" and "single active" in str(refused.error)


@pytest.mark.rules("DELIVERY-25", "DELIVERY-22")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_a_consumer_keeps_its_priority_after_a_channel_error(queue_type: str, namespace: str) -> None:
    """The adapter subscribes again after a 406 with the consumer's x-priority (a re-subscribe without
    it gave m1 to c1 on the broker, found by the delivery machine)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-priority-after-channel-error.yaml")
    claimed = profile(f"rabbitmq-{queue_type}")
    assert run_scenario(scenario, ReferenceAdapter(options=claimed)).verdict == "pass"
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace, strict=True)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("REDELIVERY-23", "REDELIVERY-10")
def test_a_return_goes_among_earlier_head_inserts_by_sequence(namespace: str) -> None:
    """A campaign (delivery area): a message returned after other returns went to the head goes
    among them by its sequence (LinkedListImpl#addSorted scans for its place), so two closes restore
    publish order on the model and on RabbitMQ; a head placement in close order does not."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-return-among-head-inserts.yaml")
    claimed = profile("rabbitmq-classic")
    assert run_scenario(scenario, ReferenceAdapter(options=claimed)).verdict == "pass"
    wrong = ReferenceAdapter(options=claimed.evolve(return_placement="head"))
    assert run_scenario(scenario, wrong).verdict == "fail"
    outcome, _ = _on_rabbitmq(scenario, "classic", namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("EXPIRY-3", "EXPIRY-7")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_a_return_past_its_ttl_is_dead_lettered_and_nothing_else(queue_type: str, namespace: str) -> None:
    """A campaign (quorum seed 3, expiry area): a message held past its TTL is dead-lettered as
    the close returns it; the adapter must not wait for it to come back as ready (its settle timeout
    let the next message's TTL run out on the broker's clock while the model's stood still)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-expired-return-leaves-at-once.yaml")
    model = ReferenceAdapter(options=profile(f"rabbitmq-{queue_type}"))
    assert run_scenario(scenario, model).verdict == "pass"
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("EXPIRY-4", "EXPIRY-5")
@pytest.mark.parametrize("queue_type", QUEUE_TYPES)
def test_a_delivery_that_exposes_an_expired_head_expires_it_first(queue_type: str, namespace: str) -> None:
    """A campaign (rabbitmq seed 2, expiry area): with head-only expiry, delivering the head
    exposes the next message, which leaves at once if past its TTL, before the next delivery (the
    model delivered it)."""
    from pathlib import Path

    from mqconform.scenario.loader import load
    from mqconform.scenario.runner import run_scenario

    scenario = load(Path(__file__).parent / "scenarios" / "rabbitmq-delivery-exposes-an-expired-head.yaml")
    model = ReferenceAdapter(options=profile(f"rabbitmq-{queue_type}"))
    assert run_scenario(scenario, model).verdict == "pass"
    outcome, _ = _on_rabbitmq(scenario, queue_type, namespace)
    assert outcome.verdict == "pass", outcome.verdict_line()


@pytest.mark.rules("DELIVERY-16")
def test_a_made_up_counters_bug_stays_red_beside_the_registered_5609(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The built-in adapter with a made-up bug (after any nack one ready message is shown as delivering,
    tests/buggy_rabbitmq.py) on the broker, a release the registry holds rabbitmq-server#5609 for: the
    bug model's replay does not give the adapter's answers, so the finding is a FAIL and the run exits 1."""
    from mqconform.cli import main

    server = RabbitMQAdapter(queue_type="quorum")
    server.open("mqct-made-up-version")
    version = server.server_version
    server.shutdown()
    assert version.startswith("3.10."), f"#5609 is registered for <3.11; the broker is {version}"
    code = main(["run", "--adapter", "tests.buggy_rabbitmq:NackSkewsCounters", "-o", "queue_type=quorum",
                 "--areas", "redelivery", "--settings", "ci", "--max-examples", "40", "--max-findings", "1",
                 "--shrink-seconds", "20", "--no-report", "--out", str(tmp_path / "run")])
    printed = capsys.readouterr().out
    failures = [line.split() for line in printed.splitlines() if line.strip().startswith("FAIL counters.")]
    assert code == 1 and failures, printed
    assert "DEVIATION" not in printed, printed
