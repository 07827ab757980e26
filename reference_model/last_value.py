"""Last-value queues: which message of a value is kept, where, and when the others leave.

Implements LASTVALUE-1..10 (and RING-15, the REPLACED counter they share with ring evictions) as
ActiveMQ Artemis has had them since ARTEMIS-3890 (2.24.0; LastValueQueue at 2.56.0:
https://github.com/apache/artemis/blob/2.56.0/artemis-server/src/main/java/org/apache/activemq/artemis/core/server/impl/LastValueQueue.java):

- a queue declared with ``last_value_key`` (feature ``last_value``) keeps, per value of that message
  property, one *current* message (``QueueState.last_values``): a message carrying the property takes
  its own place at the tail and becomes current (LASTVALUE-1, LASTVALUE-2, #addTail/#trackLastValue),
  a scheduled one only when it is due (LASTVALUE-10, #addHead(ref, scheduling=true));
- the message it superseded is pruned with reason REPLACED at the end of the next dispatch pass, if
  it is still pending (LASTVALUE-1, LASTVALUE-4, #pruneLastValues); a delivering one is left to its
  consumer (LASTVALUE-5), a message without the property is never pruned (LASTVALUE-3);
- a message returned by a close, rollback or nack is current only when its value has none, else it
  is pruned as stale after the next pass (LASTVALUE-6, #trackLastValueIfAbsent); on a non-destructive
  queue delivered messages stay listed and returns are not tracked again (LASTVALUE-8, LASTVALUE-9);
- messageCount leaves delivering messages out (LASTVALUE-7, #getMessageCount: Broker.counters).

The settle loop (:meth:`.broker.Broker._settle`) calls :meth:`LastValueMixin._prune_last_values` after
each dispatch pass; the ring, clock and redelivery modules call the trackers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import BrokerCore
from .state import QueueState, Ref


class LastValueMixin(BrokerCore):
    """LASTVALUE-1..10: the current message per value, and pruning the superseded ones."""

    if TYPE_CHECKING:
        def _unlisted(self, queue: QueueState, ref: Ref) -> None: ...  # ring

    def _lv_put(self, queue: QueueState, ref: Ref) -> None:
        """LASTVALUE-1, LASTVALUE-10 (RING-15): a new (or due scheduled) message becomes its key's current
        value; the previous one is pruned after the next dispatch pass (LastValueQueue#trackLastValue)."""
        value = queue.last_value(ref)
        if value is not None:
            current = queue.last_values.get(value)
            queue.last_values[value] = ref
            if current is not None and current is not ref:
                queue.lv_candidates.append(current)

    def _lv_if_absent(self, queue: QueueState, ref: Ref) -> None:
        """LASTVALUE-6: a message returned by a rollback, close or nack is current only if no value is
        (LastValueQueue#trackLastValueIfAbsent; not on a non-destructive queue, LASTVALUE-8)."""
        value = queue.last_value(ref)
        if value is not None:
            queue.last_values.setdefault(value, ref)

    def _lv_check(self, queue: QueueState, ref: Ref) -> None:
        """LASTVALUE-6: a listed ref that is not its key's current value is pruned after the next pass."""
        value = queue.last_value(ref)
        if value is not None and queue.last_values.get(value) is not ref:
            queue.lv_candidates.append(ref)

    def _forget_value(self, queue: QueueState, ref: Ref) -> None:
        """LASTVALUE-5: a ref that left the pending list (delivered, evicted, expired, pruned) stops
        being its value's current one (LastValueQueue#refRemoved, #removeIfCurrent)."""
        if queue.last_value_key is not None:
            value = queue.last_value(ref)
            if value is not None and queue.last_values.get(value) is ref:
                del queue.last_values[value]

    def _prune_last_values(self, queue: QueueState) -> bool:
        """LASTVALUE-1, LASTVALUE-4, LASTVALUE-5 (RING-15): after a dispatch pass, pending refs that are
        not their key's current value are removed with reason REPLACED (LastValueQueue#pruneLastValues);
        a consumer still holding one (non-destructive) keeps it delivering (LASTVALUE-8)."""
        candidates, queue.lv_candidates = queue.lv_candidates, []
        pruned = False
        for ref in candidates:
            if ref.place != "pending" or ref.id not in queue.pending:
                continue
            if queue.last_values.get(queue.last_value(ref)) is ref:
                continue
            queue.pending.remove(ref.id)
            self._unlisted(queue, ref)
            self._terminate(queue, ref, "replaced")
            self._event("replaced", queue.name, ref.id, "last_value")
            pruned = True
        return pruned
