"""The `rocketmq` adapter against a real Apache RocketMQ 5.5 name server and broker, started by the
adapter itself from the Maven Central jars under its driver (one pair per module; no skips: without
mvn, java or javac the fixture fails): the model's admission component step by step on the broker,
each scripted case compared with the model answer by answer; the two things the broker does that the
model does not (a send submitted while the page cache is busy, a send taken while it is busy); the
admission machine on the broker; and the machine's load checks on a stand-in that breaks each.

Rule ids: on the marks of each test.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.adapters.registry import AdapterLoadError, load_adapter
from mqconform.adapters.rocketmq import RocketMQAdapter
from mqconform.adapters.rocketmq.server import DEFAULT_VERSION, DRIVER_SOURCES, fetch
from mqconform.conformance import settings as suite_settings
from mqconform.conformance.registry import MACHINES
from mqconform.conformance.runner import run_machine
from mqconform.reference_model.profiles import ARTEMIS, ROCKETMQ

pytestmark = pytest.mark.broker("rocketmq")

#: the checks the machine makes step by step (machines/admission.py)
STEP_CHECKS = {"admission.submit", "admission.take", "admission.answer", "admission.take_head",
               "admission.overload_at_capacity", "admission.on_tick", "admission.remark",
               "admission.not_before_limit", "admission.single_answer"}
LOAD_CHECKS = {"admission.load_remark", "admission.load_not_before_limit", "admission.load_busy_not_stored",
               "admission.load_ok_once", "admission.load_disabled_silent"}
#: a send refused at submission or failed at its put because the page cache is busy: what the broker
#: does and the model does not (docs/adapters/rocketmq.md, "What the model does not know")
BUSY_GAP = re.compile(r"REJECTREQUEST|PC_SYNCHRONIZED")


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


def test_a_send_submitted_while_the_page_cache_is_busy_is_refused_at_once(rocketmq: RocketMQAdapter) -> None:
    """What the broker does and the model does not: SendMessageProcessor#rejectRequest refuses a send
    while isOSPageCacheBusy() (a pull is queued); the put hook fails a send taken then."""
    rocketmq.close()
    rocketmq.open("mqct-rocketmq")
    for step in [("admission", _config(busy_after_ms=30, enabled=False)), ("lock", "held"),
                 ("submit", ("send", "early")), ("advance", 31)]:
        assert _apply(rocketmq, step).is_ok
    assert rocketmq.call("submit", queue="send", id="late").value == "REJECTREQUEST"
    assert rocketmq.call("submit", queue="pull", id="pull").value == "queued"
    assert rocketmq.call("request", id="late").value == {
        "answer": "REJECTREQUEST", "at_ms": 31, "code": 2,
        "text": "[REJECTREQUEST]system busy, start flow control for a while"}
    assert rocketmq.call("take", queue="send").value == "early"
    assert rocketmq.call("request", id="early").value == {
        "answer": "PC_SYNCHRONIZED", "at_ms": 31, "code": 2,
        "text": "[PC_SYNCHRONIZED]broker busy, start flow control for a while"}
    assert _apply(rocketmq, ("lock", "released")).is_ok
    assert rocketmq.call("submit", queue="send", id="after").value == "queued"


def test_the_admission_area_agrees_with_the_model_but_for_the_busy_page_cache(
        rocketmq: RocketMQAdapter) -> None:
    # no shrinking: a finding's first counterexample names its answer as well as the shrunk one
    result = run_machine(MACHINES["admission"], lambda: rocketmq, ROCKETMQ,  # type: ignore[arg-type, return-value]
                         suite_settings.get("ci", database=None, max_examples=40,
                                            phases=[Phase.explicit, Phase.reuse, Phase.generate]),
                         max_reruns=0)
    assert result.unknown is None, result.unknown
    assert all(BUSY_GAP.search(f.message) for f in result.findings), [f.message for f in result.findings]
    assert result.checked >= STEP_CHECKS, STEP_CHECKS - result.checked


def test_a_bad_option_is_one_usage_error() -> None:
    with pytest.raises(AdapterLoadError, match=r"bad options.*not served"):
        load_adapter("rocketmq", version="9.9.9")


# ---------------------------------------------------------------------- the checks can fail
#: the stand-in runs: derandomized ci settings, 12 examples (each spoil is met within them)
STAND_IN = suite_settings.get("ci", database=None, max_examples=12)


class _StandIn:
    """An admission_load adapter whose answers `spoil` one way (no broker)."""

    name = "rocketmq-standin"
    profile = "artemis"
    capabilities = frozenset({"admission_load"})
    real_time = False

    def __init__(self, spoil: Callable[[dict[str, Any]], None]) -> None:
        self.spoil = spoil

    def open(self, namespace: str) -> None:
        pass

    def close(self) -> None:
        pass

    def call(self, op: str, **kwargs: Any) -> Result:
        count, wait = 4, kwargs["wait_ms"]
        answers: list[dict[str, Any]] = [{"id": f"m-{i}", "status": "ok"} for i in range(count)]
        if kwargs["enabled"]:
            answers[1] = {"id": "m-1", "status": "busy", "code": 2, "remark":
                          "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
                          f"period in queue: {wait + 3}ms, size of queue: 2"}
        value = {"topic": "t", "answers": answers,
                 "stored": [a["id"] for a in answers if a["status"] == "ok"]}
        self.spoil(value)
        return Result.ok(value)


def _busy(value: dict[str, Any]) -> dict[str, Any] | None:
    return next((a for a in value["answers"] if a["status"] == "busy"), None)


def _store_busy(value: dict[str, Any]) -> None:
    if (busy := _busy(value)) is not None:
        value["stored"].append(busy["id"])


def _early(value: dict[str, Any]) -> None:
    if (busy := _busy(value)) is not None:
        busy["remark"] = re.sub(r"period in queue: \d+ms", "period in queue: 0ms", busy["remark"])


def _bad_remark(value: dict[str, Any]) -> None:
    if (busy := _busy(value)) is not None:
        busy["remark"] = "[REJECTREQUEST]system busy"


def _busy_when_off(value: dict[str, Any]) -> None:
    if _busy(value) is None:
        value["answers"][0] = {"id": "m-0", "status": "busy", "code": 2, "remark": "x"}
        value["stored"].remove("m-0")


def _twice(value: dict[str, Any]) -> None:
    value["stored"].append("m-0")


@pytest.mark.parametrize(("spoil", "check"), [
    (_store_busy, "admission.load_busy_not_stored"), (_early, "admission.load_not_before_limit"),
    (_bad_remark, "admission.load_remark"), (_busy_when_off, "admission.load_disabled_silent"),
    (_twice, "admission.load_ok_once")])
def test_each_load_check_catches_its_fault(spoil: Callable[[dict[str, Any]], None], check: str) -> None:
    result = run_machine(MACHINES["admission"], lambda: _StandIn(spoil), ARTEMIS,  # type: ignore[arg-type, return-value]
                         STAND_IN, max_reruns=0)
    assert [f.check for f in result.findings] == [check], (result.unknown, result.findings)


def test_the_stand_in_unspoiled_passes() -> None:
    result = run_machine(MACHINES["admission"], lambda: _StandIn(lambda v: None), ARTEMIS,  # type: ignore[arg-type, return-value]
                         STAND_IN, max_reruns=0)
    assert result.unknown is None and not result.findings
    assert result.checked >= LOAD_CHECKS


def test_the_driver_sources_ship_with_the_package() -> None:
    folder = Path(__file__).parents[2] / "adapters" / "rocketmq" / "driver"
    assert sorted(p.name for p in folder.glob("*.java")) == sorted(DRIVER_SOURCES)
