"""The logical clock and scheduled delivery: advance, next due time, firing due messages.

Implements SCHED-2 (a message with a scheduled time > 0 enters the scheduler, also when depaged,
SCHED-7), SCHED-4 (due messages go to the head in scheduler order), SCHED-6, SCHED-8..11 and RING-10
(a full ring replaces a due message) and SCHED-16 (one scheduled message delivered now, through
management). The per-queue heap itself (SCHED-3, SCHED-5) is :mod:`.scheduler`; this module is the
broker's use of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import BrokerCore
from .errors import ModelMisuse
from .state import QueueState, Ref

if TYPE_CHECKING:
    from .pending import PendingList


class ClockMixin(BrokerCore):
    """The logical clock and scheduled messages."""

    if TYPE_CHECKING:
        def _iterator_over(self, queue: QueueState) -> PendingList[Ref]: ...  # delivery

    def _enqueue_new(self, queue: QueueState, ref: Ref) -> None:
        """A message entering the queue from routing or depage: scheduled or tail (SCHED-2, S7)."""
        scheduled = ref.msg.scheduled_at_ms
        queue.live[ref.id] = ref
        if scheduled is not None and scheduled > 0 and self.options.has("scheduling"):
            ref.place = "scheduled"
            queue.scheduler.add(scheduled, ref, head=False)
            return
        self._add_tail(queue, ref)

    def advance(self, ms: int) -> None:
        """Move the clock forward, firing every due scheduled message at its own due time (SCHED-4)."""
        if ms < 0:
            raise ModelMisuse("time only moves forward")
        target = self.now_ms + ms
        while True:
            due = self.next_due_ms()
            if due is None or due > target:
                break
            self.now_ms = max(self.now_ms, due)
            self._settle_everything()
        self.now_ms = target
        self._settle_everything()

    def next_due_ms(self) -> int | None:
        """The earliest due time of any scheduled message."""
        times = [t for q in self.queues.values() if (t := q.scheduler.next_due()) is not None]
        return min(times) if times else None

    def _fire_due(self, queue: QueueState) -> bool:
        """SCHED-4 / RING-10: due messages go to the head in scheduler order; a full ring drops them."""
        due = queue.scheduler.pop_due(self.now_ms)
        if not due:
            return False
        self._fire(queue, due)
        return True

    def deliver_scheduled(self, queue_name: str, msg_id: str) -> bool:
        """SCHED-16: deliver one scheduled message now, whatever its due time (Artemis
        QueueControl#deliverScheduledMessage(id), 2.25.0+): it leaves the scheduler and goes to the head
        as a due one does (QueueImpl#addHead(List, scheduling=true): a full ring replaces it, a last-value
        queue takes it as its value's current message); MessagesAdded is unchanged (counted when it was
        scheduled). An id the scheduler does not hold (pending, delivering, gone, never sent) changes
        nothing. The answer is whether a scheduled message was delivered (the broker's call is void: an
        adapter answers from its listing)."""
        self._need("deliver_scheduled", "deliver_scheduled")
        queue = self._queue(queue_name)
        ref = queue.refs.get(msg_id)
        if ref is None or ref.place != "scheduled":
            return False
        queue.scheduler.remove(ref)  # ScheduledDeliveryHandlerImpl#cancel(predicate)
        self._fire(queue, [ref])
        self._settle(queue)
        return True

    def _fire(self, queue: QueueState, due: list[Ref]) -> None:
        """Place `due` (scheduler order) as a firing does: at the head, the last first (SCHED-4)."""
        opts = self.options
        for ref in reversed(due):
            if opts.scheduled_placement == "tail":
                self._add_tail(queue, ref)
                continue
            if queue.last_value_key is not None:
                self._lv_put(queue, ref)  # RING-15: tracked before the ring check (LVQ#addHead)
            bound = queue.ring_size
            if bound >= 0 and queue.bound_count(opts.bound_counts) + 1 > bound:
                self._terminate(queue, ref, "replaced")
                self._event("replaced", queue.name, ref.id, "scheduled")
                continue
            ref.place = "pending"
            if opts.scheduled_placement == "sorted":  # REDELIVERY-37: beanstalkd's ready heap
                queue.pending.add_sorted(ref, ref.sequence, ref.size)
            else:
                queue.pending.add_head(ref, ref.size)
            if queue.non_destructive:
                self._listed(queue, ref, head=True)
        if opts.scheduled_placement == "head":
            from .bugs.artemis_priority_removal import IteratorWalk  # a bug model's walk

            if isinstance(queue.pending.watch, IteratorWalk):
                # QueueImpl#addHead(List, scheduling) ends with resetAllIterators on every queue: each
                # consumer's next pass starts a new iterator, at the top level (ConsumerHolder
                # #resetIterator drops it; PriorityLinkedListIterator starts at levels.length - 1)
                queue.pending.watch.iterators.clear()
        if queue.non_destructive and opts.scheduled_fire_resets_iterators:  # a bug model
            from .bugs.artemis_scheduled_resets_iterators import reset

            reset(queue, self._iterator_over)
