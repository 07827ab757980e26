"""RETENTION-1..11: a stream address with several durable consumers (reference_model/retention.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import ARTEMIS, JETSTREAM


def stream(retention: Any, *queues: str) -> Broker:
    broker = Broker(JETSTREAM)
    broker.declare_address(AddressConfig("s", retention=retention))
    for queue in queues:
        assert broker.join(queue, "s") == "created"
        broker.open_consumer(ConsumerConfig(f"c-{queue}", queue, window_bytes=0))
    return broker


def stored(broker: Broker) -> int:
    return broker.retention_state("s")["messages"]


def send(broker: Broker, *ids: str) -> None:
    for msg_id in ids:
        assert broker.send("s", Message(msg_id)) == "accepted"


@pytest.mark.rules("RETENTION-1", "RETENTION-2", "RETENTION-3")
def test_limits_keeps_everything_and_each_consumer_gets_every_message() -> None:
    broker = stream("limits", "q1", "q2")
    send(broker, "m1", "m2")
    assert [broker.receive("c-q1"), broker.receive("c-q2")] == ["m1", "m1"]
    assert broker.ack("c-q1", "m1") == "ok" and broker.ack("c-q2", "m1") == "ok"
    assert stored(broker) == 2  # acknowledged by both: still stored
    broker.close("c-q2")
    broker.leave("q2")
    assert stored(broker) == 2
    assert broker.receive("c-q1") == "m2"


@pytest.mark.rules("RETENTION-4", "RETENTION-5", "RETENTION-6", "RETENTION-7", "RETENTION-8")
def test_interest_keeps_a_message_while_a_consumer_needs_it() -> None:
    broker = stream("interest")
    send(broker, "m0")
    assert stored(broker) == 0  # no consumer: not stored (RETENTION-4)
    broker.join("q1", "s")
    broker.open_consumer(ConsumerConfig("c-q1", "q1", window_bytes=0))
    send(broker, "m1")
    broker.join("q2", "s")  # DeliverPolicy New: no interest in m1 (RETENTION-6)
    broker.open_consumer(ConsumerConfig("c-q2", "q2", window_bytes=0))
    send(broker, "m2", "m3")
    assert stored(broker) == 3
    assert broker.receive("c-q2") == "m2"
    assert broker.consumer_state("q2")["num_pending"] == 1
    assert broker.consumer_state("q1")["num_pending"] == 3  # its own position (RETENTION-11)
    assert broker.receive("c-q1") == "m1" and broker.ack("c-q1", "m1") == "ok"
    assert stored(broker) == 2  # m1: q1 was the only consumer with interest (RETENTION-5)
    assert broker.receive("c-q1") == "m2" and broker.nack("c-q1", "m2", requeue=False) == "ok"
    assert stored(broker) == 2  # q2 still holds m2 (RETENTION-8: the terminate is q1's ack)
    assert broker.ack("c-q2", "m2") == "ok"
    assert stored(broker) == 1
    broker.close("c-q1")
    broker.leave("q1")  # m3 is still pending for q2 (RETENTION-7)
    assert stored(broker) == 1
    broker.close("c-q2")
    broker.leave("q2")  # the last consumer: the stream empties
    assert stored(broker) == 0


@pytest.mark.rules("RETENTION-9", "RETENTION-10")
def test_workqueue_has_one_consumer_and_an_ack_removes() -> None:
    broker = stream("workqueue", "q1")
    assert broker.join("q2", "s") == "refused"
    send(broker, "m1", "m2")
    assert broker.receive("c-q1") == "m1"
    assert stored(broker) == 2
    assert broker.ack("c-q1", "m1") == "ok"
    assert stored(broker) == 1


def test_misuse_and_other_profiles() -> None:
    with pytest.raises(Unsupported):
        Broker(ARTEMIS).declare_address(AddressConfig("s", retention="limits"))
    broker = Broker(JETSTREAM)
    with pytest.raises(ModelMisuse):
        broker.declare_address(AddressConfig("s", retention="bogus"))  # type: ignore[arg-type]
    broker.declare_address(AddressConfig("a"))
    with pytest.raises(ModelMisuse):
        broker.join("q", "a")  # not a stream address
    workqueue = stream("workqueue")
    with pytest.raises(ModelMisuse):
        workqueue.send("s", Message("m1"))  # before its consumer: not modelled
    held = stream("interest", "q1")
    with pytest.raises(ModelMisuse):
        held.leave("q1")  # its consumer is open
    with pytest.raises(Unsupported):  # address limits are paging, which no profile with retention has
        Broker(JETSTREAM).declare_address(AddressConfig("s", retention="limits", max_size_messages=5))


@pytest.mark.rules("RETENTION-7")
def test_a_leave_releases_a_message_waiting_out_a_nak_delay() -> None:
    broker = stream("interest", "q1", "q2")
    send(broker, "m1")
    assert broker.receive("c-q1") == "m1" and broker.nack("c-q1", "m1", delay_ms=500) == "ok"
    broker.close("c-q1")
    broker.leave("q1")
    assert stored(broker) == 1  # q2 still needs m1
    broker.close("c-q2")
    broker.leave("q2")
    assert stored(broker) == 0
    broker.advance(1000)  # the delay's timer finds its queue gone: nothing happens


@pytest.mark.rules("DELIVERY-38", "DELIVERY-34")
def test_a_fetch_takes_nothing_while_paused_or_at_max_unacked() -> None:
    broker = stream("limits")
    broker.join("q1", "s")
    broker.open_consumer(ConsumerConfig("c", "q1", window_bytes=0, max_unacked=1))
    send(broker, "m1", "m2")
    broker.pause_consumers("q1", 100)
    assert broker.fetch("c", 2) == []
    broker.advance(100)
    assert broker.fetch("c", 2) == ["m1"]  # the ack-pending cap of 1
    broker.open_consumer(ConsumerConfig("push", "q1"))
    with pytest.raises(ModelMisuse):
        broker.fetch("push", 1)  # a consumer with a window is pushed to, it does not pull


@pytest.mark.rules("DELIVERY-38", "DELIVERY-39", "DELIVERY-40")
def test_a_fetch_takes_a_batch_within_its_byte_budget() -> None:
    broker = stream("limits", "q1")
    for msg_id, size in (("m1", 1), ("m2", 2), ("m3", 3), ("m4", 1), ("m5", 1)):
        assert broker.send("s", Message(msg_id, size=size)) == "accepted"
    assert broker.fetch("c-q1", 10, max_bytes=2) == ["m1"]  # m2 does not fit in what is left
    assert broker.next_size("c-q1") == 2
    assert broker.fetch("c-q1", 10, max_bytes=1) == []  # DELIVERY-40: m2 stays first
    assert broker.fetch("c-q1", 10, max_bytes=5) == ["m2", "m3"]  # the budget spent exactly
    assert broker.fetch("c-q1", 1) == ["m4"]  # batch only
    assert broker.fetch("c-q1", 3) == ["m5"]  # fewer available
    assert broker.fetch("c-q1", 3) == [] and broker.next_size("c-q1") is None
    with pytest.raises(ModelMisuse):
        broker.fetch("c-q1", 0)
