"""Delete of one message by id (DELIVERY-31..33): a management operation, not a consumer's.

What a delete reaches is the profile's ``delete_scope``: the messages the queue lists (Artemis
``QueueControl.removeMessage(id)``: ``QueueImpl.deleteMatchingReferences`` walks the pending list,
the scheduled messages and the paged ones, not the delivering ones, so a message a consumer holds is
not found), or every stored message (JetStream ``$JS.API.STREAM.MSG.DELETE`` by stream sequence, Redis
``XDEL``: delivered, unacknowledged ones too). A deleted message is never dead-lettered; it counts as
the profile's ``delete_counts`` (killed; acknowledged on Artemis, whose ``QueueImpl#deleteReference``
acks with AckReason.NORMAL); one a
consumer held leaves it as an eviction does (JetStream: consumer.go decStreamPending terminates it,
the ack floor moves, a later ack is a silent no-op; Redis: the PEL entry stays until XACK, which still
answers 1, and XCLAIM/XAUTOCLAIM drop it). A JetStream message kept past max_deliver (REDELIVERY-21) is
stored too: a delete removes it and its num_redelivered entry, as its expiry does (nats-server
2.14.1 and later, bdf6c80d8 / nats-io/nats-server#8102; before that the entry stayed, a bug the model
does not have). The answer is whether a message was deleted.
"""

from __future__ import annotations

from ._core import BrokerCore
from .state import Ref


class DeleteMixin(BrokerCore):
    """DELIVERY-31..33: delete_message."""

    def delete_message(self, queue_name: str, msg_id: str) -> bool:
        """Delete message `msg_id` from the queue; False when the profile's scope does not hold it."""
        self._need("delete", "delete")
        queue = self._queue(queue_name)
        ref = queue.refs.get(msg_id)
        if ref is None or not self._deletable(ref):
            return False
        if ref.place == "pending":
            queue.pending.remove(ref.id)
            if queue.special:
                self._unlisted(queue, ref)
        elif ref.place == "scheduled":
            queue.scheduler.remove(ref)
        elif ref.place == "paged":
            queue.paged.remove(ref)
        elif ref.place == "exhausted":  # REDELIVERY-21: kept past max_deliver, still stored
            del queue.exhausted[ref.id]
            if self.options.removal_keeps_redelivered:  # a bug model (reference_model.bugs)
                from .bugs.nats_server_8102 import removed

                removed(queue, ref)
        elif not queue.nak_waiting.pop(ref.id, None):
            self._take_from_consumers(queue, ref)
        else:
            self._undeliver(queue, ref)
        reason = self.options.delete_counts  # DELIVERY-31: Artemis acks NORMAL, the others kill
        # a broker bug (reference_model.bugs.artemis_non_destructive_delete): a non-destructive queue
        # ignores that NORMAL ack's counter and bytes
        counted = not (self.options.non_destructive_delete_uncounted and queue.config.non_destructive
                       and reason == "acknowledged")
        self._terminate(queue, ref, reason, counted)
        self._event(reason, queue.name, ref.id, "deleted")
        self._settle(queue)
        return True

    def _deletable(self, ref: Ref) -> bool:
        """DELIVERY-31/34: listed messages under scope `listed`, any stored one under `stored`."""
        if self.options.delete_scope == "stored":
            return ref.place in ("pending", "delivering", "exhausted")
        return ref.place in ("pending", "scheduled", "paged")

