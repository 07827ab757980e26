"""The artemis adapter's pull (adapters/artemis/adapter.py `_pull`): a drain the broker answers empty
on a non-destructive queue is asked again, and a drain it leaves unanswered is sent again
(docs/findings/artemis-amqp-drain-during-drain-dropped.md). DELIVERY-12, LASTVALUE-1.

The first tests drive `_pull` against a scripted link, without a broker: one whose first drain is
answered empty with a message deliverable (the previous drain's answer took its credit), one whose
first drain is dropped (each failed before the fix). The last one pulls a non-destructive last-value
queue empty on a real broker, back to back; the race it can meet depends on the machine's load (before
the fix about one pull in 1500 got nothing on a loaded machine; with the flush before each drain left
out, 0 to 76 of 300)."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.artemis import adapter as artemis_adapter
from mqconform.adapters.artemis.records import _Consumer, _Queue
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig


class _ScriptedLink:
    """A receiver link whose broker answers the n-th drain as `answers[n]` says: ``"empty"`` (the
    credit is taken back), ``"message"`` (the next message arrives) or ``"dropped"`` (nothing)."""

    def __init__(self, answers: list[str], arrived: collections.deque[Any]) -> None:
        self.answers = answers
        self.arrived = arrived
        self.credit = 0
        self.drains = 0
        self.link = self
        self._due: str | None = None

    def flow(self, credit: int) -> None:
        self.credit += credit

    def drain(self, credit: int) -> None:
        self.credit += credit
        self._due = self.answers[self.drains] if self.drains < len(self.answers) else "dropped"
        self.drains += 1

    def pump(self) -> None:
        """The broker's answer to the last drain, if it gives one."""
        if self._due == "empty":
            self.credit = 0
        elif self._due == "message":
            self.credit -= 1
            self.arrived.append((None, f"m{self.drains}", 0))
        self._due = None


class _Management:
    def __init__(self) -> None:
        self.flushes = 0

    @staticmethod
    def flush_request(mbean: str) -> dict[str, Any]:
        return {"type": "exec", "mbean": mbean, "operation": "flushExecutor()"}

    def bulk(self, requests: list[dict[str, Any]]) -> list[Any]:
        self.flushes += sum(r.get("operation") == "flushExecutor()" for r in requests)
        return [None for _ in requests]


def _scripted(answers: list[str], timeout: float = 5.0) -> tuple[ArtemisAdapter, _Consumer, _ScriptedLink,
                                                                  _Management]:
    adapter = ArtemisAdapter(timeout=timeout)
    arrived: collections.deque[Any] = collections.deque()
    link = _ScriptedLink(answers, arrived)
    handler = type("Handler", (), {"arrived": arrived})()
    state = _Consumer("c", "q", link, handler, True, 0, "pull")
    queue = _Queue("q", "mqc-q", "q", "mqc-q", non_destructive=True, last_value_key="lvk")
    management = _Management()
    adapter.queues = {"q": queue}
    counts = {"MessageCount": 1, "DeliveringCount": 0, "ScheduledCount": 0}
    adapter._queue_state = lambda _queue: counts  # type: ignore[method-assign]
    adapter._queue_mbean = lambda _queue: "queue-mbean"  # type: ignore[method-assign]
    adapter._mgmt = lambda: management  # type: ignore[method-assign]

    def pump_until(done: Callable[[], bool], seconds: float) -> None:
        link.pump()

    adapter._pump_until = pump_until  # type: ignore[method-assign]
    return adapter, state, link, management


def test_an_empty_answer_on_a_non_destructive_queue_is_asked_again_after_a_flush() -> None:
    adapter, state, link, management = _scripted(["empty", "message"])
    adapter._pull(state)
    assert [msg_id for _, msg_id, _ in state.handler.arrived] == ["m2"]
    assert link.drains == 2 and management.flushes == 1


def test_the_last_empty_answer_stands() -> None:
    tries = 1 + artemis_adapter.EMPTY_DRAIN_RETRIES
    adapter, state, link, management = _scripted(["empty"] * tries + ["message"])
    adapter._pull(state)
    assert not state.handler.arrived  # nothing: the pull answers None
    assert link.drains == tries and link.credit == 0 and management.flushes == tries - 1


def test_an_empty_answer_twice_in_a_row_is_asked_again() -> None:
    """A 2-core CI run under the whole suite once saw the race twice in a row (m263 of 300 missed)."""
    adapter, state, link, _ = _scripted(["empty", "empty", "message"])
    adapter._pull(state)
    assert len(state.handler.arrived) == 1  # the message the third drain brings
    assert link.drains == 3


def test_a_dropped_drain_is_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artemis_adapter, "DRAIN_PATIENCE_S", 0.0)
    adapter, state, link, _ = _scripted(["dropped", "message"])
    adapter._pull(state)
    assert [msg_id for _, msg_id, _ in state.handler.arrived] == ["m2"]
    assert link.drains == 2


@pytest.fixture(scope="module")
def artemis() -> Iterator[ArtemisAdapter]:
    adapter = ArtemisAdapter()
    yield adapter
    adapter.shutdown()


@pytest.mark.broker("artemis")
@pytest.mark.rules("DELIVERY-12", "LASTVALUE-1")
def test_back_to_back_drains_give_every_message(artemis: ArtemisAdapter, namespace: str) -> None:
    count = 300
    artemis.open(namespace)
    try:
        assert artemis.declare_queue(QueueConfig(name="q", non_destructive=True, last_value_key="lvk")).is_ok
        assert artemis.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=0)).is_ok
        for i in range(count):
            assert artemis.send("q", Message(id=f"m{i}")).value == "accepted"
        got = [artemis.receive("c").value for _ in range(count + 1)]
    finally:
        artemis.close()
    assert got == [f"m{i}" for i in range(count)] + [None]
