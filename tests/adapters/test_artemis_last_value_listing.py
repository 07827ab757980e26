"""The artemis adapter reads a last-value queue's listing again while it shows an older message of a
value without the later send that superseded it (adapters/artemis/records.py `_Queue.superseded_shown`).
LASTVALUE-1.

A loaded 2.40.0 ci run listed a non-destructive last-value queue as [m1] right after m2 (same value)
was sent: the listing was read between LastValueQueue#addTail and the delivery pass that moves m2 out
of the intermediate list and prunes m1 (QueueImpl#deliver), which flushExecutor may return before. 5 of
5 replays passed, so these tests script the management answers instead of a broker."""

from __future__ import annotations

from typing import Any

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.artemis.records import ID_PROPERTY, QUEUE_COUNTS, _Queue


def _lvq() -> _Queue:
    return _Queue("q", "mqc-q", "q", "mqc-q", non_destructive=True, last_value_key="lvk")


def _listed(*ids: str) -> list[dict[str, Any]]:
    return [{ID_PROPERTY: msg_id, "lvk": "v1"} for msg_id in ids]


def test_an_older_message_without_its_successor_is_superseded_shown() -> None:
    queue = _lvq()
    queue.took("m1", {"lvk": "v1"}, at_once=True)
    queue.took("m2", {"lvk": "v1"}, at_once=True)
    assert queue.superseded_shown(_listed("m1"), received=set())
    assert not queue.superseded_shown(_listed("m2"), received=set())
    assert queue.superseded_shown(_listed("m1", "m2"), received=set())  # the prune still to come


def test_a_successor_received_scheduled_or_deleted_does_not_count() -> None:
    queue = _lvq()
    queue.took("m1", {"lvk": "v1"}, at_once=True)
    queue.took("m2", {"lvk": "v1"}, at_once=True)
    assert not queue.superseded_shown(_listed("m1"), received={"m2"})  # delivered away, m1 returned
    queue.forget("m2")
    assert not queue.superseded_shown(_listed("m1"), received=set())
    queue.took("m3", {"lvk": "v1"}, at_once=False)  # scheduled: it supersedes m1 only when it fires
    assert not queue.superseded_shown(_listed("m1"), received=set())
    # the fired m3 listed while m1, the latest taken at once, is gone: m3 is the newer one
    queue.took("m4", {"lvk": "v2"}, at_once=True)
    assert not queue.superseded_shown(_listed("m3"), received=set())


def test_a_fired_message_is_its_values_latest() -> None:
    """LastValueQueue#addHead(ref, scheduling=true) makes a fired message its value's current one and
    the delivery pass prunes a later send of that value: the listing [m1] after m1 fired over m2 shows
    nothing superseded. Before ArtemisSettling._fire said so, every listing waited out its 1 s bound
    from then on, and a consumer's credit reached the broker only after it: the open 2.40.0 story
    (tests/adapters/scenarios/artemis-last-value-fired-is-current.yaml, cut from it) got nothing."""
    queue = _lvq()
    queue.took("m1", {"lvk": "v1"}, at_once=False)  # scheduled
    queue.took("m2", {"lvk": "v1"}, at_once=True)  # taken at once: v1's latest
    assert queue.superseded_shown(_listed("m1"), received=set())
    queue.fired({ID_PROPERTY: "m1", "lvk": "v1"})
    assert not queue.superseded_shown(_listed("m1"), received=set())
    queue.fired({ID_PROPERTY: "m9"})  # keyless: nothing changes
    assert queue.latest == {"v1": "m1"}


def test_keyless_messages_and_other_queues_are_never_superseded() -> None:
    queue = _lvq()
    queue.took("m1", {}, at_once=True)
    queue.took("m2", {}, at_once=True)
    assert not queue.superseded_shown([{ID_PROPERTY: "m1"}], received=set())
    plain = _Queue("p", "mqc-p", "p", "mqc-p")
    assert not plain.superseded_shown(_listed("m1"), received=set())


class _Management:
    """Answers the pending-ids request (Paging is not read: the address has no limits), then the
    listing loop's bulk requests: first a listing caught before the prune, then the settled one."""

    def __init__(self, listings: list[list[dict[str, Any]]]) -> None:
        self.listings = listings
        self.reads = 0

    @staticmethod
    def flush_request(mbean: str) -> dict[str, Any]:
        return {"type": "exec", "mbean": mbean, "operation": "flushExecutor()"}

    def bulk(self, requests: list[dict[str, Any]]) -> list[Any]:
        listing = self.listings[min(self.reads, len(self.listings) - 1)]
        self.reads += 1
        counts = {"MessageCount": 1, "DeliveringCount": 0, "ScheduledCount": 0, "MessagesAdded": 2,
                  "MessagesAcknowledged": 0, "MessagesKilled": 0, "MessagesExpired": 0}
        answers: list[Any] = [None, listing]
        answers += [counts.get(name, 0) for name in QUEUE_COUNTS][:len(requests) - 2]
        return answers[:len(requests)]


def _adapter(listings: list[list[dict[str, Any]]]) -> tuple[ArtemisAdapter, _Management]:
    adapter = ArtemisAdapter(timeout=5.0, settle_timeout=1.0)
    queue = _lvq()
    queue.took("m1", {"lvk": "v1"}, at_once=True)
    queue.took("m2", {"lvk": "v1"}, at_once=True)
    adapter.queues = {"q": queue}
    adapter.addresses_ = {"q": type("Address", (), {"config": None, "physical": "mqc-q"})()}
    management = _Management(listings)
    adapter._mgmt = lambda: management  # type: ignore[method-assign]
    adapter._queue_mbean = lambda _queue: "queue-mbean"  # type: ignore[method-assign]
    adapter._paging_now = lambda _queue: False  # type: ignore[method-assign]
    return adapter, management


def test_pending_ids_reads_again_until_the_successor_is_listed() -> None:
    adapter, management = _adapter([_listed("m1"), _listed("m1"), _listed("m2")])
    assert adapter.pending_ids("q").value == ["m2"]
    assert management.reads == 3


def test_a_listing_that_stays_superseded_is_given_after_the_bound() -> None:
    adapter, management = _adapter([_listed("m1")])
    assert adapter.pending_ids("q").value == ["m1"]  # the broker's answer, a finding if it holds
    assert management.reads > 2
