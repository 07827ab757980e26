"""DELIVERY-49: message groups (Artemis JMSXGroupID, AMQP properties group-id), in the model."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import Unsupported
from mqconform.reference_model.profiles import profile


def queue_with(*consumers: str, window: int = 1) -> Broker:
    """An artemis queue q with pushing consumers of `window` messages each, opened in order."""
    broker = Broker(profile("artemis"))
    broker.declare_queue(QueueConfig("q"))
    for name in consumers:
        broker.open_consumer(ConsumerConfig(name, "q", window_messages=window))
    return broker


def drain(broker: Broker, consumer: str) -> list[str]:
    got = []
    while (msg := broker.receive(consumer)) is not None:
        got.append(msg)
        broker.ack(consumer, msg)
    return got


@pytest.mark.rules("DELIVERY-49")
def test_a_group_goes_to_the_consumer_that_took_its_first_message() -> None:
    b = queue_with("a", "b", window=10)
    for n, group in enumerate(["g", "h", "g", "g", "h", None, None]):
        b.send("q", Message(f"m{n}", group=group))
    # g to a (a's turn), h to b, then g's and h's messages follow them; the ungrouped ones alternate
    # from where the rotation was: a group consumer's delivery does not move it on
    assert drain(b, "a") == ["m0", "m2", "m3", "m5"]
    assert drain(b, "b") == ["m1", "m4", "m6"]


@pytest.mark.rules("DELIVERY-49")
def test_a_busy_group_consumer_holds_back_the_queue() -> None:
    b = queue_with("a", "b")
    b.send("q", Message("m1", group="g"))  # a takes g; its window is full
    b.send("q", Message("m2", group="g"))  # waits for a
    b.send("q", Message("m3"))  # behind m2: waits too, although b has room
    assert b.pending_ids("q") == ["m2", "m3"]
    assert b.receive("b") is None
    assert b.receive("a") == "m1"
    b.ack("a", "m1")  # a has room: m2 goes to it, then m3 to b
    assert b.pending_ids("q") == []
    assert b.receive("a") == "m2"
    assert b.receive("b") == "m3"


@pytest.mark.rules("DELIVERY-49")
def test_a_closing_consumer_releases_its_groups() -> None:
    b = queue_with("a", "b")
    b.send("q", Message("m1", group="g"))  # to a
    b.send("q", Message("m2", group="g"))  # waits for a
    b.close("a")  # m1 returns to the head; g has no consumer: b takes m1 and owns g
    assert b.receive("b") == "m1"
    b.open_consumer(ConsumerConfig("c", "q", window_messages=1))
    b.ack("b", "m1")
    assert b.receive("c") is None  # m2 is b's, whichever consumer's turn it is
    assert b.receive("b") == "m2"


@pytest.mark.rules("DELIVERY-49")
def test_a_pull_consumer_gets_nothing_of_another_consumers_group() -> None:
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("a", "q", window_bytes=0))
    b.open_consumer(ConsumerConfig("b", "q", window_bytes=0))
    b.send("q", Message("m1", group="g"))
    b.send("q", Message("m2", group="g"))
    b.send("q", Message("m3"))
    assert b.receive("a") == "m1"  # a owns g
    assert b.receive("b") is None  # m2 is a's, and m3 waits behind it
    assert b.receive("a") == "m2"
    assert b.receive("b") == "m3"


@pytest.mark.rules("DELIVERY-49", "DELIVERY-26")
def test_an_exclusive_queue_ignores_groups() -> None:
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q", single_active_consumer=True))
    b.open_consumer(ConsumerConfig("a", "q", window_messages=1))
    b.open_consumer(ConsumerConfig("b", "q", window_messages=1))
    b.send("q", Message("m1", group="g"))
    b.send("q", Message("m2", group="h"))
    assert b.receive("a") == "m1"
    assert b.receive("b") is None
    assert b.receive("a") == "m2"  # h goes to the active consumer too


@pytest.mark.rules("DELIVERY-49")
def test_groups_need_the_feature_and_a_plain_queue() -> None:
    rabbit = Broker(profile("rabbitmq-classic"))
    rabbit.declare_queue(QueueConfig("q"))
    with pytest.raises(Unsupported):
        rabbit.send("q", Message("m1", group="g"))
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q", non_destructive=True))
    with pytest.raises(Unsupported):
        b.send("q", Message("m1", group="g"))
    b.send("q", Message("m2"))  # without a group: as usual


@pytest.mark.rules("DELIVERY-49", "DELIVERY-25")
def test_the_group_consumer_is_served_whatever_its_priority() -> None:
    b = Broker(profile("artemis"))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("low", "q", window_messages=1))
    b.send("q", Message("m1", group="g"))  # low, the only consumer, owns g
    b.open_consumer(ConsumerConfig("high", "q", window_messages=5, priority=5))
    b.send("q", Message("m2", group="g"))
    b.send("q", Message("m3"))
    assert b.pending_ids("q") == ["m2", "m3"]  # low is busy: high gets nothing either
    assert b.receive("low") == "m1"
    b.ack("low", "m1")
    assert b.receive("low") == "m2"
    assert b.receive("high") == "m3"
