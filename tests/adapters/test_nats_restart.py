"""NATS JetStream: restarts as a step (graceful and SIGKILL) on the embedded server, and
capabilities that follow the server's version (the 2.9.10 service on 4222, the embedded 2.15.1)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings

from mqconform.adapters.nats.adapter import NatsAdapter
from mqconform.adapters.nats.capabilities import CAPABILITIES, MIN_VERSION, capabilities_for, parse_version
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import run_machine
from mqconform.history import RunDirectory
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import profile
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario

pytestmark = pytest.mark.broker("nats")

SERVICE_URL = "nats://127.0.0.1:4222"
SCENARIO = Path(__file__).parent / "scenarios" / "nats-restart-keeps-consumer-parks-nak.yaml"
PULL = {"window_bytes": 0}


@pytest.mark.rules("RESTART-1", "RESTART-3", "RESTART-4")
def test_restart_scenario_holds_on_the_model_and_on_embedded_nats(namespace: str) -> None:
    """Graceful and SIGKILL: messages, the held message's count and ack, the parked NAKed message."""
    scenario = load(SCENARIO)
    model = run_scenario(scenario, ReferenceAdapter(options=scenario.model_options()), strict=True)
    adapter = NatsAdapter()
    try:
        outcome = run_scenario(scenario, adapter, strict=True, namespace=namespace)
    finally:
        adapter.shutdown()
    assert model.verdict == "pass" and outcome.verdict == "pass", outcome.verdict_line()
    assert outcome.held == model.held and not outcome.not_applicable


@pytest.mark.rules("RESTART-1", "RESTART-3")
@pytest.mark.parametrize("mode", ["graceful", "kill"])
def test_restart_keeps_streams_and_the_durable_consumer(embedded: NatsAdapter, namespace: str,
                                                        mode: str) -> None:
    embedded.open(namespace)
    try:
        assert "restart" in embedded.capabilities and embedded.server is not None
        pid = embedded.server.pid
        embedded.declare_queue(QueueConfig("q"))
        embedded.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
        for m in ("m1", "m2", "m3"):
            assert embedded.send("q", Message(m)).value == "accepted"
        assert embedded.receive("c").value == "m1"
        embedded.advance(250)  # RESTART-4: past the consumer store's flush interval
        assert embedded.call("restart", mode=mode).is_ok
        assert embedded.server.pid != pid
        assert embedded.counters("q").value == {"message_count": 3, "added": 3}
        assert embedded.delivery_count("q", "m1").value == 1
        assert embedded.ack("c", "m1").value == "ok"  # the reply subject still works
        assert [embedded.receive("c").value for _ in range(3)] == ["m2", "m3", None]
        assert embedded.counters("q").value["message_count"] == 2
        assert embedded.call("restart", mode="reboot").type == "fail"
    finally:
        embedded.close()


def test_restart_is_only_offered_for_the_embedded_file_store() -> None:
    assert "restart" in NatsAdapter().capabilities
    assert "restart" not in NatsAdapter(storage="memory").capabilities
    service = NatsAdapter(url=SERVICE_URL)
    assert "restart" not in service.capabilities
    assert service.call("restart", mode="graceful").error == "unsupported: flow-control component 'restart'"


def _restart_modes(path: Path) -> Counter[str]:
    modes: Counter[str] = Counter()
    for line in (path / "history").glob("*.jsonl"):
        for record in map(json.loads, line.read_text().splitlines()):
            if record["f"] == "restart":  # invoke (its value is the mode), then ok
                modes[record["value"] if record["type"] == "invoke" else record["type"]] += 1
    return modes


@pytest.mark.rules("RESTART-1", "RESTART-3", "RESTART-4")
def test_the_machines_restart_embedded_nats_and_find_nothing(embedded: NatsAdapter, tmp_path: Path) -> None:
    """A few examples of the redelivery machine with restart steps, both modes. (The delivery machine
    opens consumers with different max_unacked / ack_wait_ms on one queue, which the
    nats adapter refuses: that run is inconclusive whatever the restart step does.)"""
    hyp = settings(suite_settings.get("ci", database=None), max_examples=20, stateful_step_count=15)
    run = RunDirectory(tmp_path, "nats", "jetstream", {})
    checked: set[str] = set()
    for area in ("redelivery",):
        result = run_machine(MACHINES[area], lambda: embedded, profile("jetstream"), hyp, run, max_reruns=0)
        assert result.findings == [] and result.unknown is None, (result.findings, result.unknown)
        checked |= result.checked
    run.finish(0)
    assert "restart.counters" in checked
    modes = _restart_modes(tmp_path)
    assert modes["graceful"] >= 1 and modes["kill"] >= 1, modes
    assert modes["ok"] == modes["graceful"] + modes["kill"], modes


# ---------------------------------------------------------------------------- versions
def test_parse_version() -> None:
    assert parse_version("2.9.10") == (2, 9, 10)
    assert parse_version("v2.12.0-RC.1") == (2, 12, 0)
    assert parse_version("") is None and parse_version("dev") is None


def test_capabilities_are_a_function_of_the_version() -> None:
    assert capabilities_for("") == CAPABILITIES == capabilities_for("unknown")
    old = capabilities_for("2.9.10")
    assert {"js:nak_delay", "js:discard_new_per_subject"} <= old
    assert not {"js:message_ttl", "js:consumer_pause", "js:message_schedules",
                "js:limit_update_keeps_discard_new"} & old
    assert "js:message_ttl" in capabilities_for("2.11.0")
    assert "js:message_schedules" not in capabilities_for("2.11.9")
    assert capabilities_for("2.15.1") == CAPABILITIES | set(MIN_VERSION)


def test_capabilities_follow_the_server_the_adapter_talks_to(namespace: str) -> None:
    service = NatsAdapter(url=SERVICE_URL)
    service.open(namespace)
    try:
        assert service.server_version == "2.9.10"
        assert service.capabilities == capabilities_for("2.9.10")
        assert "js:message_ttl" not in service.capabilities and "restart" not in service.capabilities
    finally:
        service.shutdown()
    own = NatsAdapter()
    own.open(namespace)
    try:
        assert parse_version(own.server_version) >= (2, 12, 0)  # type: ignore[operator]
        assert own.capabilities == capabilities_for(own.server_version) | {"restart"}
        assert {"js:message_ttl", "js:consumer_pause", "js:message_schedules"} <= own.capabilities
    finally:
        own.shutdown()


# ---------------------------------------------------------------------------- stream state
STATE_STEPS: list[tuple[str, object]] = [
    ("queue", {"name": "q"}),
    ("consumer", {"name": "c", "queue": "q", "window_bytes": 0}),
    *[("send", {"to": "q", "id": f"m{i}"}) for i in range(1, 6)],
    ("receive", "c"), ("receive", "c"), ("receive", "c"),
    ("ack", {"consumer": "c", "id": "m2"}),
    ("nack", {"consumer": "c", "id": "m1"}),
    ("receive", "c"),
    ("nack", {"consumer": "c", "id": "m3"}),
    ("restart", "graceful"),
    ("receive", "c"),
    ("ack", {"consumer": "c", "id": "m1"}),
    ("advance", 250),
    ("restart", "kill"),
    ("receive", "c"),
    ("close", "c"),
    ("consumer", {"name": "c", "queue": "q", "window_bytes": 0}),
    ("receive", "c"),
]


def _replay_comparing_stream_state(adapter: NatsAdapter, namespace: str) -> int:
    from mqconform.operations import call_operation

    model = ReferenceAdapter("jetstream")
    adapter.open(namespace)
    compared = 0
    try:
        for op, args in STATE_STEPS:
            if op == "restart" and "restart" not in adapter.capabilities:
                continue
            want, got = call_operation(model, op, args), call_operation(adapter, op, args)
            assert want.is_ok and got.is_ok and want.value == got.value, (op, args, want, got)
            if op not in ("queue", "advance"):
                state = adapter.call("stream_state", queue="q").value
                assert state == model.call("stream_state", queue="q").value, (op, args, state)
                compared += 1
    finally:
        adapter.close()
    return compared


@pytest.mark.rules("RESTART-5", "RESTART-3")
def test_stream_state_matches_the_model_through_restarts(embedded: NatsAdapter, namespace: str) -> None:
    # every step but queue and advance
    assert _replay_comparing_stream_state(embedded, namespace) == len(STATE_STEPS) - 2


@pytest.mark.rules("RESTART-5")
def test_stream_state_matches_the_model_on_the_2_9_service(namespace: str) -> None:
    service = NatsAdapter(url=SERVICE_URL)
    try:
        assert _replay_comparing_stream_state(service, namespace) == len(STATE_STEPS) - 4  # and no restarts
    finally:
        service.shutdown()


@pytest.mark.rules("RESTART-5")
def test_the_restart_step_tells_2_9_from_later_releases(namespace: str) -> None:
    """nats-server 2.9.10 (the Debian binary, run embedded) recovers an empty, never-used stream with
    first_seq 1 instead of 0; 2.15.1 keeps 0, as the model says (RESTART-5: nothing changes)."""
    shown: dict[str, tuple[int, int]] = {}
    for binary in ("/usr/sbin/nats-server", None):
        adapter = NatsAdapter(server_bin=binary)
        model = ReferenceAdapter("jetstream")
        try:
            adapter.open(namespace)
            for side in (adapter, model):
                assert side.declare_queue(QueueConfig("q")).is_ok
                assert side.call("restart", mode="graceful").is_ok
            got = adapter.call("stream_state", queue="q").value
            want = model.call("stream_state", queue="q").value
            shown[adapter.server_version] = (got["first_seq"], want["first_seq"])
        finally:
            adapter.shutdown()
    assert shown.pop("2.9.10") == (1, 0)
    ((version, (got_first, want_first)),) = shown.items()
    assert parse_version(version) >= (2, 15, 0) and got_first == want_first == 0  # type: ignore[operator]
