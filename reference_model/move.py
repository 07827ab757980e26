"""Move of one message by id to another queue (DELIVERY-48): a management operation, not a consumer's.

Artemis ``QueueControl#moveMessage(id, otherQueue)``: ``QueueImpl#moveReference`` finds the message
among the queue's pending references (never a delivering one), routes a copy with a new broker id and
no expiration to the named queue's binding only (``PostOfficeImpl#route`` with a ``bindingMove``: no
filter, no other queue of its address) and acknowledges the original with AckReason.NORMAL. The model
follows the releases before 2.53.0, which walk the pending list only (from 2.53.0, ARTEMIS-5376, a
scheduled or paged message is moved too; see the rule's notes). The answer is whether one was moved.
"""

from __future__ import annotations

import attrs

from ._core import BrokerCore
from .errors import ModelMisuse


class MoveMixin(BrokerCore):
    """DELIVERY-48: move_message."""

    def move_message(self, queue_name: str, msg_id: str, to: str) -> bool:
        """Move pending message `msg_id` of the queue to queue `to` (DELIVERY-48): acknowledged here,
        added there at the tail of its priority level as a new send; False when it is not pending."""
        self._need("move", "move")
        queue = self._queue(queue_name)
        target = self._queue(to)  # QueueControlImpl#moveMessage: noQueueFound
        if queue.non_destructive:
            raise ModelMisuse("a move from a non-destructive queue is not modelled (DELIVERY-48 notes)")
        if target.address.paging:
            raise ModelMisuse("a move into an address in page mode is not modelled (DELIVERY-48 notes)")
        ref = queue.refs.get(msg_id)
        if ref is None or ref.place != "pending":
            return False
        queue.pending.remove(ref.id)
        if queue.special:
            self._unlisted(queue, ref)
        # QueueImpl#move: incDelivering, then acknowledge(NORMAL, delivering=true): messagesAcknowledged
        self._terminate(queue, ref, "acknowledged")
        self._event("moved", queue.name, ref.id, target.name)
        # QueueImpl#makeCopy: a new message with setExpiration(0); routed to the target's binding only
        copy = attrs.evolve(ref.msg, ttl_ms=None, scheduled_at_ms=None)
        self._touch(target.address)
        self._admit_to_queue(target, target.address, copy)
        self._settle(queue, target)
        return True
