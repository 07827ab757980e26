"""Artemis: a non-destructive ring queue that evicts a message in delivery keeps it in its pending count.

Artemis 2.18.0 to 2.56.0 (every served release replayed, and the current one; not reported upstream
yet: docs/findings/artemis-non-destructive-ring-evicts-delivered.md). DELIVERY-1, RING-17. A
non-destructive queue keeps a delivered reference listed (QueueImpl#deliver, ``if
(!isNonDestructive()) removeMessageReference``, L3066 at 2.56.0 on apache/artemis) and marks it in
delivery (``ref.setInDelivery(true)``, L3069; deliverDirect L3822). The flag is cleared only by an
acknowledgement (postAcknowledge, non-destructive NORMAL: ``ref.setInDelivery(false)``, L3967-L3970;
an individual ack commits its own transaction, RefsOperation#afterCommit) or by a return to the list
(internalAddHead / internalAddSorted, L2846 and L2865); a close or a rollback leaves it set (on a
non-destructive queue RefsOperation#afterRollback -> postRollback adds nothing back, L4045-L4048), and
it is one flag for every consumer. When a send takes the pending count over the ring-size,
QueueImpl#enforceRing (L4558-L4585) polls the head off the list (L4562), acks it REPLACED and calls
refRemoved (``pendingMetrics.decrementMetrics``, L3253-L3259) only ``if (!refToAck.isInDelivery() &&
!scheduling)`` (L4572-L4574): a head in delivery leaves the list but stays in the pending count, for
good (one more per such eviction), and the ring's bound (``getPendingMessageCount() + adjustment >
ring-size``, L4561) compares that count. A restart starts the metrics over.
Regression scenario: docs/findings/artemis-non-destructive-ring-evicts-delivered.yaml.

The model (option ``ring_eviction_keeps_delivered_pending``): a non-destructive queue keeps the ids
of its listed refs in delivery (QueueState.in_delivery: added at a dispatch, dropped at an ack or a
commit of it), and a ring eviction of such a head adds one to QueueState.pending_kept, which the
pending count and the ring bound add to the list (state.QueueState.bound_count, Broker.counters); a
restart (reloaded) clears both. Not modelled: the pending bytes the broker keeps too (no count the
adapter reads depends on them for a non-destructive ring).
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="artemis-non-destructive-ring-evicts-delivered",
    key="Artemis QueueImpl#enforceRing skips refRemoved in delivery (not yet filed)",
    option="ring_eviction_keeps_delivered_pending",
    rules=("DELIVERY-1", "RING-17"),
    source="https://github.com/apache/artemis/blob/2.56.0/artemis-server/src/main/java/org/apache/"
           "activemq/artemis/core/server/impl/QueueImpl.java#L4558-L4585",
    releases=">=2.18",
    summary="a non-destructive ring queue that evicts a message in delivery (dispatched, not acknowledged "
            "since) takes it off the list but not off the pending count, which the ring's bound compares",
)
