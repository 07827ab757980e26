"""Move of one message by id to another queue (DELIVERY-48): a management operation, not a consumer's.

Artemis ``QueueControl#moveMessage(id, otherQueue)``: ``QueueImpl#moveReference`` finds the message,
routes a copy with a new broker id and no expiration to the named queue's binding only
(``PostOfficeImpl#route`` with a ``bindingMove``: no filter, no other queue of its address) and
acknowledges the original with AckReason.NORMAL. What it finds is the option ``move_listed``: before
2.53.0 the pending list only; from 2.53.0 (ARTEMIS-5376) it is an ``iterQueue`` action that also takes a
scheduled message out of the scheduler and a paged one through a page iterator of its own. Never a
delivering one. The copy keeps the message's delivery time (the x-opt-delivery-time annotation is part
of the copied message; ``PostOfficeImpl#processRoute`` gives its reference that time), so it enters the
target's scheduler: it waits there for that time, or fires at once to the head when the time has passed
(a message once scheduled and already delivered to its queue). The answer is whether one was moved.
"""

from __future__ import annotations

import attrs

from ._core import BrokerCore
from .errors import ModelMisuse
from .state import Ref


class MoveMixin(BrokerCore):
    """DELIVERY-48: move_message."""

    def move_message(self, queue_name: str, msg_id: str, to: str) -> bool:
        """Move message `msg_id` of the queue to queue `to` (DELIVERY-48): acknowledged here, added there
        as a new send (the tail of its priority level, or the target's scheduler when it has a delivery
        time); False when the queue holds no such message the move reaches (see :meth:`_movable`)."""
        self._need("move", "move")
        queue = self._queue(queue_name)
        target = self._queue(to)  # QueueControlImpl#moveMessage: noQueueFound
        if queue.non_destructive:
            raise ModelMisuse("a move from a non-destructive queue is not modelled (DELIVERY-48 notes)")
        if target.address.paging:
            raise ModelMisuse("a move into an address in page mode is not modelled (DELIVERY-48 notes)")
        ref = queue.refs.get(msg_id)
        if ref is None or not self._movable(ref):
            return False
        if ref.place == "pending":
            queue.pending.remove(ref.id)
            if queue.special:
                self._unlisted(queue, ref)
        elif ref.place == "scheduled":
            queue.scheduler.remove(ref)  # iterQueue: ScheduledDeliveryHandlerImpl#cancel(match)
        else:
            queue.paged.remove(ref)  # iterQueue: pageSubscription.iterator(), then remove()
        # QueueImpl#move: incDelivering, then acknowledge(NORMAL, delivering=true): messagesAcknowledged
        self._terminate(queue, ref, "acknowledged")
        self._event("moved", queue.name, ref.id, target.name)
        # QueueImpl#makeCopy: a new message with setExpiration(0), its delivery time kept; routed to the
        # target's binding only
        copy = attrs.evolve(ref.msg, ttl_ms=None)
        self._touch(target.address)
        self._admit_to_queue(target, target.address, copy)
        self._settle(queue, target)
        return True

    def _movable(self, ref: Ref) -> bool:
        """DELIVERY-48: a pending message; with ``move_listed`` (Artemis 2.53.0+) a scheduled or paged
        one too."""
        if self.options.move_listed:
            return ref.place in ("pending", "scheduled", "paged")
        return ref.place == "pending"
