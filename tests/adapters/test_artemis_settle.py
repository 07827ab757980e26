"""The artemis adapter's settle (adapters/artemis/adapter.py `_Queue.at_rest`): when the broker's
DeliveringCount is at rest, without a broker."""

from __future__ import annotations

from mqconform.adapters.artemis.records import _Queue


def _queue() -> _Queue:
    return _Queue("q", "mqc-q", "q", "mqc-q")


def test_at_rest_when_the_count_equals_what_the_links_hold() -> None:
    queue = _queue()
    assert queue.at_rest(2, 2)
    assert not queue.at_rest(3, 2)  # a disposition not applied yet


def test_a_count_left_off_by_a_settle_that_ran_out_is_taken_as_at_rest_until_it_comes_right() -> None:
    queue = _queue()
    queue.at_rest(-1, 0, timed_out=True)  # a settle ran out: the count stays one below (a bug)
    assert queue.at_rest(-1, 0) and queue.at_rest(0, 1)  # later settles do not wait out their bound
    assert not queue.at_rest(1, 1 - 2)  # another difference is still in flight
    assert queue.at_rest(2, 2)  # the count came right again ...
    assert not queue.at_rest(1, 2)  # ... so the old difference is in flight again, not at rest


def test_after_a_disposition_only_the_stuck_difference_is_applied() -> None:
    queue = _queue()
    assert queue.applied(1, 1) and not queue.applied(2, 1)  # nothing stuck: as at_rest
    queue.at_rest(-1, 0, timed_out=True)  # the count stays one below (finding 2)
    assert not queue.applied(0, 0)  # the ack or nack is still in flight: not "come right again"
    assert queue.stuck == -1
    assert queue.applied(-1, 0)  # applied


def test_a_kill_at_the_limit_one_below_is_learnt_without_a_timeout() -> None:
    queue = _queue()
    assert not queue.applied(-1, 0)  # one below, no kill counted: not yet taken as at rest
    assert queue.stuck == 0
    assert queue.applied(-1, 0, killed=True)  # MessagesKilled rose: finding 2's second decrement
    assert queue.stuck == -1 and queue.at_rest(-1, 0)
    assert not queue.applied(-3, 0, killed=True)  # two below is not one drop: still in flight
    assert queue.applied(-5, 0, timed_out=True) and queue.stuck == -5  # a wait that ran out records


def test_a_send_settles_once_its_message_left_the_intermediate_list() -> None:
    """The settle after an accepted send waits until MessagesAdded counts the message (it rises when
    QueueImpl#doInternalPoll moves it out of the intermediate list, in the delivery pass that
    flushExecutor may return before; until then neither the counts nor listMessages show it)."""
    from typing import Any

    from mqconform.adapters.artemis import ArtemisAdapter
    from mqconform.adapters.artemis.records import _Address

    adapter = ArtemisAdapter(settle_timeout=5.0)
    adapter.queues = {"q": _queue()}
    adapter.addresses_ = {"q": _Address("q", "mqc-q", queues=["q"])}
    reads: list[int] = []
    answers = iter([0, 0, 1, 1])

    def state(_queue: Any) -> dict[str, Any]:
        reads.append(1)
        return {"MessageCount": 1, "DeliveringCount": 0, "ScheduledCount": 0,
                "MessagesAdded": next(answers)}

    adapter._queue_state = state  # type: ignore[method-assign]
    adapter._pump = lambda seconds: None  # type: ignore[method-assign]
    adapter._settle_queue("q", added=1)
    assert len(reads) == 3  # two looks before the pass moved it
    reads.clear()
    adapter._settle_queue("q")  # no send to wait for: the first look at rest ends it
    assert len(reads) == 1


def test_a_page_address_settles_on_two_unmoved_looks_with_paged_messages_pending() -> None:
    """A queue of a PAGE address counts paged messages as pending (QueueImpl#getMessageCount adds the
    page subscription's), which its read budget or a full address may keep from a consumer with
    credit: two looks after flushExecutor with nothing moved between them end the settle, where it
    waited out its bound before. A queue of an address without PAGE still waits for the pending ones."""
    import time
    from typing import Any

    from mqconform.adapters.artemis import ArtemisAdapter
    from mqconform.adapters.artemis.records import _Address
    from mqconform.reference_model.config import AddressConfig

    class _Link:
        credit = 1

    class _Consumer:
        queue, pull, link = "q", False, type("L", (), {"link": _Link()})()
        handler = type("H", (), {"arrived": [], "seen": set()})()

        def holding(self) -> int:
            return 0

    def settle(policy: str) -> tuple[int, float]:
        adapter = ArtemisAdapter(settle_timeout=0.5)
        adapter.queues = {"q": _queue()}
        adapter.addresses_ = {"q": _Address("q", "mqc-q", config=AddressConfig(name="q", full_policy=policy),
                                            queues=["q"])}
        adapter.consumers = {"c": _Consumer()}  # type: ignore[dict-item]
        reads: list[int] = []

        def state(_queue: Any) -> dict[str, Any]:
            reads.append(1)
            return {"MessageCount": 3, "DeliveringCount": 0, "ScheduledCount": 0, "MessagesAdded": 3,
                    "MessagesAcknowledged": 0, "MessagesKilled": 0, "MessagesExpired": 0}

        adapter._queue_state = state  # type: ignore[method-assign]
        adapter._pump = lambda seconds: None  # type: ignore[method-assign]
        started = time.monotonic()
        adapter._settle_queue("q")
        return len(reads), time.monotonic() - started

    looks, took = settle("PAGE")
    assert looks == 2 and took < 0.25
    looks, took = settle("DROP")
    assert looks > 2 and took >= 0.5  # pending with credit: waits out the bound


def test_an_exclusive_queue_counts_only_its_exclusive_consumers_credit() -> None:
    """DELIVERY-26: messages pending while the waiting consumers of an exclusive queue keep their credit
    is at rest once a delivery showed which consumer the broker made exclusive (only its credit
    counts); before that, and after it closed, every link's credit counts (the broker will dispatch)."""
    from types import SimpleNamespace
    from typing import Any

    from mqconform.adapters.artemis.settling import ArtemisSettling

    def consumer(name: str, credit: int, arrived: int) -> Any:
        return SimpleNamespace(name=name, link=SimpleNamespace(link=SimpleNamespace(credit=credit)),
                               handler=SimpleNamespace(arrived=[object()] * arrived), holding=lambda: 0)

    queue = _Queue("q", "mqc-q", "q", "mqc-q", exclusive=True)
    waiting = [consumer("c1", 2, 0), consumer("c2", 2, 0)]
    assert ArtemisSettling._dispatch_credit(queue, waiting) == 4 and queue.active is None
    served = [consumer("c1", 0, 2), consumer("c2", 2, 0)]
    assert ArtemisSettling._dispatch_credit(queue, served) == 0 and queue.active == "c1"
    acked = [consumer("c1", 2, 0), consumer("c2", 2, 0)]
    assert ArtemisSettling._dispatch_credit(queue, acked) == 2  # c1 stays the exclusive one
    assert ArtemisSettling._dispatch_credit(queue, acked[1:]) == 2  # c1 closed: every link's
    shared = _Queue("s", "mqc-s", "s", "mqc-s")
    assert ArtemisSettling._dispatch_credit(shared, served) == 2 and shared.active is None
