"""Timers on the logical clock: JetStream ack wait, in-progress and NAK with a delay.

REDELIVERY-27: a consumer declared with ``ack_wait_ms`` (JetStream AckWait) gets back nothing it
does not settle in time: a message it received and has neither acked nor nacked ``ack_wait_ms``
after the receive leaves the consumer and joins the redelivery queue as a plain nack would (its
delivery count kept; the delivery limit checked), while the consumer still holds a reply subject for
it (DELIVERY-22 by_sequence). ``in_progress`` (+WPI) restarts the wait.
REDELIVERY-32..35: a consumer with ``backoff_ms`` waits BackOff[min(n - 1, len - 1)] for its
n-th delivery instead, and +WPI restarts that wait.
REDELIVERY-28: ``nack(delay_ms=d)`` (``-NAK {"delay": ns}``) keeps the message out of the
redelivery queue for ``d`` ms; it stays counted as delivering (JetStream num_ack_pending) until then.

The timers are one heap of (due, sequence, kind, owner, id, started) entries checked lazily: an entry
whose message has moved on since is dropped when it comes up. Timers due at the same time as scheduled
messages fire first (:meth:`Broker._settle_everything`).

Timers due at the same logical instant fire in the order they were started, a restart (+WPI) being a
new start: the timer it replaces is dead even when it would end at the same time. That order is exact for
timers started at the same logical instant: a broker's clock starts them in the order of the
operations. Timers started at different logical instants with different waits (a BackOff's 500 ms
from 200, its 300 ms from 400) that come due together are a tie only on the logical clock: on a
broker's real clock each started after the operations since the last advance took their own time, so
which is due first is decided by those operations, not by a rule (nats-server ``checkPending``
queues what expired by stream sequence only within one check). The model keeps its order and
records the first such instant in ``timer_tie_ms``; a comparison on a real clock after it is not
judged (:class:`mqconform.adapters.contract.ClockLead`).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from ._core import AckResult
from .clock import ClockMixin
from .options import ReturnPlacement
from .state import ConsumerState, QueueState, Ref


class AckWaitMixin(ClockMixin):
    """REDELIVERY-27 ack wait and in-progress, REDELIVERY-28 NAK with a delay, REDELIVERY-32..35
    BackOff."""

    if TYPE_CHECKING:
        def _return(self, queue: QueueState, ref: Ref, *, undo: bool, delay: bool,
                    placement: ReturnPlacement, ring_check: bool,
                    expired: bool = False, track: bool = False) -> None: ...  # redelivery

    def _push_timer(self, due: int, kind: str, owner: object, msg_id: str) -> None:
        self._timer_seq += 1
        heapq.heappush(self._timers, (due, self._timer_seq, kind, owner, msg_id, self.now_ms))

    def _start_ack_wait(self, consumer: ConsumerState, msg_id: str) -> None:
        """REDELIVERY-27: the wait starts when the consumer receives the message (REDELIVERY-32: with
        a BackOff, the wait of its delivery count)."""
        due = self.now_ms + consumer.ack_wait_for(consumer.received[msg_id].delivery_count)
        self._push_timer(due, "ack_wait", consumer, msg_id)
        consumer.ack_timers[msg_id] = self._timer_seq

    def _nak_later(self, queue: QueueState, ref: Ref, delay_ms: int) -> None:
        """REDELIVERY-28: a delivering `ref`, held by no consumer, returns in `delay_ms`."""
        due = self.now_ms + delay_ms
        queue.nak_waiting[ref.id] = due
        self._push_timer(due, "nak_delay", queue, ref.id)

    def _live(self, entry: tuple[int, int, str, object, str, int]) -> bool:
        due, seq, kind, owner, msg_id, _ = entry
        if kind == "ack_wait":
            assert isinstance(owner, ConsumerState)
            live = (self.consumers.get(owner.name) is owner and msg_id in owner.received
                    and owner.ack_timers.get(msg_id) == seq)
            if not live and owner.ack_timers.get(msg_id) == seq:
                del owner.ack_timers[msg_id]
            return live
        assert isinstance(owner, QueueState)
        return owner.nak_waiting.get(msg_id) == due

    def next_due_ms(self) -> int | None:
        """The earliest due scheduled message or live timer."""
        due = super().next_due_ms()
        timers = self._timers
        while timers and not self._live(timers[0]):
            heapq.heappop(timers)
        if timers and (due is None or timers[0][0] < due):
            return timers[0][0]
        return due

    def _fire_timers(self) -> None:
        """Fire every live timer due now: the message joins the redelivery queue (nack placement)."""
        timers = self._timers
        opts = self.options
        started: dict[int, int] = {}  # due -> when the first timer fired at it started
        while timers and timers[0][0] <= self.now_ms:
            entry = heapq.heappop(timers)
            if not self._live(entry):
                continue
            due, start = entry[0], entry[5]
            if started.setdefault(due, start) != start and self.timer_tie_ms is None:
                self.timer_tie_ms = due
            owner, msg_id = entry[3], entry[4]
            if isinstance(owner, ConsumerState):
                queue = self._queue(owner.config.queue)
                ref = owner.received.pop(msg_id)
                del owner.ack_timers[msg_id]
                self._event("ack_wait", queue.name, msg_id, owner.name)
            else:
                assert isinstance(owner, QueueState)
                queue = owner
                del queue.nak_waiting[msg_id]
                ref = queue.refs[msg_id]
            self._return(queue, ref, undo=False, delay=False, placement=opts.nack_placement,
                         ring_check=not opts.nack_bypasses_ring, expired=True)

    def in_progress(self, consumer_name: str, msg_id: str) -> AckResult:
        """REDELIVERY-27: +WPI restarts the ack wait of a message the consumer holds ("ok"). By
        stream sequence (DELIVERY-22): a message the consumer was given and another consumer now
        holds has that consumer's wait restarted; otherwise nothing changes ("ok"); a message never
        given to the consumer: "failed"."""
        self._need("ack_wait", "in_progress")
        consumer = self._consumer(consumer_name)
        if msg_id in consumer.received:
            holder: ConsumerState | None = consumer
        elif msg_id in consumer.tokens:
            queue = self._queue(consumer.config.queue)
            holder = next((c for c in queue.consumers if msg_id in c.received), None)
        else:
            return "failed"
        if holder is not None and holder.times_out:
            self._start_ack_wait(holder, msg_id)
        return "ok"
