"""Pull consumer priority groups, the overflow policy (DELIVERY-41..44, feature priority_overflow).

JetStream's ADR-42: a durable consumer with ``priority_groups`` [g] and ``priority_policy`` overflow (a
queue of a stream address joined with ``priority: overflow``) serves a pull request that names
``min_pending`` n only while its num_pending, counting the message about to be delivered, is at least
n (DELIVERY-41), one that names ``min_ack_pending`` n only while num_ack_pending is at least n
(DELIVERY-42), and one that names both when either holds (DELIVERY-43). The thresholds are weighed
before each message of the request; a message the request is not given stays the consumer's next one
(a redelivery goes to the back of the redelivery queue) and the request ends (DELIVERY-44). Weighing
reads the durable's counters as :meth:`consumer_state` does: linear in the messages the queue holds,
and only for a request that names a threshold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import BrokerCore
from .errors import ModelMisuse

if TYPE_CHECKING:
    from .state import QueueState, Ref

#: ADR-42 priority policies the model has
PRIORITY_POLICIES = ("overflow",)


class PriorityGroupsMixin(BrokerCore):
    """DELIVERY-41..44: the overflow priority policy of a stream address's queue."""

    if TYPE_CHECKING:
        def _consumer_counters(self, queue: QueueState) -> dict[str, int]: ...  # stream_state

    def _check_priority(self, priority: str | None) -> None:
        """A queue's priority policy needs the feature and one of PRIORITY_POLICIES."""
        if priority is None:
            return
        self._need("priority_overflow", "priority")
        if priority not in PRIORITY_POLICIES:
            raise ModelMisuse(f"unknown priority policy {priority!r}")

    def _check_thresholds(self, queue: QueueState, min_pending: int, min_ack_pending: int) -> None:
        if not (min_pending or min_ack_pending):
            return
        self._need("priority_overflow", "min_pending")
        if min_pending < 0 or min_ack_pending < 0:
            raise ModelMisuse("min_pending and min_ack_pending are >= 0")
        if queue.priority_policy != "overflow":
            # consumer.go processNextMsgRequest: 400 Bad Request - Not a Overflow Priority consumer
            raise ModelMisuse(f"queue {queue.name!r} is not of the overflow priority policy")

    def _overflow_serves(self, queue: QueueState, ref: Ref, min_pending: int, min_ack_pending: int) -> bool:
        """DELIVERY-41..43: whether a request with these thresholds (0: none) is given `ref` now."""
        if not (min_pending or min_ack_pending):
            return True
        counts = self._consumer_counters(queue)
        # consumer.go nextWaiting o.npc+1: a first delivery was already taken off num_pending, a
        # redelivery never was
        pending = counts["num_pending"] + (1 if ref.delivery_count > 0 else 0)
        return ((min_pending > 0 and pending >= min_pending)
                or (min_ack_pending > 0 and counts["num_ack_pending"] >= min_ack_pending))

    def _overflow_declined(self, queue: QueueState, ref: Ref) -> None:
        """DELIVERY-44: a redelivery not given goes to the back of the redelivery queue."""
        if ref.id in queue.pending.returned_ids:
            queue.pending.requeue_returned(ref)
