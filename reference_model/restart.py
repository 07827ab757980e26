"""A restart of the implementation (graceful or SIGKILL) as a model step: what survives it.

Implements RESTART-1 (stored messages, their order, delivery counts and the queue's limits and
counters survive), RESTART-2 (consumers are closed by the restart: their unacknowledged messages
return as by a close), RESTART-3 (consumers are kept; a returned message not yet redelivered is
parked: pending for nobody, still counted as delivering and toward max_unacked, until its ack wait
runs out), RESTART-4 (a kill is the same step as a graceful restart once the store's flush
interval has passed) and RESTART-6 (an Artemis broker reads its journal again) through the options
``restart_consumers``, ``restart_returns``, ``restart_order`` and ``restart_flush_ms``.

What RESTART-5 says survives, the queue in JetStream's terms, is in :mod:`.stream_state`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import BrokerCore
from .errors import ModelMisuse
from .state import QueueState

RESTART_MODES = ("graceful", "kill")
#: a parked message's return when no consumer has an ack wait: beyond any example's logical clock
PARKED_FOREVER_MS = 10**12


class RestartMixin(BrokerCore):
    """The restart step."""

    if TYPE_CHECKING:
        def _enforce_subject_limit(self, queue: QueueState, subject: str | None) -> None: ...  # ring

    def _parked(self, queue: QueueState) -> int:
        """RESTART-3: parked messages (and, the same on JetStream, messages waiting out a NAK delay)
        count toward every consumer's max_unacked: max_ack_pending belongs to the durable consumer,
        which still has them pending."""
        return len(queue.nak_waiting) if self.options.restart_returns == "parked" else 0

    def _ack_wait_of(self, queue: QueueState) -> int:
        """RESTART-3: when a parked message comes back: the ack wait of the queue's consumers
        (REDELIVERY-27, counted from the restart: the model keeps no delivery time of a returned
        message), else never within an example (the adapter's default AckWait is 30 s)."""
        waits = [c.ack_wait_for(1) for c in queue.consumers if c.times_out]
        return min(waits) if waits else PARKED_FOREVER_MS

    def _reread_in_store_order(self, queue: QueueState) -> None:
        """RESTART-2 (restart_order stored): the ready messages in sequence order, as a broker that
        pages its queue in from the store again has them (its in-memory redelivery list is gone)."""
        refs = list(queue.pending)
        for ref in refs:
            queue.pending.remove(ref.id)
        for ref in refs:
            queue.pending.add_sorted(ref, ref.sequence, ref.size)

    def _reload_from_store(self) -> None:
        """RESTART-6 (restart_consumers "reloaded"): what a broker that reads its journal again has.

        The connections end without a cancel, so nothing is dead-lettered, delayed or replaced on the
        way: each message a consumer held is listed again with the delivery count written at its last
        return (the count the cancel of a close would leave, REDELIVERY-2: the delivery in flight is
        undone). Each queue then lists its ready messages by priority in stored order
        (PostOfficeJournalLoader#handleAddMessage, journal order; QueueImpl#reload adds without
        enforcing a ring), and counts as added only what it reloaded; its other statistics start at 0
        (QueueImpl's message counters are not persisted)."""
        for name, consumer in list(self.consumers.items()):
            queue = self._queue(consumer.config.queue)
            del self.consumers[name]
            if consumer in queue.consumers:
                self._unsubscribe(queue, consumer)
            acked, cancelled = self._cancel_list(consumer)
            for ref in acked + cancelled:
                self._undeliver(queue, ref)
                ref.delivery_count -= 1
                if queue.non_destructive:  # DELIVERY-12: it never left the list
                    continue
                ref.place = "pending"
                queue.pending.add_sorted(ref, ref.sequence, ref.size)
        for queue in self.queues.values():
            queue.in_delivery.clear()  # a bug model's state: the broker's metrics start over
            queue.pending_kept = 0
            queue.lv_direct.clear()
            queue.lv_direct_on, queue.lv_direct_rechecked = True, False  # a new QueueImpl
            self._reread_in_store_order(queue)
            counters = queue.counters
            counters.added = self.counters(queue.name).message_count
            counters.acknowledged = counters.replaced = counters.killed = counters.expired = 0

    def restart(self, mode: str = "graceful") -> None:
        """Restart the broker: ``graceful`` (SIGTERM) or ``kill`` (SIGKILL after the flush interval,
        RESTART-4). Nothing stored is lost or resurrected (RESTART-1); consumers are closed
        (RESTART-2) or kept with their returned messages parked (RESTART-3)."""
        self._need("restart", "restart")
        if mode not in RESTART_MODES:
            raise ModelMisuse(f"restart mode is graceful or kill, not {mode!r}")
        opts = self.options
        for queue in self.queues.values():
            queue.rdc_zero.clear()  # a bug model's (nats_refused_pull_counts_redelivered): not stored
            # a bug model's (nats_server_8102): checkRedelivered drops the entries at or below the floor
            queue.rdc_removed = {i: s for i, s in queue.rdc_removed.items() if s > queue.ack_floor[1]}
        if opts.first_subject_limit_not_enforced:  # a bug model: newFileStore trims every subject
            for queue in self.queues.values():
                if queue.max_per_subject > 0:
                    for subject in dict.fromkeys(ref.msg.subject for ref in queue.live.values()):
                        self._enforce_subject_limit(queue, subject)
        if opts.restart_drops_redelivered_below_floor:  # a bug model (reference_model.bugs)
            for queue in self.queues.values():
                queue.rdc_dropped |= {i for i, ref in queue.exhausted.items()
                                      if ref.sequence <= queue.ack_floor[1]}
        if opts.restart_consumers == "reloaded":
            self._reload_from_store()
            return
        if opts.restart_consumers == "closed":
            for name in list(self.consumers):
                self.close(name)
            if opts.restart_order == "stored":
                for queue in self.queues.values():
                    self._reread_in_store_order(queue)
            return
        if opts.restart_returns == "parked":
            for queue in self.queues.values():
                for ref in queue.pending.returned():
                    queue.pending.remove(ref.id)
                    ref.place = "delivering"
                    queue.delivering += 1
                    queue.delivering_bytes += ref.size
                    # REDELIVERY-28's waiting set: an ack or nack by sequence finds it there
                    self._nak_later(queue, ref, self._ack_wait_of(queue))
