"""The `rocketmq` adapter against a real Apache RocketMQ 5.5 name server and broker, started by the
adapter itself from the Maven Central jars under its driver (one pair per module; no skips: without
mvn, java or javac the fixture fails): the model's admission component step by step on the broker,
each scripted case compared with the model answer by answer, among them the two page-cache guards on a
send (ADMISSION-19, ADMISSION-20); and the admission machine on the broker. The queues (a topic of one
queue, a consumer group consumed by POP): scripted cases compared with the model step by step (order,
acks, refused acks, a close's returns ahead of the rest, a group per queue) and the delivery machine.

Rule ids: on the marks of each test.
"""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.adapters.registry import AdapterLoadError, load_adapter
from mqconform.adapters.rocketmq import RocketMQAdapter
from mqconform.adapters.rocketmq.server import DEFAULT_VERSION, DRIVER_SOURCES, fetch
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import run_machine
from mqconform.operations import call_operation
from mqconform.reference_model.profiles import ROCKETMQ

pytestmark = pytest.mark.broker("rocketmq")
#: a namespace of its own for each scripted queue case
EXAMPLES = itertools.count()

#: the checks the machine makes step by step (machines/admission.py)
STEP_CHECKS = {"admission.submit", "admission.take", "admission.answer", "admission.take_head",
               "admission.overload_at_capacity", "admission.on_tick", "admission.remark",
               "admission.not_before_limit", "admission.single_answer", "admission.page_cache_guard"}


@pytest.fixture(scope="module")
def rocketmq() -> Iterator[RocketMQAdapter]:
    adapter = RocketMQAdapter()
    adapter.open("mqct-rocketmq")
    yield adapter
    adapter.shutdown()
    assert adapter.server is not None
    adapter.server.stop()


Step = tuple[str, Any]


def _config(scan_start_ms: int = 0, send_wait: int = 20, pull_wait: int = 50, capacity: int = 2,
            busy_after_ms: int = 30, enabled: bool = True) -> dict[str, Any]:
    return {"name": "broker", "scan_start_ms": scan_start_ms, "scan_period_ms": 10, "enabled": enabled,
            "busy_after_ms": busy_after_ms, "queues": {"send": {"wait_ms": send_wait, "capacity": capacity},
                                                       "pull": {"wait_ms": pull_wait, "capacity": capacity}}}


def _apply(adapter: Any, step: Step) -> Result:
    op, arg = step
    if op == "advance":
        result: Result = adapter.advance(arg)
    elif op == "admission":
        result = adapter.call("admission", **arg)
    elif op == "submit":
        result = adapter.call("submit", queue=arg[0], id=arg[1])
    elif op == "take":
        result = adapter.call("take", queue=arg)
    else:
        result = adapter.call("lock", state=arg)
    return result


def _run(broker: RocketMQAdapter, steps: list[Step]) -> dict[str, Any]:
    """Run `steps` on the model and on the broker: every step's value and, after each step, every
    request's answer must agree; the broker's answers at the end, by id."""
    model = ReferenceAdapter("rocketmq")
    model.open("mqct-rocketmq-model")
    broker.close()
    broker.open("mqct-rocketmq")
    ids: list[str] = []
    for number, step in enumerate(steps):
        want, got = _apply(model, step), _apply(broker, step)
        assert got.is_ok and want.is_ok, (number, step, want, got)
        assert got.value == want.value, (number, step, want.value, got.value)
        if step[0] == "submit":
            ids.append(step[1][1])
        for request in ids:
            expected, actual = model.call("request", id=request), broker.call("request", id=request)
            assert actual.value == expected.value, (number, step, request, expected.value, actual.value)
    return {request: broker.call("request", id=request).value for request in ids}


def test_jars_are_cached_and_the_broker_listens_on_loopback(rocketmq: RocketMQAdapter) -> None:
    lib = fetch()
    assert fetch() == lib and (lib / f"rocketmq-broker-{DEFAULT_VERSION}.jar").is_file()
    assert rocketmq.server is not None and rocketmq.server.broker is not None
    listening = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
    control = rocketmq.server.broker.control_port()
    for port in (rocketmq.server.namesrv.port, rocketmq.server.broker.port, control):
        local = [line.split()[3] for line in listening.splitlines() if line.split()[3].endswith(f":{port}")]
        # Java binds an IPv4 address on a dual-stack socket: 127.0.0.1 shows as ::ffff:127.0.0.1
        assert local and all(a in (f"127.0.0.1:{port}", f"[::ffff:127.0.0.1]:{port}") for a in local), local
    assert rocketmq.server_version == DEFAULT_VERSION


@pytest.mark.rules("ADMISSION-7", "ADMISSION-8", "ADMISSION-9", "ADMISSION-12")
def test_the_worker_takes_the_head_and_a_full_send_queue_overloads(rocketmq: RocketMQAdapter) -> None:
    answers = _run(rocketmq, [("admission", _config(capacity=2)), ("submit", ("send", "r1")),
                              ("submit", ("send", "r2")), ("submit", ("send", "r3")), ("take", "send"),
                              ("submit", ("send", "r4")), ("advance", 5), ("take", "send"),
                              ("take", "send"), ("take", "send")])
    assert answers["r3"] == {"answer": "OVERLOAD", "at_ms": 0, "code": 2,
                             "text": "[OVERLOAD]system busy, start flow control for a while"}
    assert [answers[r]["answer"] for r in ("r1", "r2", "r4")] == ["processed"] * 3
    assert [answers[r]["at_ms"] for r in ("r1", "r2", "r4")] == [0, 5, 5]


@pytest.mark.rules("ADMISSION-1", "ADMISSION-2", "ADMISSION-3", "ADMISSION-4", "ADMISSION-10", "ADMISSION-18")
def test_the_tick_times_out_each_queue_by_its_own_limit_at_the_first_tick_after_it(
        rocketmq: RocketMQAdapter) -> None:
    answers = _run(rocketmq, [("admission", _config(scan_start_ms=5, send_wait=20, pull_wait=50)),
                              ("submit", ("send", "s1")), ("submit", ("pull", "p1")), ("advance", 3),
                              ("submit", ("send", "s2")), ("advance", 21), ("advance", 1), ("advance", 29),
                              ("advance", 1)])
    assert answers["s1"] == {"answer": "TIMEOUT_CLEAN_QUEUE", "at_ms": 25, "code": 2, "text":
                             "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
                             "period in queue: 25ms, size of queue: 1"}
    assert answers["s2"]["at_ms"] == 25 and "period in queue: 22ms, size of queue: 0" in answers["s2"]["text"]
    assert answers["p1"]["answer"] == "TIMEOUT_CLEAN_QUEUE" and answers["p1"]["at_ms"] == 55


@pytest.mark.rules("ADMISSION-6", "ADMISSION-15", "ADMISSION-16", "ADMISSION-17")
def test_a_put_lock_held_past_the_busy_time_drains_the_send_queue_only(rocketmq: RocketMQAdapter) -> None:
    answers = _run(rocketmq, [("admission", _config(send_wait=200, pull_wait=200, busy_after_ms=30)),
                              ("lock", "held"), ("submit", ("send", "s1")), ("submit", ("pull", "p1")),
                              ("advance", 20), ("submit", ("send", "s2")), ("advance", 10), ("advance", 10),
                              ("lock", "released"), ("submit", ("send", "s3")), ("advance", 10),
                              ("take", "pull")])
    assert answers["s1"]["answer"] == answers["s2"]["answer"] == "PCBUSY_CLEAN_QUEUE"
    assert answers["s3"] is None
    assert answers["s1"]["at_ms"] == answers["s2"]["at_ms"] == 40
    assert answers["p1"] == {"answer": "processed", "at_ms": 50, "text": None, "code": None}


@pytest.mark.rules("ADMISSION-11")
def test_with_fast_failure_off_no_tick_answers(rocketmq: RocketMQAdapter) -> None:
    answers = _run(rocketmq, [("admission", _config(enabled=False)), ("submit", ("send", "s1")),
                              ("submit", ("pull", "p1")), ("lock", "held"), ("advance", 1100),
                              ("lock", "released"), ("take", "send"), ("take", "pull")])
    assert answers == {"s1": {"answer": "processed", "at_ms": 1100, "text": None, "code": None},
                       "p1": {"answer": "processed", "at_ms": 1100, "text": None, "code": None}}


@pytest.mark.rules("ADMISSION-19", "ADMISSION-20")
def test_a_send_meeting_a_busy_page_cache_is_refused_on_arrival_or_when_run(
        rocketmq: RocketMQAdapter) -> None:
    """SendMessageProcessor#rejectRequest refuses a send while isOSPageCacheBusy() (a pull is
    queued); the put hook fails a send a worker runs then; a send after the release is queued."""
    answers = _run(rocketmq, [("admission", _config(busy_after_ms=30, enabled=False)), ("lock", "held"),
                              ("submit", ("send", "early")), ("advance", 31), ("submit", ("send", "late")),
                              ("submit", ("pull", "pull")), ("take", "send"), ("lock", "released"),
                              ("submit", ("send", "after"))])
    assert answers["late"] == {"answer": "REJECTREQUEST", "at_ms": 31, "code": 2,
                               "text": "[REJECTREQUEST]system busy, start flow control for a while"}
    assert answers["early"] == {"answer": "PC_SYNCHRONIZED", "at_ms": 31, "code": 2,
                                "text": "[PC_SYNCHRONIZED]broker busy, start flow control for a while"}
    assert answers["pull"] is None and answers["after"] is None


def _explore_unshrunk(rocketmq: RocketMQAdapter, area: str, examples: int) -> Any:
    """The area's machine on the broker under `ci` without shrinking: no unknown and no finding."""
    result = run_machine(MACHINES[area], lambda: rocketmq, ROCKETMQ,  # type: ignore[arg-type, return-value]
                         suite_settings.get("ci", database=None, max_examples=examples,
                                            phases=[Phase.explicit, Phase.reuse, Phase.generate]),
                         max_reruns=0)
    assert result.unknown is None, result.unknown
    assert not result.findings, [f.message for f in result.findings]
    return result


def test_the_admission_area_agrees_with_the_model(rocketmq: RocketMQAdapter) -> None:
    # no shrinking: a finding's first counterexample names its answer as well as the shrunk one
    result = _explore_unshrunk(rocketmq, "admission", 40)
    assert result.checked >= STEP_CHECKS, STEP_CHECKS - result.checked


def _queues(broker: RocketMQAdapter, steps: list[tuple[str, Any]]) -> list[Any]:
    """Run scenario operations on the model and on the broker (a fresh example each): every answer
    must be ok and equal; the broker's values."""
    model = ReferenceAdapter("rocketmq")
    model.open("mqct-rocketmq-model")
    broker.close()
    broker.open(f"mqct-rocketmq-queues-{next(EXAMPLES)}")
    values = []
    for number, (op, args) in enumerate(steps):
        want, got = call_operation(model, op, args), call_operation(broker, op, args)
        assert want.is_ok and got.is_ok, (number, op, args, want, got)
        assert got.value == want.value, (number, op, args, want.value, got.value)
        values.append(got.value)
    broker.close()
    return values


def _sends(count: int) -> list[tuple[str, Any]]:
    return [("send", {"to": "q", "id": f"m{i}"}) for i in range(1, count + 1)]


def _pop(name: str, queue: str = "q") -> tuple[str, Any]:
    return ("consumer", {"name": name, "queue": queue, "window_bytes": 0})


@pytest.mark.rules("DELIVERY-4", "DELIVERY-7", "DELIVERY-8")
def test_a_queue_delivers_in_order_and_acks_only_what_its_consumer_holds(rocketmq: RocketMQAdapter) -> None:
    values = _queues(rocketmq, [
        ("queue", {"name": "q"}), _pop("a"), _pop("b"), ("receive", "a"),
        *[("send", {"to": "q", "id": f"m{i}"}) for i in range(1, 5)],
        ("receive", "a"), ("receive", "b"), ("receive", "a"),
        ("ack", {"consumer": "b", "id": "m2"}), ("ack", {"consumer": "b", "id": "m2"}),  # a second ack
        ("ack", {"consumer": "b", "id": "m1"}),  # another consumer's message
        ("ack", {"consumer": "a", "id": "m4"}),  # never delivered: still pending
        ("ack", {"consumer": "a", "id": "m3"}), ("receive", "b"), ("ack", {"consumer": "b", "id": "m4"}),
        ("receive", "a"), ("ack", {"consumer": "a", "id": "m1"}), ("receive", "b")])
    assert values[8:] == ["m1", "m2", "m3", "ok", "failed", "failed", "failed", "ok", "m4", "ok", None, "ok",
                          None]


@pytest.mark.rules("DELIVERY-4", "DELIVERY-7", "DELIVERY-15")
def test_a_close_returns_what_the_consumer_held_ahead_of_the_rest_in_its_order(
        rocketmq: RocketMQAdapter) -> None:
    values = _queues(rocketmq, [
        ("queue", {"name": "q"}), _pop("a"), _pop("b"),
        *[("send", {"to": "q", "id": f"m{i}"}) for i in range(1, 6)],
        ("receive", "a"), ("receive", "b"), ("receive", "a"), ("ack", {"consumer": "b", "id": "m2"}),
        ("close", "a"), ("ack", {"consumer": "b", "id": "m1"}),  # returned: pending again
        ("receive", "b"), ("receive", "b"), ("receive", "b"), ("receive", "b"), ("receive", "b"),
        _pop("a"), ("ack", {"consumer": "a", "id": "m1"}),  # reopened: it holds nothing
        ("close", "b"), ("receive", "a"), ("receive", "a"), ("receive", "a"), ("receive", "a")])
    assert values[8:] == ["m1", "m2", "m3", "ok", None, "failed", "m1", "m3", "m4", "m5", None, None,
                          "failed", None, "m1", "m3", "m4", "m5"]


@pytest.mark.rules("DELIVERY-4", "REDELIVERY-42")
def test_a_close_gives_messages_back_in_the_order_its_consumer_received_them(
        rocketmq: RocketMQAdapter) -> None:
    """b holds m2, m3 and then m1 (returned by a's close): its close gives them back as m2, m3, m1,
    ahead of m4, which was never delivered."""
    values = _queues(rocketmq, [
        ("queue", {"name": "q"}), _pop("a"), _pop("b"), *_sends(4),
        ("receive", "a"), ("receive", "b"), ("receive", "b"), ("close", "a"), ("receive", "b"),
        ("close", "b"),
        _pop("b"), ("receive", "b"), ("receive", "b"), ("receive", "b"), ("receive", "b")])
    assert values[7:] == ["m1", "m2", "m3", None, "m1", None, None, "m2", "m3", "m1", "m4"]


@pytest.mark.rules("REDELIVERY-42")
def test_returns_of_two_closes_come_back_in_the_order_of_the_closes_not_of_the_sends(
        rocketmq: RocketMQAdapter) -> None:
    """Each close's returns join the group's retry topic at its tail (PopReviveService#reviveRetry),
    so m2 returned by b's close comes before m1 returned by a's later close (the Artemis profile's
    addSorted would put m1 first)."""
    values = _queues(rocketmq, [
        ("queue", {"name": "q"}), _pop("a"), _pop("b"), *_sends(3),
        ("receive", "a"), ("receive", "b"), ("close", "b"), ("close", "a"), _pop("a"),
        ("receive", "a"), ("receive", "a"), ("receive", "a"), ("receive", "a")])
    assert values[-4:] == ["m2", "m1", "m3", None]


@pytest.mark.rules("DELIVERY-6")
def test_each_queue_of_an_address_gets_every_message_sent_after_its_declaration(
        rocketmq: RocketMQAdapter) -> None:
    values = _queues(rocketmq, [
        ("address", {"name": "t"}), ("send", {"to": "t", "id": "early"}),
        ("queue", {"name": "q1", "address": "t"}),
        ("send", {"to": "t", "id": "m1"}), ("queue", {"name": "q2", "address": "t"}),
        ("send", {"to": "t", "id": "m2"}), _pop("c1", "q1"), _pop("c2", "q2"),
        ("receive", "c1"), ("receive", "c1"), ("receive", "c1"), ("receive", "c2"), ("receive", "c2")])
    assert values[8:] == ["m1", "m2", None, "m2", None]


def test_queue_settings_it_cannot_honour_are_unsupported(rocketmq: RocketMQAdapter) -> None:
    rocketmq.close()
    rocketmq.open("mqct-rocketmq-unsupported")
    for config in ({"name": "r", "ring_size": 2}, {"name": "f", "filter": "a = 1"},
                   {"name": "d", "redelivery_delay_ms": 10}):
        answer = call_operation(rocketmq, "queue", config)
        assert answer.type == "fail" and (answer.error or "").startswith("unsupported"), (config, answer)
    assert call_operation(rocketmq, "queue", {"name": "q"}).is_ok
    answer = call_operation(rocketmq, "consumer", {"name": "c", "queue": "q"})  # a push window
    assert answer.type == "fail" and (answer.error or "").startswith("unsupported"), answer
    rocketmq.close()


def test_the_delivery_area_agrees_with_the_model(rocketmq: RocketMQAdapter) -> None:
    result = _explore_unshrunk(rocketmq, "delivery", 12)
    assert {"receive.id", "ack.result", "ack.refused", "delivery.sent_only"} <= result.checked, result.checked


def test_a_bad_option_is_one_usage_error() -> None:
    with pytest.raises(AdapterLoadError, match=r"bad options.*not served"):
        load_adapter("rocketmq", version="9.9.9")


def test_the_driver_sources_ship_with_the_package() -> None:
    folder = Path(__file__).parents[2] / "adapters" / "rocketmq" / "driver"
    assert sorted(p.name for p in folder.glob("*.java")) == sorted(DRIVER_SOURCES)
