"""The restart step in the model: what survives a graceful restart or a SIGKILL, per
profile (RESTART-1..4), through the broker, the world's `call("restart")`, the driver and scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.operations import call_operation
from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse
from mqconform.reference_model.profiles import profile
from mqconform.scenario.loader import ScenarioError, load, parse
from mqconform.scenario.runner import run_scenario

SCENARIO = Path(__file__).parents[1] / "adapters" / "scenarios" / "nats-restart-keeps-consumer-parks-nak.yaml"


def broker(name: str, **consumer: object) -> Broker:
    b = Broker(profile(name))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("c", "q", **consumer))  # type: ignore[arg-type]
    for m in ("m1", "m2", "m3", "m4"):
        assert b.send("q", Message(m)) == "accepted"
    return b


@pytest.mark.rules("RESTART-1", "RESTART-2")
@pytest.mark.parametrize("mode", ["graceful", "kill"])
def test_closed_consumers_give_their_messages_back(mode: str) -> None:
    b = broker("activemq-classic", window_bytes=-1, max_unacked=2)
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    assert b.ack("c", "m1") == "ok"
    before = b.counters("q")
    b.restart(mode)
    assert "c" not in b.consumers
    after = b.counters("q")
    assert (after.message_count, after.added) == (before.message_count, before.added) == (3, 4)
    assert after.delivering_count == 0 and b.pending_ids("q") == ["m2", "m3", "m4"]
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=-1, max_unacked=2))
    assert [b.receive("c"), b.receive("c"), b.receive("c")] == ["m2", "m3", None]


@pytest.mark.rules("RESTART-1", "RESTART-3")
def test_kept_consumer_holds_its_messages_and_counts() -> None:
    b = broker("jetstream", window_bytes=0)
    assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok" and b.receive("c") == "m1"
    b.restart("graceful")
    assert b.unacked_ids("c") == ["m1"] and b.delivery_count("q", "m1") == 2
    assert b.ack("c", "m1") == "ok"
    assert b.counters("q").message_count == 3 and b.receive("c") == "m2"


@pytest.mark.rules("RESTART-3")
def test_returned_messages_are_parked_and_fill_the_window() -> None:
    b = broker("jetstream", window_bytes=0, max_unacked=2)
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    assert b.nack("c", "m1") == "ok"
    b.restart("graceful")
    shown = b.counters("q")
    assert (shown.message_count, shown.pending_count, shown.delivering_count) == (4, 2, 2)
    assert b.receive("c") is None  # m2 held, m1 parked: max_unacked 2 reached
    assert b.ack("c", "m2") == "ok"
    assert b.receive("c") == "m3" and b.receive("c") is None
    # by stream sequence (DELIVERY-22), as nats-server's processNak: back to the redelivery queue
    assert b.nack("c", "m1") == "ok"
    assert b.receive("c") == "m1" and b.delivery_count("q", "m1") == 2


@pytest.mark.rules("RESTART-1", "RESTART-3")
def test_without_parking_the_redelivery_queue_survives() -> None:
    b = Broker(profile("jetstream").evolve(restart_returns="kept"))
    b.declare_queue(QueueConfig("q", ring_size=2))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for m in ("m1", "m2"):
        b.send("q", Message(m))
    assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok"
    b.restart("kill")
    assert b.receive("c") == "m1" and b._parked(b.queues["q"]) == 0


@pytest.mark.rules("RESTART-3", "RING-5")
def test_a_parked_message_is_still_evicted_by_discard_old() -> None:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q", ring_size=2))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for m in ("m1", "m2"):
        b.send("q", Message(m))
    assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok"
    b.restart("graceful")
    assert b.send("q", Message("m3")) == "accepted"  # discard old evicts the parked m1
    assert b.counters("q").message_count == 2 and b.counters("q").replaced == 1
    assert b.receive("c") == "m2"


@pytest.mark.rules("RESTART-4")
def test_options_and_modes() -> None:
    assert profile("jetstream").restart_flush_ms == 100 and profile("activemq-classic").restart_flush_ms == 0
    b = broker("jetstream", window_bytes=0)
    with pytest.raises(ModelMisuse, match="graceful or kill"):
        b.restart("reboot")


@pytest.mark.rules("RESTART-1", "RESTART-2", "RESTART-3")
def test_restart_through_the_world_the_driver_and_scenarios() -> None:
    model = ReferenceAdapter("jetstream")
    assert "restart" in model.capabilities
    assert call_operation(model, "restart", "kill") == Result.ok(None)
    without = ReferenceAdapter("jetstream")
    without.capabilities = without.capabilities - {"restart"}
    assert call_operation(without, "restart", "graceful") == Result.fail("unsupported: restart")
    outcome = run_scenario(load(SCENARIO), ReferenceAdapter(options=load(SCENARIO).model_options()),
                           strict=True)
    assert outcome.verdict == "pass", outcome.verdict_line()
    # the scenario tells the profiles apart: keeping the redelivery queue would redeliver m1 at once
    kept = profile("jetstream").evolve(restart_returns="kept")
    assert run_scenario(load(SCENARIO), ReferenceAdapter(options=kept), strict=True).verdict == "fail"


@pytest.mark.rules("RESTART-1")
def test_scenario_language_rejects_an_unknown_restart_mode() -> None:
    assert parse("profile: jetstream\nsteps:\n  - restart: kill\n", "ok.yaml").steps
    with pytest.raises(ScenarioError, match=r"bad\.yaml:3:"):
        parse("profile: jetstream\nsteps:\n  - restart: reboot\n", "bad.yaml")


@pytest.mark.rules("RESTART-5")
def test_stream_state_in_jetstream_terms() -> None:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q"))
    fresh = {"msgs": 0, "first_seq": 0, "last_seq": 0, "num_deleted": 0, "num_pending": 0,
             "num_ack_pending": 0, "num_redelivered": 0, "delivered_seq": 0, "ack_floor_seq": 0}
    assert b.stream_state("q") == fresh
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for m in ("m1", "m2", "m3", "m4"):
        b.send("q", Message(m))
    assert b.receive("c") == "m1" and b.receive("c") == "m2" and b.receive("c") == "m3"
    assert b.ack("c", "m2") == "ok" and b.nack("c", "m1") == "ok"
    assert b.stream_state("q") == {
        "msgs": 3, "first_seq": 1, "last_seq": 4, "num_deleted": 1, "num_pending": 1,
        "num_ack_pending": 2, "num_redelivered": 0, "delivered_seq": 3, "ack_floor_seq": 0}
    assert b.receive("c") == "m1"  # the redelivery queue first
    assert b.stream_state("q")["num_redelivered"] == 1
    b.restart("graceful")
    assert b.stream_state("q")["num_redelivered"] == 1
    for m in ("m1", "m3"):
        assert b.ack("c", m) == "ok"
    assert b.stream_state("q") == {
        "msgs": 1, "first_seq": 4, "last_seq": 4, "num_deleted": 0, "num_pending": 1,
        "num_ack_pending": 0, "num_redelivered": 0, "delivered_seq": 3, "ack_floor_seq": 3}
    assert ReferenceAdapter("jetstream").call("stream_state", queue="nope").type == "fail"


@pytest.mark.rules("RESTART-3", "REDELIVERY-27")
def test_a_parked_message_returns_after_the_consumers_ack_wait() -> None:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0, ack_wait_ms=1000))
    for m in ("m1", "m2"):
        b.send("q", Message(m))
    assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok"
    b.restart("graceful")
    assert b.receive("c") == "m2" and b.ack("c", "m2") == "ok"
    b.advance(999)
    assert b.receive("c") is None
    b.advance(1)
    assert b.receive("c") == "m1" and b.delivery_count("q", "m1") == 2


def _ring_of_two_with_held(options_name: str = "artemis", **overrides: object) -> Broker:
    """A ring of 2: m1 and m2 delivered, m1 nacked and delivered again, m3 pending."""
    b = Broker(profile(options_name).evolve(**overrides))
    b.declare_queue(QueueConfig("q", ring_size=2))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for m in ("m1", "m2"):
        assert b.send("q", Message(m)) == "accepted"
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    assert b.nack("c", "m1") == "ok"
    assert b.receive("c") == "m1"  # delivered twice, its count 1 written at the nack
    assert b.send("q", Message("m3")) == "accepted"
    return b


@pytest.mark.rules("RESTART-6")
def test_artemis_reloads_its_journal_without_a_cancel() -> None:
    """A ring of 2 holding 2 delivered messages and 1 pending one: a close would return the held
    ones over the ring and replace one (RING-7); the reload lists all three in stored order with the
    counts of their last return, applies no ring, and starts the statistics over."""
    b = _ring_of_two_with_held()
    b.restart("kill")
    assert b.pending_ids("q") == ["m1", "m2", "m3"]
    counters = b.counters("q")
    assert (counters.message_count, counters.pending_count, counters.delivering_count) == (3, 3, 0)
    assert (counters.added, counters.acknowledged, counters.replaced) == (3, 0, 0)
    assert not b.consumers
    b.open_consumer(ConsumerConfig("c2", "q", window_bytes=0))
    assert b.receive("c2") == "m1" and b.delivery_count("q", "m1") == 2
    assert b.receive("c2") == "m2" and b.delivery_count("q", "m2") == 1
    # the same queue under restart_consumers=closed: the close's returns meet the ring
    closed = _ring_of_two_with_held(restart_consumers="closed")
    closed.restart("kill")
    assert closed.pending_ids("q") == ["m1", "m3"] and closed.counters("q").replaced == 1
