"""The `kafka` adapter against a real Apache Kafka (4.4.0 by default, share groups, KIP-932), started by
the adapter itself: the broker's jars fetched through Maven into the cache, one KRaft node per module.
No skips: without mvn or java the fixture fails.

Each test drives the broker and the reference model under the `kafka-share` profile with the same
operations and compares every answer and every delivery count the broker shows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.kafka import KafkaShareAdapter
from mqconform.adapters.kafka.adapter import (
    FIRST_POLL_WAIT_S,
    NOTHING_WAIT_S,
    RECEIVE_WAIT_S,
    _Consumer,
    _Member,
    _Queue,
)
from mqconform.adapters.kafka.server import fetch
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from tests.adapters.conftest import assert_unreachable

pytestmark = pytest.mark.broker("kafka")


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaShareAdapter]:
    adapter = KafkaShareAdapter()
    yield adapter
    adapter.shutdown()


class Both:
    """One adapter and the reference model side by side: every call goes to both and must agree."""

    def __init__(self, adapter: KafkaShareAdapter, namespace: str) -> None:
        self.adapter = adapter
        self.model = ReferenceAdapter("kafka-share")
        adapter.open(namespace)
        self.model.open(namespace)

    def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        expected: Result = getattr(self.model, method)(*args, **kwargs)
        actual: Result = getattr(self.adapter, method)(*args, **kwargs)
        assert expected.is_ok, expected
        assert actual.is_ok, actual
        assert actual.value == expected.value, \
            f"{method}{args}: model {expected.value!r}, kafka {actual.value!r}"
        return actual.value

    def count(self, queue: str, msg_id: str) -> int:
        """The delivery count of a held record, the same on both sides."""
        return int(self("delivery_count", queue, msg_id))


@pytest.fixture
def both(kafka: KafkaShareAdapter, namespace: str) -> Iterator[Both]:
    pair = Both(kafka, namespace)
    yield pair
    kafka.close()


def test_fetch_is_cached_and_an_unserved_release_is_one_line() -> None:
    lib = fetch()
    assert (lib / "kafka_2.13-4.4.0.jar").is_file() and fetch() == lib
    assert any(lib.glob("log4j-slf4j-impl-*.jar"))  # the broker can say why it stopped
    with pytest.raises(Exception, match="not served"):
        fetch("3.9.0")


def test_unreachable_broker_is_one_line() -> None:
    assert_unreachable(KafkaShareAdapter(url="127.0.0.1:9", timeout=2.0), "kafka: cannot use", max_seconds=15)


@pytest.mark.rules("REDELIVERY-38", "REDELIVERY-39", "DELIVERY-8")
def test_release_and_close_keep_the_count_and_the_offset_order(both: Both) -> None:
    both("declare_queue", QueueConfig("q", max_delivery_attempts=5))
    both("open_consumer", ConsumerConfig("c", "q", window_bytes=0))
    both("open_consumer", ConsumerConfig("d", "q", window_bytes=0))
    for i in (1, 2, 3):
        assert both("send", "q", Message(f"m{i}")) == "accepted"
    assert both("receive", "c") == "m1" and both("receive", "c") == "m2"
    assert both.count("q", "m1") == 1
    assert both("ack", "d", "m1") == "failed"  # held by another consumer: refused, nothing changes
    assert both("nack", "c", "m2") == "ok"  # RELEASE: available again before m3, its count kept
    assert both("receive", "d") == "m2" and both.count("q", "m2") == 2
    both("close_consumer", "c")  # the member leaves: m1 available again, its count not undone
    assert both("receive", "d") == "m1" and both.count("q", "m1") == 2
    assert both("ack", "d", "m1") == "ok" and both("ack", "d", "m1") == "failed"
    assert both("receive", "d") == "m3"


@pytest.mark.rules("REDELIVERY-40", "REDELIVERY-24")
def test_the_delivery_count_limit_and_reject_archive(both: Both) -> None:
    both("declare_queue", QueueConfig("q", max_delivery_attempts=2))
    both("open_consumer", ConsumerConfig("c", "q", window_bytes=0))
    for i in (1, 2, 3):
        both("send", "q", Message(f"m{i}"))
    assert both("receive", "c") == "m1" and both("nack", "c", "m1") == "ok"
    assert both("receive", "c") == "m1" and both.count("q", "m1") == 2
    assert both("nack", "c", "m1") == "ok"  # released at the limit: archived
    assert both("receive", "c") == "m2"
    assert both("nack", "c", "m2", requeue=False) == "ok"  # REJECT: archived at once
    assert both("receive", "c") == "m3"


@pytest.mark.rules("REDELIVERY-41", "REDELIVERY-38")
def test_an_acquisition_lock_runs_out_on_the_broker_clock(both: Both) -> None:
    both("declare_queue", QueueConfig("q", max_delivery_attempts=5))
    both("open_consumer", ConsumerConfig("c", "q", window_bytes=0, ack_wait_ms=1000))
    both("open_consumer", ConsumerConfig("d", "q", window_bytes=0, ack_wait_ms=1000))
    both("send", "q", Message("m1"))
    both("send", "q", Message("m2"))
    assert both("receive", "c") == "m1"
    # the adapter sleeps until 8 s after open(): the lock of m1, taken up to ~5 s after open (the
    # first poll of a new group waits for the group's initialization), has run out on the broker
    both("advance", 8000)
    assert both("receive", "d") == "m1" and both.count("q", "m1") == 2
    assert both("ack", "d", "m1") == "ok"
    assert both("receive", "d") == "m2"


class _Record:
    """A fetched record as confluent-kafka hands it out (value, offset, no error)."""

    def __init__(self, value: str, offset: int) -> None:
        self._value, self._offset = value.encode(), offset

    def value(self) -> bytes:
        return self._value

    def offset(self) -> int:
        return self._offset

    def error(self) -> None:
        return None


class _ScriptedShareConsumer:
    """A share consumer whose successive polls return the scripted record lists (then nothing)."""

    def __init__(self, *polls: list[_Record]) -> None:
        self.polls = list(polls)

    def poll(self, timeout: float) -> list[_Record]:
        return self.polls.pop(0) if self.polls else []


def test_a_record_an_idle_member_fetched_in_the_background_is_received() -> None:
    """A subscribed share consumer fetches on its own, so the record a receive waits for may be
    acquired by an idle member other than the one the receive polls, while it waits: the receive
    polls every idle member and answers with it, not with None (the record would stay held)."""
    adapter = KafkaShareAdapter(url="127.0.0.1:9")
    queue = _Queue("q", "topic", "group", served=True)
    quiet = _Member(_ScriptedShareConsumer(), polled=True)
    background = _Member(_ScriptedShareConsumer([], [], [_Record("m1", 3)]), polled=True)
    queue.idle = [background, quiet]
    adapter.queues["q"] = queue
    adapter.consumers["c"] = _Consumer("c", "q")
    assert adapter.receive("c").value == "m1"
    assert queue.busy == [background] and queue.idle == [quiet]


def test_a_receive_waits_for_a_lower_offset_still_on_its_way() -> None:
    """Idle members fetch concurrently: the higher of two records sent may reach its member first.
    While a lower offset is available and held by nobody, the receive keeps polling, and answers
    with the lowest (DELIVERY-4), not with the one that came first."""
    adapter = KafkaShareAdapter(url="127.0.0.1:9")
    queue = _Queue("q", "topic", "group", served=True, sent={4, 5})
    late = _Member(_ScriptedShareConsumer([], [], [_Record("m4", 4)]), polled=True)
    early = _Member(_ScriptedShareConsumer([_Record("m5", 5)]), polled=True)
    queue.idle = [late, early]
    adapter.queues["q"] = queue
    adapter.consumers["c"] = _Consumer("c", "q")
    assert adapter.receive("c").value == "m4"
    assert adapter.receive("c").value == "m5"


class _LateShareConsumer:
    """A share consumer that acquires nothing until `give` is set, then the given record once."""

    def __init__(self) -> None:
        self.give: _Record | None = None

    def poll(self, timeout: float) -> list[_Record]:
        record, self.give = self.give, None
        return [record] if record is not None else []


def test_an_empty_receive_waits_one_fetch_only_when_nothing_is_left_to_acquire() -> None:
    """A receive with every record sent finished or held (and no lock of the queue's own) expects
    nothing: it polls for one share fetch (NOTHING_WAIT_S), else for RECEIVE_WAIT_S; a record the
    broker gives out after that anyway is not lost: the next receive answers it."""
    adapter = KafkaShareAdapter(url="127.0.0.1:9")
    member = _Member(_LateShareConsumer(), polled=True)
    queue = _Queue("q", "topic", "group", served=True, sent={0, 1}, finished={0, 1}, idle=[member])
    adapter.queues["q"] = queue
    adapter.consumers["c"] = _Consumer("c", "q")
    assert adapter._receive_wait(queue) == adapter.latency.settle_s(NOTHING_WAIT_S)
    queue.finished = {0}  # offset 1 is available: a receive waits for it as long as before
    assert adapter._receive_wait(queue) == adapter.latency.settle_s(RECEIVE_WAIT_S)
    queue.finished, queue.lock_ms = {0, 1}, 1000  # a lock of its own may run out: unknown
    assert adapter._receive_wait(queue) == adapter.latency.settle_s(RECEIVE_WAIT_S)
    queue.lock_ms = None
    assert adapter.receive("c").value is None
    member.client.give = _Record("m1", 1)  # the broker gave out a finished record anyway
    assert adapter.receive("c").value == "m1"
    # a member still joining (subscribed less than a first poll's wait ago) waits that long for a
    # record that is available, and only one share fetch when nothing is
    queue.idle = [_Member(_LateShareConsumer(), polled=True, joined_by=time.monotonic() + 60)]
    assert adapter._receive_wait(queue) == adapter.latency.settle_s(NOTHING_WAIT_S)
    queue.sent.add(2)  # offset 2 sent, neither finished nor held: available
    assert adapter._receive_wait(queue) == adapter.latency.settle_s(FIRST_POLL_WAIT_S)


class _CommittingShareConsumer(_ScriptedShareConsumer):
    """A scripted share consumer whose acknowledgements and commits succeed."""

    def acknowledge(self, record: _Record, kind: Any) -> None:
        return None

    def commit_sync(self, timeout: float) -> dict[str, None]:
        return {}


def test_the_drain_after_an_ack_ends_when_another_idle_member_acquired_what_was_left() -> None:
    """After a commit the member may fetch the lowest available record on its own; when another idle
    member acquired it in the background instead, nothing is left to acquire: the drain ends there
    and the next receive answers that member's record (DELIVERY-4: the lowest offset)."""
    adapter = KafkaShareAdapter(url="127.0.0.1:9")
    acking = _Member(_CommittingShareConsumer(), record=_Record("m1", 1))
    other = _Member(_ScriptedShareConsumer([_Record("m2", 2)]), polled=True)
    queue = _Queue("q", "topic", "group", served=True, sent={1, 2}, idle=[other], busy=[acking])
    adapter.queues["q"] = queue
    adapter.consumers["c"] = _Consumer("c", "q", held={"m1": acking})
    assert adapter.ack("c", "m1").value == "ok"
    assert queue.finished == {1} and queue.stashed == [other] and queue.idle == [acking]
    assert adapter.receive("c").value == "m2"


def test_limits_the_broker_cannot_express_are_unsupported(kafka: KafkaShareAdapter, namespace: str) -> None:
    kafka.open(namespace)
    try:
        assert kafka.declare_queue(QueueConfig("q", max_delivery_attempts=5)).is_ok
        answer = kafka.open_consumer(ConsumerConfig("c", "q", window_bytes=0, ack_wait_ms=300))
        assert answer.type == "fail" and (answer.error or "").startswith("unsupported"), answer
        answer = kafka.declare_queue(QueueConfig("r", max_delivery_attempts=1))
        assert answer.type == "fail" and "delivery limit of 1" in (answer.error or ""), answer
    finally:
        kafka.close()
