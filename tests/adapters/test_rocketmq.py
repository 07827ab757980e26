"""The `rocketmq` adapter against a real Apache RocketMQ 5.5 name server and broker, started by the
adapter itself from the Maven Central jars (one pair per module; no skips: without mvn or java the
fixture fails), and the admission machine's load checks on a stand-in that breaks each of them.

Rule ids: ADMISSION-2 (busy remark), ADMISSION-3 (TIMEOUT not before the limit), ADMISSION-7 and
ADMISSION-9 (an OK send stored once), ADMISSION-13 (a busy send never stored), ADMISSION-11 (off:
nothing answered busy).
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.registry import AdapterLoadError, load_adapter
from mqconform.adapters.rocketmq import RocketMQAdapter
from mqconform.adapters.rocketmq.server import DEFAULT_VERSION, fetch
from mqconform.conformance import settings as suite_settings
from mqconform.conformance.registry import MACHINES
from mqconform.conformance.runner import run_machine
from mqconform.reference_model.profiles import ARTEMIS

pytestmark = pytest.mark.broker("rocketmq")

REMARK = re.compile(r"^\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, "
                    r"period in queue: (\d+)ms, size of queue: \d+$")
LOAD_CHECKS = {"admission.load_remark", "admission.load_not_before_limit", "admission.load_busy_not_stored",
               "admission.load_ok_once", "admission.load_disabled_silent"}


@pytest.fixture(scope="module")
def rocketmq() -> Iterator[RocketMQAdapter]:
    adapter = RocketMQAdapter()
    adapter.open("mqct-rocketmq")
    yield adapter
    adapter.shutdown()
    assert adapter.server is not None
    adapter.server.stop()


def _load(adapter: RocketMQAdapter, **kwargs: Any) -> dict[str, Any]:
    result = adapter.call("admission_load", **kwargs)
    assert result.is_ok, result.error
    value: dict[str, Any] = result.value
    return value


def test_jars_are_cached_and_the_broker_listens_on_loopback(rocketmq: RocketMQAdapter) -> None:
    lib = fetch()
    assert fetch() == lib and (lib / f"rocketmq-broker-{DEFAULT_VERSION}.jar").is_file()
    assert rocketmq.server is not None and rocketmq.server.broker is not None
    listening = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
    for port in (rocketmq.server.namesrv.port, rocketmq.server.broker.port):
        local = [line.split()[3] for line in listening.splitlines() if line.split()[3].endswith(f":{port}")]
        # Java binds an IPv4 address on a dual-stack socket: 127.0.0.1 shows as ::ffff:127.0.0.1
        assert local and all(a in (f"127.0.0.1:{port}", f"[::ffff:127.0.0.1]:{port}") for a in local), local
    assert rocketmq.server_version == DEFAULT_VERSION


@pytest.mark.rules("ADMISSION-2", "ADMISSION-3", "ADMISSION-7", "ADMISSION-9", "ADMISSION-13")
def test_a_load_that_fills_the_send_queue_is_answered_busy_and_busy_sends_are_never_stored(
        rocketmq: RocketMQAdapter) -> None:
    wait_ms = 1
    value = _load(rocketmq, enabled=True, wait_ms=wait_ms, count=1500, size=4096)
    answers = value["answers"]
    stored = Counter(value["stored"])
    statuses = Counter(a["status"] for a in answers)
    assert statuses["busy"] > 0 and statuses["ok"] > 0, statuses
    for a in answers:
        if a["status"] == "busy":
            found = REMARK.match(a["remark"])
            assert a["code"] == 2 and found, a
            assert int(found.group(1)) >= wait_ms, a
            assert stored[a["id"]] == 0, a
        elif a["status"] == "ok":
            assert stored[a["id"]] == 1, a
    assert set(stored) <= {a["id"] for a in answers}


@pytest.mark.rules("ADMISSION-11")
def test_with_fast_failure_off_no_send_is_answered_busy(rocketmq: RocketMQAdapter) -> None:
    value = _load(rocketmq, enabled=False, wait_ms=1, count=1500, size=4096)
    assert Counter(a["status"] for a in value["answers"]) == {"ok": 1500}
    assert sorted(value["stored"]) == sorted(a["id"] for a in value["answers"])


def test_the_admission_area_passes_on_the_broker(rocketmq: RocketMQAdapter) -> None:
    result = run_machine(MACHINES["admission"], lambda: rocketmq, ARTEMIS,
                         suite_settings.get("ci", database=None, max_examples=3), max_reruns=0,
                         cap_real_time=False)
    assert result.unknown is None and not result.findings, (result.unknown, result.findings)
    assert result.checked >= LOAD_CHECKS


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
        answers = [{"id": f"m-{i}", "status": "ok"} for i in range(count)]
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
    result = run_machine(MACHINES["admission"], lambda: _StandIn(spoil), ARTEMIS,  # type: ignore[arg-type]
                         STAND_IN, max_reruns=0)
    assert [f.check for f in result.findings] == [check], (result.unknown, result.findings)


def test_the_stand_in_unspoiled_passes() -> None:
    result = run_machine(MACHINES["admission"], lambda: _StandIn(lambda v: None), ARTEMIS,  # type: ignore[arg-type]
                         STAND_IN, max_reruns=0)
    assert result.unknown is None and not result.findings
    assert result.checked >= LOAD_CHECKS


def test_the_driver_source_ships_with_the_package() -> None:
    assert (Path(__file__).parents[2] / "adapters" / "rocketmq" / "Driver.java").is_file()
