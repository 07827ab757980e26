"""The brokers' vocabulary in the model: dead-lettering what the length limit drops,
overflow policies per queue, byte bounds, nack forms, delivery-limit defaults."""

from __future__ import annotations

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.operations import call_operation
from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import profile

PULL = {"window_bytes": 0}


def rabbit(name: str = "rabbitmq-classic", **queue: object) -> Broker:
    b = Broker(profile(name))
    b.declare_address(AddressConfig("dlx"))
    b.declare_queue(QueueConfig("dlq", address="dlx"))
    b.declare_queue(QueueConfig("q", dead_letter="dlx", **queue))  # type: ignore[arg-type]
    return b


@pytest.mark.rules("RING-26")
@pytest.mark.parametrize("name", ["rabbitmq-classic", "rabbitmq-quorum"])
def test_drop_head_dead_letters_the_dropped_message(name: str) -> None:
    b = rabbit(name, ring_size=1)
    for m in ("m1", "m2", "m3"):
        assert b.send("q", Message(m)) == "accepted"
    assert b.pending_ids("q") == ["m3"] and b.pending_ids("dlq") == ["m1", "m2"]
    assert b.counters("q").replaced == 2


@pytest.mark.rules("RING-26", "RING-14")
def test_trim_after_requeue_dead_letters_the_requeued_head() -> None:
    b = rabbit(ring_size=1)
    b.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
    b.send("q", Message("m1"))
    assert b.receive("c") == "m1"
    b.send("q", Message("m2"))
    assert b.nack("c", "m1") == "ok"
    assert b.pending_ids("q") == ["m2"] and b.pending_ids("dlq") == ["m1"]


@pytest.mark.rules("RING-26")
def test_artemis_ring_and_a_queue_without_dead_letter_address_only_drop() -> None:
    a = Broker(profile("artemis"))
    a.declare_address(AddressConfig("dlx"))
    a.declare_queue(QueueConfig("dlq", address="dlx"))
    a.declare_queue(QueueConfig("q", ring_size=1, dead_letter="dlx"))
    a.send("q", Message("m1"))
    a.send("q", Message("m2"))
    assert a.pending_ids("dlq") == []
    b = Broker(profile("rabbitmq-classic"))
    b.declare_queue(QueueConfig("q", ring_size=1))
    b.send("q", Message("m1"))
    b.send("q", Message("m2"))
    assert b.pending_ids("q") == ["m2"]


@pytest.mark.rules("RING-24", "RING-28")
def test_reject_publish_dlx_refuses_and_dead_letters_on_classic_only() -> None:
    b = rabbit(ring_size=1, overflow="reject-publish-dlx")
    assert [b.send("q", Message(m)) for m in ("m1", "m2")] == ["accepted", "failed"]
    assert b.pending_ids("q") == ["m1"] and b.pending_ids("dlq") == ["m2"]
    quorum = rabbit("rabbitmq-quorum", ring_size=1, overflow="reject-publish-dlx")
    assert [quorum.send("q", Message(m)) for m in ("m1", "m2")] == ["accepted", "accepted"]
    assert quorum.pending_ids("q") == ["m2"] and quorum.pending_ids("dlq") == ["m1"]


@pytest.mark.rules("RING-28", "RING-22", "RING-24")
def test_one_broker_holds_queues_with_different_policies() -> None:
    b = Broker(profile("rabbitmq-classic"))
    b.declare_queue(QueueConfig("head", ring_size=1, overflow="drop-head"))
    b.declare_queue(QueueConfig("reject", ring_size=1, overflow="reject-publish"))
    b.declare_queue(QueueConfig("default", ring_size=1))
    for q in ("head", "reject", "default"):
        b.send(q, Message("m1"))
    assert b.send("reject", Message("m2")) == "failed"
    assert b.send("head", Message("m2")) == "accepted" and b.pending_ids("head") == ["m2"]
    assert b.send("default", Message("m2")) == "accepted"
    js = Broker(profile("jetstream"))
    js.declare_queue(QueueConfig("new", ring_size=1, overflow="discard-new"))
    js.declare_queue(QueueConfig("old", ring_size=1, overflow="discard-old"))
    assert [js.send("new", Message(m)) for m in ("m1", "m2")] == ["accepted", "failed"]
    assert [js.send("old", Message(m)) for m in ("m1", "m2")] == ["accepted", "accepted"]
    assert js.pending_ids("old") == ["m2"]


@pytest.mark.rules("RING-28")
def test_a_policy_the_profile_lacks_is_unsupported() -> None:
    with pytest.raises(Unsupported, match="discard-new is not a policy of profile rabbitmq-classic"):
        Broker(profile("rabbitmq-classic")).declare_queue(QueueConfig("q", overflow="discard-new"))
    with pytest.raises(Unsupported, match="it has: none"):
        Broker(profile("artemis")).declare_queue(QueueConfig("q", ring_size=1, overflow="drop-head"))


@pytest.mark.rules("RING-23")
def test_quorum_profile_states_reject_publish_overshoot_and_hysteresis() -> None:
    b = Broker(profile("rabbitmq-quorum"))
    b.declare_queue(QueueConfig("q", ring_size=5, overflow="reject-publish"))
    b.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
    sent = [b.send("q", Message(f"m{i}")) for i in range(8)]
    assert sent == ["accepted"] * 6 + ["failed"] * 2
    for i in range(2):  # 6 -> 4 ready: 4 <= trunc(0.8 x 5) accepts again
        b.receive("c")
        b.ack("c", f"m{i}")
    assert b.send("q", Message("x1")) == "accepted"


@pytest.mark.rules("RING-27")
def test_byte_bound_drop_head_and_reject() -> None:
    b = Broker(profile("rabbitmq-classic"))
    b.declare_queue(QueueConfig("q", max_length_bytes=100))
    for m in ("a", "b", "c"):
        b.send("q", Message(m, size=40))
    assert b.pending_ids("q") == ["b", "c"]
    b.send("q", Message("big", size=100))
    assert b.pending_ids("q") == ["big"]
    b.declare_queue(QueueConfig("r", max_length_bytes=100, overflow="reject-publish"))
    assert [b.send("r", Message(m, size=60)) for m in ("a", "b")] == ["accepted", "failed"]
    quorum = Broker(profile("rabbitmq-quorum"))
    quorum.declare_queue(QueueConfig("q", max_length_bytes=100, overflow="reject-publish"))
    assert [quorum.send("q", Message(m, size=60)) for m in ("a", "b", "c")] == ["accepted", "accepted",
                                                                               "failed"]
    with pytest.raises(ModelMisuse):
        b.declare_queue(QueueConfig("bad", max_length_bytes=-2))
    with pytest.raises(Unsupported):
        Broker(profile("artemis")).declare_queue(QueueConfig("q", max_length_bytes=10))


@pytest.mark.rules("REDELIVERY-24", "REDELIVERY-25")
def test_nack_requeue_false_and_multiple() -> None:
    b = rabbit()
    b.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
    for m in ("m1", "m2", "m3", "m4"):
        b.send("q", Message(m))
        b.receive("c")
    assert b.nack("c", "m2", requeue=False, multiple=True) == "ok"
    assert b.pending_ids("dlq") == ["m1", "m2"]
    assert b.nack("c", "m4", multiple=True) == "ok"
    assert b.pending_ids("q") == ["m3", "m4"]
    assert b.nack("c", "m4", requeue=False) == "failed"
    with pytest.raises(Unsupported):
        Broker(profile("artemis")).nack("c", "m1", requeue=False)
    with pytest.raises(Unsupported):
        Broker(profile("jetstream")).nack("c", "m1", multiple=True)


@pytest.mark.rules("REDELIVERY-26", "REDELIVERY-5")
def test_delivery_limit_defaults_and_zero() -> None:
    quorum = Broker(profile("rabbitmq-quorum"))
    quorum.declare_queue(QueueConfig("none", max_delivery_attempts=None))
    quorum.declare_queue(QueueConfig("zero", max_delivery_attempts=0))
    assert quorum.queues["none"].delivery_limit is None and quorum.queues["zero"].delivery_limit == 0
    quorum.open_consumer(ConsumerConfig("c", "zero", **PULL))  # type: ignore[arg-type]
    quorum.send("zero", Message("m1"))
    quorum.receive("c")
    quorum.nack("c", "m1")
    assert quorum.counters("zero").killed == 1
    artemis = Broker(profile("artemis"))
    for name, limit in (("default", None), ("zero", 0), ("off", -1)):
        artemis.declare_queue(QueueConfig(name, max_delivery_attempts=limit))
    assert [artemis.queues[n].delivery_limit for n in ("default", "zero", "off")] == [10, None, None]


class _Recorder:
    """An outside adapter (over the model) that claims fewer capabilities and records declarations."""

    def __init__(self, implementation: str, drop: frozenset[str]) -> None:
        self.inner = ReferenceAdapter(implementation)
        self.profile = implementation
        self.capabilities = self.inner.capabilities - drop
        self.declared: list[QueueConfig] = []

    def declare_queue(self, config: QueueConfig) -> Result:
        self.declared.append(config)
        return self.inner.declare_queue(config)


@pytest.mark.rules("RING-28", "REDELIVERY-25", "REDELIVERY-26")
def test_driver_gates_new_vocabulary_by_capability_and_passes_the_profile_delivery_limit() -> None:
    adapter = _Recorder("rabbitmq-quorum", frozenset({"nack_multiple", "overflow:reject-publish",
                                                      "max_length_bytes"}))
    assert call_operation(adapter, "queue", {"name": "q"}).is_ok  # type: ignore[arg-type]
    assert adapter.declared[-1].max_delivery_attempts == -1  # the quorum default: no limit
    for args in ({"name": "r", "overflow": "reject-publish"}, {"name": "s", "max_length_bytes": 10}):
        refused = call_operation(adapter, "queue", args)  # type: ignore[arg-type]
        assert refused.type == "fail" and (refused.error or "").startswith("unsupported")
    nack = {"consumer": "c", "id": "m", "multiple": True}
    refused = call_operation(adapter, "nack", nack)  # type: ignore[arg-type]
    assert refused.error == "unsupported: nack_multiple"
    model = ReferenceAdapter("rabbitmq-quorum")
    assert call_operation(model, "queue", {"name": "q"}).is_ok
    assert model.world.broker.queues["q"].delivery_limit is None


def _two_consumers(name: str) -> Broker:
    b = Broker(profile(name))
    b.declare_queue(QueueConfig("q"))
    for m in ("m1", "m2", "m3"):
        b.send("q", Message(m))
    b.open_consumer(ConsumerConfig("a", "q", **PULL))  # type: ignore[arg-type]
    b.open_consumer(ConsumerConfig("b", "q", **PULL))  # type: ignore[arg-type]
    return b


@pytest.mark.rules("DELIVERY-22")
def test_invalid_ack_is_refused_on_artemis() -> None:
    b = _two_consumers("artemis")
    assert b.receive("a") == "m1" and b.ack("a", "m1") == "ok"
    assert b.receive("a") == "m2"
    assert b.ack("a", "m1") == "failed" and b.nack("a", "m1") == "failed" and b.ack("b", "m2") == "failed"
    assert b.unacked_ids("a") == ["m2"] and b.counters("q").pending_count == 1


@pytest.mark.rules("DELIVERY-22")
@pytest.mark.parametrize("name", ["rabbitmq-classic", "rabbitmq-quorum"])
def test_invalid_ack_closes_the_channel_on_rabbitmq(name: str) -> None:
    b = _two_consumers(name)
    assert b.receive("a") == "m1" and b.ack("a", "m1") == "ok"
    assert b.receive("a") == "m2" and b.receive("a") == "m3"
    assert b.ack("a", "m1") == "failed"  # double ack: 406, a's channel closes, m2 and m3 return
    assert b.unacked_ids("a") == [] and b.counters("q").pending_count == 2
    assert b.receive("a") == "m2"  # the consumer goes on on a new channel
    if name == "rabbitmq-quorum":
        assert b.delivery_count("q", "m2") == 2  # the close counted as a return
    assert b.nack("b", "m2", requeue=False, multiple=True) == "failed"  # wrong consumer: b's channel
    assert b.unacked_ids("a") == ["m2"]
    assert b.nack("a", "never", requeue=True) == "failed" and b.unacked_ids("a") == []


@pytest.mark.rules("DELIVERY-22")
def test_channel_error_returns_to_the_other_consumers_first() -> None:
    b = Broker(profile("rabbitmq-classic"))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("a", "q", window_bytes=-1, max_unacked=2))
    b.open_consumer(ConsumerConfig("b", "q", window_bytes=-1, max_unacked=1))
    for m in ("m1", "m2", "m3"):
        b.send("q", Message(m))  # round robin: m1 -> a, m2 -> b, m3 -> a
    assert b.receive("a") == "m1" and b.receive("b") == "m2"
    assert b.ack("b", "m2") == "ok"
    assert b.ack("a", "m2") == "failed"  # a's channel closes: m1 and its buffered m3 return
    assert b.receive("b") == "m1"  # b has room before a subscribes again
    assert b.receive("a") == "m3" and b.receive("a") is None


@pytest.mark.rules("DELIVERY-22")
def test_jetstream_acks_by_sequence() -> None:
    b = _two_consumers("jetstream")
    assert b.receive("a") == "m1" and b.ack("a", "m1") == "ok"
    assert b.ack("a", "m1") == "ok" and b.nack("a", "m1") == "ok"  # gone: answered, no change
    assert b.nack("a", "m1", requeue=False) == "ok"
    assert b.ack("a", "m3") == "failed"  # never given to a: no reply subject to send on
    assert b.receive("a") == "m2" and b.nack("a", "m2") == "ok"  # m2 waits for redelivery
    assert b.nack("a", "m2") == "ok" and b.pending_ids("q") == ["m2", "m3"]  # -NAK again: no change
    assert b.ack("a", "m2") == "ok"  # +ACK after -NAK: removed while waiting
    assert b.pending_ids("q") == ["m3"] and b.counters("q").acknowledged == 2
    assert b.receive("a") == "m3" and b.nack("a", "m3") == "ok"
    assert b.receive("b") == "m3"  # redelivered to b; a's stale ack settles b's delivery
    assert b.ack("a", "m3") == "ok" and b.unacked_ids("b") == [] and b.counters("q").message_count == 0
    b.send("q", Message("m4"))
    b.send("q", Message("m5"))
    assert b.receive("a") == "m4" and b.nack("a", "m4") == "ok" and b.receive("b") == "m4"
    assert b.nack("a", "m4") == "ok" and b.unacked_ids("b") == [] and b.pending_ids("q") == ["m4", "m5"]
    assert b.receive("a") == "m4" and b.nack("a", "m4") == "ok"
    assert b.nack("a", "m4", requeue=False) == "ok"  # +TERM while waiting: removed
    assert b.pending_ids("q") == ["m5"] and b.counters("q").killed == 1
    assert b.receive("b") == "m5" and b.nack("a", "m5", requeue=False) == "failed"


@pytest.mark.rules("DELIVERY-22")
def test_jetstream_ack_by_sequence_of_a_buffered_message_is_not_modelled() -> None:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("a", "q", **PULL))  # type: ignore[arg-type]
    b.send("q", Message("m1"))
    assert b.receive("a") == "m1" and b.nack("a", "m1") == "ok"
    b.open_consumer(ConsumerConfig("b", "q", window_bytes=-1, max_unacked=1))  # pushed to b's buffer
    with pytest.raises(Unsupported, match="by sequence"):
        b.ack("a", "m1")


def _jetstream(ack_wait: int | None = 100, **more: object) -> Broker:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q"))
    for m in ("m1", "m2"):
        b.send("q", Message(m))
    b.open_consumer(ConsumerConfig("a", "q", ack_wait_ms=ack_wait, **PULL))  # type: ignore[arg-type]
    b.open_consumer(ConsumerConfig("b", "q", ack_wait_ms=ack_wait, **PULL))  # type: ignore[arg-type]
    return b


@pytest.mark.rules("REDELIVERY-27")
def test_ack_wait_returns_an_unsettled_message_on_the_logical_clock() -> None:
    b = _jetstream()
    assert b.receive("a") == "m1"
    b.advance(99)
    assert b.unacked_ids("a") == ["m1"] and b.next_due_ms() == 100
    b.advance(1)
    assert b.unacked_ids("a") == [] and b.pending_ids("q") == ["m1", "m2"]  # the redelivery queue first
    assert b.receive("b") == "m1" and b.delivery_count("q", "m1") == 2
    b.advance(60)
    assert b.in_progress("b", "m1") == "ok"  # +WPI: the wait starts again
    b.advance(60)
    assert b.unacked_ids("b") == ["m1"]
    assert b.in_progress("a", "m1") == "ok"  # by sequence: a still has a reply subject for m1
    b.advance(99)
    assert b.unacked_ids("b") == ["m1"]
    b.advance(1)
    assert b.unacked_ids("b") == [] and b.in_progress("a", "m1") == "ok"  # waiting: nothing to restart
    assert b.ack("a", "m1") == "ok" and b.pending_ids("q") == ["m2"]  # acked while waiting
    assert b.in_progress("a", "m2") == "failed"  # never given to a
    assert b.receive("a") == "m2"
    b.close("a")
    b.advance(500)  # a closed consumer's wait is over: m2 returned at the close, nothing fires twice
    assert b.pending_ids("q") == ["m2"] and b.next_due_ms() is None


@pytest.mark.rules("REDELIVERY-27")
def test_ack_wait_declarations() -> None:
    b = _jetstream(ack_wait=None)
    with pytest.raises(ModelMisuse, match="positive"):
        b.open_consumer(ConsumerConfig("c", "q", ack_wait_ms=0, **PULL))  # type: ignore[arg-type]
    with pytest.raises(Unsupported, match="pushing"):
        b.open_consumer(ConsumerConfig("d", "q", ack_wait_ms=10, window_bytes=-1, max_unacked=1))
    with pytest.raises(Unsupported):
        rabbit().open_consumer(ConsumerConfig("c", "q", ack_wait_ms=10, **PULL))  # type: ignore[arg-type]
    assert b.receive("a") == "m1"
    b.advance(10_000)  # no ack wait: held for ever
    assert b.unacked_ids("a") == ["m1"] and b.in_progress("a", "m1") == "ok"


@pytest.mark.rules("REDELIVERY-28", "DELIVERY-22")
def test_nack_with_a_delay() -> None:
    b = _jetstream(ack_wait=None)
    assert b.receive("a") == "m1" and b.nack("a", "m1", delay_ms=50) == "ok"
    assert b.counters("q").delivering_count == 1 and b.counters("q").message_count == 2
    assert b.receive("b") == "m2" and b.receive("b") is None
    b.advance(49)
    assert b.receive("b") is None
    b.advance(1)
    assert b.receive("b") == "m1" and b.delivery_count("q", "m1") == 2
    # by sequence while it waits out a delay: -NAK returns it now, +ACK and +TERM remove it
    assert b.nack("b", "m1", delay_ms=50) == "ok" and b.nack("a", "m1", delay_ms=30) == "ok"
    b.advance(30)
    assert b.pending_ids("q") == ["m1"]
    assert b.nack("a", "m1", delay_ms=20) == "ok" and b.pending_ids("q") == []  # off the queue again
    assert b.nack("a", "m1") == "ok" and b.pending_ids("q") == ["m1"]
    assert b.receive("a") == "m1" and b.nack("a", "m1", delay_ms=10) == "ok"
    assert b.ack("b", "m1") == "ok" and b.counters("q").message_count == 1
    assert b.nack("b", "m2", delay_ms=10) == "ok" and b.nack("a", "m2", requeue=False) == "failed"
    b.advance(20)
    assert b.receive("a") == "m2" and b.nack("a", "m2", delay_ms=10) == "ok"
    assert b.nack("b", "m2", requeue=False) == "ok" and b.counters("q").killed == 1
    assert b.next_due_ms() is None
    with pytest.raises(ModelMisuse):
        b.nack("a", "m2", requeue=False, delay_ms=5)
    with pytest.raises(Unsupported):
        rabbit().nack("c", "m1", delay_ms=5)


@pytest.mark.rules("REDELIVERY-28")
def test_stale_delayed_nack_of_a_held_message_applies_to_the_holder() -> None:
    b = _jetstream(ack_wait=None)
    assert b.receive("a") == "m1" and b.nack("a", "m1") == "ok" and b.receive("b") == "m1"
    assert b.nack("a", "m1", delay_ms=40) == "ok" and b.unacked_ids("b") == []
    b.advance(40)
    assert b.pending_ids("q") == ["m1", "m2"]


@pytest.mark.rules("REDELIVERY-27", "REDELIVERY-28")
def test_driver_gates_ack_wait_in_progress_and_nack_delay() -> None:
    """An adapter without ack_wait / nack_delay is asked none of them (and needs no new method); the
    model offers them under jetstream."""
    rabbit_model = ReferenceAdapter("rabbitmq-classic")
    steps = [("consumer", {"name": "c", "queue": "q", "window_bytes": 0, "ack_wait_ms": 100}, "ack_wait"),
             ("in_progress", {"consumer": "c", "id": "m1"}, "ack_wait"),
             ("nack", {"consumer": "c", "id": "m1", "delay_ms": 5}, "nack_delay")]
    for op, args, capability in steps:
        refused = call_operation(rabbit_model, op, args)
        assert refused.error == f"unsupported: {capability}", (op, refused)
    model = ReferenceAdapter("jetstream")
    call_operation(model, "queue", {"name": "q"})
    call_operation(model, "send", {"to": "q", "id": "m1"})
    answers = [call_operation(model, op, args).value for op, args, _ in steps]
    assert answers == [None, "failed", "failed"]  # nothing received yet: no reply subject
    assert call_operation(model, "receive", "c").value == "m1"
    assert call_operation(model, "in_progress", {"consumer": "c", "id": "m1"}).value == "ok"
    assert call_operation(model, "nack", steps[2][1]).value == "ok"
    assert call_operation(model, "advance", 5).is_ok and model.world.broker.pending_ids("q") == ["m1"]


@pytest.mark.rules("RING-29")
@pytest.mark.parametrize("name", ["rabbitmq-classic", "rabbitmq-quorum", "jetstream"])
def test_purge_removes_ready_or_stored_messages(name: str) -> None:
    b = Broker(profile(name))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
    for m in ("m1", "m2", "m3", "m4"):
        b.send("q", Message(m))
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    if name == "jetstream":
        assert b.nack("c", "m2", delay_ms=10) == "ok"  # waiting out a NAK delay: stored
        assert b.purge("q") == 4 and b.counters("q").message_count == 0
        assert b.ack("c", "m1") == "ok" and b.next_due_ms() is None
        assert b.counters("q").killed == 4
    else:
        assert b.purge("q") == 2 and b.unacked_ids("c") == ["m1", "m2"]
        assert b.nack("c", "m2") == "ok" and b.pending_ids("q") == ["m2"]
    with pytest.raises(Unsupported):
        Broker(profile("artemis")).purge("q")


@pytest.mark.rules("DELIVERY-23")
@pytest.mark.parametrize(("name", "after_close"), [("artemis", False), ("rabbitmq-classic", True),
                                                   ("rabbitmq-quorum", True), ("jetstream", True)])
def test_redelivered_flag(name: str, after_close: bool) -> None:
    b = Broker(profile(name))
    b.declare_queue(QueueConfig("q"))
    b.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
    b.send("q", Message("m1"))
    assert b.receive("c") == "m1" and b.message_info("q", "m1") == {"redelivered": False,
                                                                    "dead_letter_reason": None}
    b.close("c")
    b.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
    assert b.receive("c") == "m1" and b.message_info("q", "m1")["redelivered"] is after_close  # type: ignore[index]
    assert b.nack("c", "m1") == "ok" and b.message_info("q", "m1") is None  # nobody holds it
    assert b.receive("c") == "m1" and b.message_info("q", "m1")["redelivered"] is True  # type: ignore[index]


@pytest.mark.rules("DELIVERY-23", "REDELIVERY-24")
def test_dead_letter_reason_is_the_first_one() -> None:
    b = rabbit("rabbitmq-quorum", max_delivery_attempts=0)
    b.declare_address(AddressConfig("dlx2"))
    b.declare_queue(QueueConfig("dlq2", address="dlx2"))
    b.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
    b.open_consumer(ConsumerConfig("d", "dlq", **PULL))  # type: ignore[arg-type]
    b.send("q", Message("m1"))
    b.send("q", Message("m2"))
    assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok"  # limit 0: dead-lettered at once
    assert b.receive("c") == "m2" and b.nack("c", "m2", requeue=False) == "ok"
    assert b.receive("d") == "m1" and b.message_info("dlq", "m1") == {"redelivered": False,
                                                                      "dead_letter_reason": "delivery_limit"}
    assert b.receive("d") == "m2" and b.message_info("dlq", "m2")["dead_letter_reason"] == "rejected"  # type: ignore[index]


def _limited(limit: int | None, **consumer: object) -> Broker:
    """A jetstream queue with max_deliver `limit` (None: the default), m1 and m2, pull consumer c."""
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q", max_delivery_attempts=limit))
    for m in ("m1", "m2"):
        b.send("q", Message(m))
    b.open_consumer(ConsumerConfig("c", "q", **PULL, **consumer))  # type: ignore[arg-type]
    return b


@pytest.mark.rules("REDELIVERY-21")
def test_max_deliver_keeps_a_nacked_message_until_the_next_fetch_passes_it() -> None:
    b = _limited(2)
    for n in (1, 2):
        assert b.receive("c") == "m1" and b.delivery_count("q", "m1") == n
        assert b.nack("c", "m1") == "ok"
    state = b.consumer_state("q")  # still in the redelivery queue: pending acknowledgement
    assert state["num_ack_pending"] == 1 and state["num_redelivered"] == 1
    assert b.receive("c") == "m2"  # the fetch passes m1 over
    assert b.counters("q").message_count == 2 and b.delivery_count("q", "m1") == 2
    state = b.consumer_state("q")
    assert state["num_ack_pending"] == 1 and state["num_redelivered"] == 1  # m2; m1 stays in o.rdc
    assert state["ack_floor_consumer_seq"] == 0  # m1 is in no o.pending: the floor stays
    assert b.ack("c", "m2") == "ok"
    assert b.consumer_state("q")["ack_floor_stream_seq"] == 2  # nothing pending: the delivered pair
    assert b.nack("c", "m1") == "ok" and b.counters("q").message_count == 1  # -NAK: nothing
    assert b.receive("c") is None
    assert b.ack("c", "m1") == "ok" and b.counters("q").message_count == 0  # +ACK removes it
    assert b.consumer_state("q")["num_redelivered"] == 0


@pytest.mark.rules("REDELIVERY-21", "REDELIVERY-27")
def test_max_deliver_keeps_a_message_whose_ack_wait_runs_out_at_once() -> None:
    b = _limited(1, ack_wait_ms=100)
    assert b.receive("c") == "m1"
    b.advance(100)
    state = b.consumer_state("q")
    assert state["num_ack_pending"] == 0 and state["num_redelivered"] == 0  # MaxDeliver 1: not reported
    assert b.counters("q").message_count == 2 and b.counters("q").delivering_count == 1
    assert b.receive("c") == "m2" and b.nack("c", "m2", requeue=False) == "ok"
    assert b.purge("q") == 1 and b.counters("q").message_count == 0  # the purge takes the kept one


@pytest.mark.rules("REDELIVERY-21", "RING-5")
def test_a_kept_message_is_stored_for_the_ring_bound_and_evicted_first() -> None:
    b = Broker(profile("jetstream"))
    b.declare_queue(QueueConfig("q", max_delivery_attempts=1, ring_size=2, overflow="discard-old"))
    b.open_consumer(ConsumerConfig("c", "q", **PULL))  # type: ignore[arg-type]
    for m in ("m1", "m2"):
        b.send("q", Message(m))
    assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok" and b.receive("c") == "m2"
    b.send("q", Message("m3"))  # three stored: the oldest, m1 (kept past max_deliver), goes
    assert b.delivery_count("q", "m1") is None and b.counters("q").message_count == 2


@pytest.mark.rules("REDELIVERY-26")
def test_jetstream_default_has_no_delivery_limit() -> None:
    b = _limited(None)
    for n in range(1, 13):
        assert b.receive("c") == "m1" and b.delivery_count("q", "m1") == n
        assert b.nack("c", "m1") == "ok"


@pytest.mark.rules("REDELIVERY-32", "REDELIVERY-33")
def test_backoff_waits_by_delivery_and_in_progress_restarts_that_wait() -> None:
    b = _limited(4, backoff_ms=[100, 300])
    assert b.receive("c") == "m1"
    b.advance(100)
    assert b.receive("c") == "m1"  # BackOff[0]
    b.advance(200)
    assert b.in_progress("c", "m1") == "ok"  # restarts BackOff[1] = 300
    b.advance(299)
    assert b.unacked_ids("c") == ["m1"]
    b.advance(1)
    assert b.receive("c") == "m1" and b.delivery_count("q", "m1") == 3
    b.advance(299)
    assert b.unacked_ids("c") == ["m1"]  # the last wait repeats
    b.advance(1)
    assert b.unacked_ids("c") == []


@pytest.mark.rules("REDELIVERY-34")
def test_backoff_offsets_a_delayed_nak() -> None:
    b = _limited(3, backoff_ms=[100, 300])
    assert b.receive("c") == "m1" and b.nack("c", "m1", delay_ms=50) == "ok"
    assert b.next_due_ms() == 50  # first delivery: delay + BackOff[0] - BackOff[0]
    b.advance(50)
    assert b.receive("c") == "m1" and b.nack("c", "m1", delay_ms=50) == "ok"
    assert b.next_due_ms() == 50 + 50 + 300 - 100


@pytest.mark.rules("REDELIVERY-27", "REDELIVERY-32")
def test_timers_started_apart_that_come_due_together_are_a_tie_on_the_logical_clock_only() -> None:
    b = _limited(4, backoff_ms=[300, 500, 300])
    assert b.receive("c") == "m1" and b.nack("c", "m1") == "ok" and b.receive("c") == "m1"  # due 500
    b.advance(200)
    assert b.receive("c") == "m2"  # BackOff[0] from 200: due 500 as well
    b.advance(299)
    assert b.timer_tie_ms is None
    b.advance(1)
    assert b.timer_tie_ms == 500 and b.unacked_ids("c") == []
    assert b.receive("c") == "m1"  # the model's order: the timer started first


@pytest.mark.rules("REDELIVERY-27")
def test_a_restart_to_the_same_end_is_a_new_start() -> None:
    """+WPI restarts a wait even when it then ends when it would have: the restarts' order decides
    (nats-server trackPending/processAckProgress set the timestamp anew), not the first receives'."""
    b = _limited(4, ack_wait_ms=300)
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    assert b.in_progress("c", "m2") == "ok" and b.in_progress("c", "m1") == "ok"
    b.advance(300)
    assert b.timer_tie_ms is None
    assert b.receive("c") == "m2" and b.receive("c") == "m1"


@pytest.mark.rules("REDELIVERY-27")
def test_timers_started_together_that_come_due_together_are_no_tie() -> None:
    b = _limited(4, ack_wait_ms=300)
    assert b.receive("c") == "m1" and b.receive("c") == "m2"
    b.advance(300)
    assert b.unacked_ids("c") == [] and b.timer_tie_ms is None


@pytest.mark.rules("REDELIVERY-32")
def test_backoff_declarations() -> None:
    with pytest.raises(ModelMisuse, match="delivery limit"):
        _limited(1, backoff_ms=[100, 200])
    with pytest.raises(ModelMisuse, match="positive"):
        _limited(3, backoff_ms=[])
    with pytest.raises(ModelMisuse, match="backoff_ms"):
        _limited(3, backoff_ms=[100], ack_wait_ms=50)
    assert _limited(2, backoff_ms=[100, 200], ack_wait_ms=100).receive("c") == "m1"
    with pytest.raises(Unsupported):
        rabbit().open_consumer(ConsumerConfig("c", "q", backoff_ms=(10,), **PULL))  # type: ignore[arg-type]
