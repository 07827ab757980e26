"""DELIVERY-27..30: the queue's durable consumer and stream in JetStream's terms (model side; the
embedded nats-server holds the same values in spec/examples/brokers/nats-*-consumer-state*.yaml and
the queue machines compare them after every step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import Unsupported
from mqconform.reference_model.profiles import profile
from mqconform.reference_model.state import QueueState, Ref
from mqconform.reference_model.world import World
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "spec" / "examples" / "brokers"


def _jetstream(ring: int = -1) -> Broker:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q", ring_size=ring))
    return b


def _floor(b: Broker) -> tuple[int, int]:
    state = b.consumer_state("q")
    return state["ack_floor_consumer_seq"], state["ack_floor_stream_seq"]


@pytest.mark.rules("DELIVERY-27", "DELIVERY-28", "DELIVERY-29")
def test_a_redelivery_counts_as_a_delivery_and_keeps_its_first_consumer_sequence() -> None:
    b = _jetstream()
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for m in ("m1", "m2", "m3"):
        b.send("q", Message(m))
    assert [b.receive("c") for _ in range(3)] == ["m1", "m2", "m3"]
    assert b.nack("c", "m1") == "ok" and b.receive("c") == "m1"
    assert b.consumer_state("q") == {
        "num_pending": 0, "num_ack_pending": 3, "num_redelivered": 1, "delivered_consumer_seq": 4,
        "delivered_stream_seq": 3, "ack_floor_consumer_seq": 0, "ack_floor_stream_seq": 0}
    assert b.ack("c", "m2") == "ok" and _floor(b) == (0, 0)  # not the one at the floor
    assert b.ack("c", "m1") == "ok" and _floor(b) == (2, 2)  # m1's first delivery was 1: to m3's
    assert b.ack("c", "m3") == "ok" and _floor(b) == (4, 3)  # nothing unacknowledged: delivered


@pytest.mark.rules("DELIVERY-28", "DELIVERY-29", "DELIVERY-30")
def test_the_floor_stays_below_sequences_the_consumer_skipped_until_an_ack_moves_it() -> None:
    b = _jetstream(ring=1)
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    for m in ("m1", "m2", "m3"):
        b.send("q", Message(m))  # m1 and m2 evicted before any delivery
    assert b.receive("c") == "m3"
    state = b.consumer_state("q")
    assert (state["delivered_stream_seq"], _floor(b)) == (3, (0, 0))
    assert b.stream_state("q")["first_seq"] == 3
    assert b.ack("c", "m3") == "ok" and _floor(b) == (1, 3)


@pytest.mark.rules("DELIVERY-28", "DELIVERY-29")
def test_a_late_durable_starts_past_what_the_stream_lost_and_a_purge_moves_it_past_the_last() -> None:
    b = _jetstream(ring=2)
    for m in ("m1", "m2", "m3", "m4"):
        b.send("q", Message(m))
    assert b.consumer_state("q")["delivered_stream_seq"] == 0  # no durable yet: a fresh one
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    assert b.consumer_state("q")["delivered_stream_seq"] == 2 and _floor(b) == (0, 2)
    assert b.receive("c") == "m3"
    b.send("q", Message("m5"))
    assert b.purge("q") == 2
    state = b.consumer_state("q")
    assert (state["num_ack_pending"], state["delivered_stream_seq"], _floor(b)) == (0, 5, (1, 5))


@pytest.mark.rules("DELIVERY-27")
def test_other_profiles_have_no_consumer_state() -> None:
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q"))
    with pytest.raises(Unsupported):
        b.consumer_state("q")
    adapter = ReferenceAdapter("rabbitmq-classic")
    assert "consumer_state" not in adapter.capabilities
    assert "consumer_state" in ReferenceAdapter("jetstream").capabilities


class _FloorNeverMoves(Broker):
    """A broken model: the ack floor stays where the consumer's creation put it."""

    def _left_ack_pending(self, queue: QueueState, ref: Ref) -> None:
        return None


@pytest.mark.rules("DELIVERY-29")
def test_the_ack_floor_fill_example_fails_on_a_model_whose_floor_never_moves() -> None:
    scenario = load(EXAMPLES / "nats-consumer-ack-floor-fill.yaml")
    options = scenario.model_options()
    assert run_scenario(scenario, ReferenceAdapter(options=options), strict=True).verdict == "pass"
    broken = ReferenceAdapter(options=options, world_factory=lambda o: World(o, _FloorNeverMoves))
    outcome = run_scenario(scenario, broken, strict=True)
    assert outcome.verdict == "fail" and "ack_floor_consumer_seq" in outcome.verdict_line()
