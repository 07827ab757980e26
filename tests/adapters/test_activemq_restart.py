"""Restarts on ActiveMQ Classic as a step on the adapter's private KahaDB broker (graceful
and SIGKILL). Each broker start takes a JVM start-up (several seconds), so this stays at one
scenario with both modes and one direct check of the adapter."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.adapters.activemq.adapter import CAPABILITIES, ActiveMQAdapter
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario

pytestmark = pytest.mark.broker("activemq")

SCENARIO = Path(__file__).parent / "scenarios" / "activemq-restart-returns-unacked.yaml"
PREFETCH = {"window_bytes": -1, "max_unacked": 2}


def test_restart_needs_the_private_persistent_broker() -> None:
    assert ActiveMQAdapter().capabilities == CAPABILITIES
    assert "restart" in ActiveMQAdapter(persistent=True).capabilities
    remote = ActiveMQAdapter(url="stomp://127.0.0.1:61613", persistent=True)
    assert "restart" not in remote.capabilities
    assert remote.call("restart", mode="kill").error == "unsupported: flow-control component 'restart'"


@pytest.mark.rules("RESTART-1", "RESTART-2")
def test_restart_scenario_holds_on_the_model_and_on_kahadb(namespace: str) -> None:
    """Graceful then SIGKILL: nothing lost, nothing acknowledged resurrected, the unacknowledged
    message returns ahead of the rest, consumers subscribe again."""
    scenario = load(SCENARIO)
    model = run_scenario(scenario, ReferenceAdapter(options=scenario.model_options()), strict=True)
    adapter = ActiveMQAdapter(persistent=True)
    try:
        outcome = run_scenario(scenario, adapter, strict=True, namespace=namespace)
        assert adapter.broker is not None and adapter.broker.running()
        # the adapter forgot the subscriptions the restart ended
        assert adapter.receive("c").error == "unknown consumer 'c'"
        assert adapter.call("restart", mode="reboot").type == "fail"
    finally:
        adapter.shutdown()
    assert model.verdict == "pass" and outcome.verdict == "pass", outcome.verdict_line()
    assert outcome.held == model.held and not outcome.not_applicable
    assert adapter.broker is None  # shutdown stopped the private broker
    # RESTART-2 restart_order stored: kept in the redelivery list's order, m3 would come before m2
    kept_order = scenario.model_options().evolve(restart_order="kept")
    kept = run_scenario(scenario, ReferenceAdapter(options=kept_order))
    assert (kept.verdict, kept.step) == ("fail", 14)


@pytest.mark.rules("RESTART-1", "RESTART-2")
def test_a_message_sent_just_before_a_kill_survives(namespace: str) -> None:
    adapter = ActiveMQAdapter(persistent=True)
    try:
        adapter.open(namespace)
        adapter.declare_queue(QueueConfig("q"))
        assert adapter.send("q", Message("m1")).value == "accepted"
        assert adapter.call("restart", mode="kill").is_ok
        adapter.open_consumer(ConsumerConfig("c", "q", **PREFETCH))  # type: ignore[arg-type]
        assert adapter.receive("c").value == "m1"
        assert adapter.ack("c", "m1").value == "ok"
        assert adapter.receive("c").value is None
    finally:
        adapter.shutdown()
