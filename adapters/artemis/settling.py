"""The artemis adapter's waits on the broker's own threads: a queue's counts and paging state read
through management, the settle after each operation, and the clock (advance fires scheduled messages
at their logical due time)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..contract import Result
from .client import ArtemisClient
from .records import DUE_PROPERTY, QUEUE_COUNTS, _Address, _Queue, counts_look
from .server import EXPIRY_SCAN_MS


class ArtemisSettling(ArtemisClient):
    """Waits on the broker's own threads, and the clock."""

    if TYPE_CHECKING:  # provided by ArtemisSends
        def _address_memory(self, address: _Address) -> tuple[int | None, bool]: ...
        def _settle_blocked(self, address: _Address) -> None: ...
        def _listed(self, q: _Queue) -> list[str]: ...  # ArtemisObservation
        def _listing_requests(self, q: _Queue) -> list[dict[str, Any]]: ...  # ArtemisObservation

    def _queue_mbean(self, queue: _Queue) -> str:
        return self._mgmt().queue_mbean(queue.physical_address, queue.physical, queue.routing)

    def _paging_now(self, queue: _Queue) -> bool:
        """Whether the queue's address is in page mode (its pending count then holds paged messages)."""
        address = self.addresses_[queue.address]
        if address.config is None or address.config.full_policy != "PAGE":
            return False
        return self._address_memory(address)[1]

    def _queue_state(self, queue: _Queue) -> dict[str, Any]:
        return self._mgmt().read(self._queue_mbean(queue), *QUEUE_COUNTS, flush=True)

    def _await_delivering(self, name: str, killed: int | None = None) -> dict[str, Any] | None:
        """Wait (bounded by settle_timeout) until the broker counts as delivering on queue `name`
        exactly what the adapter's links hold: every disposition sent has been applied. `killed`: the
        queue's MessagesKilled before a nack at the delivery limit (see _Queue.applied). The last
        counts read when they were at rest with nothing arrived since, else None."""
        queue = self.queues[name]
        consumers = [c for c in self.consumers.values() if c.queue == name]
        deadline = self._settle_deadline(self.settle_timeout)
        while True:
            self._pump(0)
            held = sum(c.holding() + len(c.handler.arrived) for c in consumers)
            late = time.monotonic() > deadline
            counts = self._queue_state(queue)
            dropped = killed is not None and counts["MessagesKilled"] > killed
            if queue.applied(counts["DeliveringCount"], held, late, dropped) and not late:
                self._pump(0)
                arrived = sum(c.holding() + len(c.handler.arrived) for c in consumers) != held
                return None if arrived else counts
            if late:
                return None
            self._pump(0.002)

    def _settle_queue(self, name: str, counts: dict[str, Any] | None = None,
                      returning: bool = False, added: int | None = None) -> None:
        """Wait (bounded by settle_timeout) until the broker's view of queue `name` is at rest: what
        it counts delivering is what the adapter's links hold (nothing in flight either way), and no
        message is pending while a link of the queue has credit. `counts`: the queue's counts just
        read (nothing sent since), taken as the first look. `returning`: deliveries are on their way
        back (a closed link), so the count must come back to the difference taken as at rest
        (_Queue.applied), not to what the links hold. `added`: a message was accepted for the queue,
        and its MessagesAdded must reach this first (ArtemisSends.send)."""
        queue = self.queues[name]
        address = self.addresses_[queue.address]
        if address.blocked:  # PAGING-3: memory freed lets blocked sends through first
            self._settle_blocked(address)
            counts = None
        consumers = [c for c in self.consumers.values() if c.queue == name]
        deadline = self._settle_deadline(self.settle_timeout)
        paged = address.pages
        last: tuple[int, ...] | None = None
        while True:
            if counts is None:  # counts given were read before anything that arrived since: no pump
                self._pump(0)
            state = self._queue_state(queue) if counts is None else counts
            counts = None
            held = sum(c.holding() + len(c.handler.arrived) for c in consumers)
            pending = queue.pending(state)
            credit = self._dispatch_credit(queue, consumers)
            late = time.monotonic() > deadline
            rest = queue.applied if returning else queue.at_rest
            at_rest = rest(state["DeliveringCount"], held, late) \
                and (added is None or late or int(state["MessagesAdded"]) >= added)
            offered = at_rest and pending > 0 and credit > 0 and queue.non_destructive and \
                self._offered_all(queue, consumers)
            if offered and queue.credited and not late:
                self._confirm_credit(queue)
                continue
            if at_rest and (pending <= 0 or credit <= 0 or offered):
                return
            if at_rest and paged and not queue.non_destructive:
                # paged messages the queue may not read yet (_Address.pages): two looks after
                # flushExecutor with nothing moved between them and nothing in flight say the queue
                # gave what it could
                look = counts_look(state)
                if look == last:
                    return
                last = look
            if late:
                return
            self._pump(0.003)

    @staticmethod
    def _dispatch_credit(queue: _Queue, consumers: list[Any]) -> int:
        """The credit a pending message can be dispatched on: every link's of the queue; on an
        exclusive queue (DELIVERY-26) only the exclusive consumer's once the broker chose it, which
        the adapter learns from the link a delivery arrived on (QueueImpl#handleMessageGroup makes the
        consumer a dispatch serves while none is exclusive the exclusive one, and only it is served
        until it closes): the others wait with credit while messages are pending, at rest."""
        if queue.exclusive:
            served = [c for c in consumers if c.holding() or c.handler.arrived]
            if served:
                queue.active = served[0].name
            chosen = [c for c in consumers if c.name == queue.active]
            if chosen:
                return int(chosen[0].link.link.credit)
        return sum(int(c.link.link.credit) for c in consumers)

    def _confirm_credit(self, queue: _Queue) -> None:
        """One AMQP round trip on the connection (a sender link attached and closed): the broker
        handles a connection's frames in order, so once the attach is answered it has taken up every
        flow sent before it (ProtonServerSenderContext#onFlow queued the queue's delivery pass, which
        the next flushExecutor waits for). Without it, a non-destructive queue whose consumers were
        offered every listed message was taken as at rest before the broker saw an ack's new credit,
        and a repeated delivery (LinkedListImpl.Iterator's repeat) came one operation late (seen on
        2.40.0 and 2.56.0: six lastvalue FAILs "delivering_count expected 3, actual 2")."""
        # a name of its own: proton names a link after the container and address, the send link's name
        name = f"{self.prefix}-confirm-{time.monotonic_ns()}"
        self.conn.create_sender(queue.physical_address, name=name).close()
        queue.credited = False

    def _offered_all(self, queue: _Queue, consumers: list[Any]) -> bool:
        """A non-destructive queue keeps what it delivers listed, so "nothing pending while a link has
        credit" never holds: instead every pushing consumer with credit must have been offered every
        message the queue lists (each consumer's iterator walks the whole list, QueueImpl#deliver). A new
        consumer's credit, or the credit an ack gives back, is otherwise taken as at rest before the
        broker dispatched on it (seen on 2.40.0: a consumer opened on a non-destructive queue that
        holds messages read as delivering nothing)."""
        waiting = [c for c in consumers if not c.pull and c.link.link.credit > 0]
        if not waiting:
            return True
        listed = set(self._listed(queue))
        return all(listed <= c.handler.seen for c in waiting)

    def advance(self, ms: int) -> Result:
        """Move the logical clock by `ms`, firing scheduled messages at each logical due time on the way
        (SCHED-4: each due time is its own firing, as the model's clock and the broker's timer do)."""
        target = self._clock_ms + ms
        for point in sorted({d for d in self._dues if self._clock_ms < d <= target}):
            result = self._advance_clock(point - self._clock_ms)
            if not result.is_ok:
                return result
            fired = self._do("advance", lambda p=point: self._fire(p))
            if not fired.is_ok:
                return fired
        return self._advance_clock(target - self._clock_ms) if target > self._clock_ms else Result.ok(None)

    def _fire(self, point: int) -> None:
        """SCHED-3, 4, 9..11, RING-10: fire the scheduled messages due at logical time `point`.

        The broker's timer would fire them a day from now (FAR_MS), so the adapter fires them at their
        logical due time: per queue, the due ones in the broker's scheduler order
        (QueueControl#listScheduledMessages: ScheduledDeliveryHandlerImpl's sorted set), each moved
        with QueueControl#deliverScheduledMessage(id), last first, the queue paused when it has a
        consumer and more than one is due. Each
        call is QueueImpl#addHead(ref, scheduling=true), so they end at the head in scheduler order
        with the ring enforced per message, as ScheduledDeliveryRunnable#run leaves them (it collects
        them with addFirst, then addHead in turn); the pause keeps a consumer with credit from taking
        one before the rest are placed."""
        self._dues = [d for d in self._dues if d > point]
        mgmt = self._mgmt()
        for name, q in self.queues.items():
            mbean = self._queue_mbean(q)
            due = [m for m in mgmt.exec(mbean, "listScheduledMessages()")
                   if m.get(DUE_PROPERTY) is not None and int(m[DUE_PROPERTY]) <= point]
            if not due:
                continue
            pause = len(due) > 1 and any(c.queue == name for c in self.consumers.values())
            if pause:
                mgmt.exec(mbean, "pause()")
            try:
                for message in reversed(due):
                    mgmt.exec(mbean, "deliverScheduledMessage(long)", int(message["messageID"]))
                    q.fired(message)  # a last-value queue's current message from now on
            finally:
                if pause:
                    mgmt.exec(mbean, "resume()")
            self._settle_fired(name, q)

    def _settle_fired(self, name: str, q: _Queue) -> None:
        """The settle after scheduled messages of queue `name` were moved to its head (a firing, or
        SCHED-16's deliver_scheduled)."""
        if q.non_destructive:
            # QueueImpl#addHead(List, scheduling) resets every consumer's iterator (2.40.0
            # QueueImpl.java L884, a broker bug: reference_model/bugs/artemis_scheduled_resets_iterators):
            # each consumer is offered every listed message again, so what arrived before no longer
            # tells that a consumer with credit was offered them all (_offered_all)
            for consumer in self.consumers.values():
                if consumer.queue == name:
                    consumer.handler.seen.clear()
        self._settle_queue(name)
        if q.last_value:
            self._await_pruned(q)

    def _received(self, queue: str) -> set[str]:
        """Every id that arrived on a link of a consumer of `queue` (a last-value queue's latest
        message may have left the list that way: QueueImpl#deliver removes it)."""
        return {msg_id for consumer in self.consumers.values() if consumer.queue == queue
                for msg_id in consumer.handler.seen}

    def _await_pruned(self, queue: _Queue) -> None:
        """LASTVALUE-1: after a fire or a send on a last-value queue, wait (bounded by settle_timeout)
        until the queue lists no superseded message (_Queue.superseded_shown). LastValueQueue#addHead
        and #addTail only record the new message as current; the one it supersedes leaves the list in
        the next delivery pass (QueueImpl#deliver calls pruneLastValues), and
        QueueControl#flushExecutor returns while that pass still runs (ProcessorBase#flush returns once
        nothing is queued). Seen on 2.40.0: a superseded message listed after the fire in 4 of 243
        replays of one example."""
        mgmt = self._mgmt()
        requests = self._listing_requests(queue)
        received = self._received(queue.name)
        deadline = self._settle_deadline(self.settle_timeout)
        while True:
            _, listed = mgmt.bulk(requests)
            if not queue.superseded_shown(listed, received) or time.monotonic() > deadline:
                return
            self._pump(0.003)

    def _advance_clock(self, ms: int) -> Result:
        """With a TTL pending, sleep until the broker's clock has run as long as the logical one
        (BrokerAdapter.advance) and give the expiry scanner its period; without one, only move the
        logical clock (nothing on the broker waits for time)."""
        expiring = any(logical <= self._clock_ms + ms for logical, _ in self._ttl_deadlines)
        if ms > 0 and not self._ttl_deadlines:
            # nothing on the broker runs on its clock (no TTL pending; scheduled messages are fired by
            # _fire, redelivery delays are not offered): logical time passes without a sleep, the
            # clocks are lined up again
            self._clock_ms += ms
            self._clock_origin = time.monotonic() - self._clock_ms / 1000
            return Result.ok(None)
        result = super().advance(ms)
        if result.is_ok:
            def run() -> None:
                # a TTL ran out: the expiry scanner (message-expiry-scan-period) removes it within a period
                self._pump(2 * EXPIRY_SCAN_MS / 1000 if expiring else 0.02)
                for name in self.queues:
                    self._settle_queue(name)
            return self._do("advance", run)
        return result

