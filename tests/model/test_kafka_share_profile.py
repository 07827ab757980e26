"""The `kafka-share` profile (KIP-932 share groups) in the model: counts never undone, releases at their
offset, archive at the group's delivery count limit (default 5), the lock as an ack wait."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import profile

rules = pytest.mark.rules


def share_group(**queue: object) -> Broker:
    broker = Broker(profile("kafka-share"))
    broker.declare_queue(QueueConfig("q", max_delivery_attempts=None, **queue))  # type: ignore[arg-type]
    for name in ("c", "d"):
        broker.open_consumer(ConsumerConfig(name, "q", window_bytes=0))
    for i in range(1, 4):
        broker.send("q", Message(f"m{i}"))
    return broker


@rules("REDELIVERY-38", "REDELIVERY-39")
def test_release_and_close_keep_the_count_and_the_place() -> None:
    b = share_group()
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    assert b.nack("c", "m2") == "ok" and b.pending_ids("q") == ["m2", "m3"]
    b.close("c")  # m1 back before m2, its count not undone
    assert b.pending_ids("q") == ["m1", "m2", "m3"] and b.delivery_count("q", "m1") == 1
    assert b.receive("d") == "m1" and b.delivery_count("q", "m1") == 2


@rules("REDELIVERY-40", "REDELIVERY-26")
def test_the_default_limit_of_five_archives_the_record() -> None:
    b = share_group()
    for n in range(1, 6):
        assert b.receive("c") == "m1" and b.delivery_count("q", "m1") == n
        assert b.nack("c", "m1") == "ok"
    assert b.delivery_count("q", "m1") is None and b.receive("c") == "m2"
    assert profile("kafka-share").min_delivery_limit == 2


@rules("REDELIVERY-41")
def test_the_acquisition_lock_returns_the_record_with_its_count() -> None:
    b = Broker(profile("kafka-share"))
    b.declare_queue(QueueConfig("q", max_delivery_attempts=None))
    b.open_consumer(ConsumerConfig("c", "q", window_bytes=0, ack_wait_ms=1000))
    b.send("q", Message("m1"))
    assert b.receive("c") == "m1"
    b.advance(1000)
    assert b.ack("c", "m1") == "failed" and b.receive("c") == "m1" and b.delivery_count("q", "m1") == 2
