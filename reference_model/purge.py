"""Purge: a queue drops its messages at once and answers how many (RING-29).

What a purge removes is the profile's ``purge_removes``: the ready (pending) messages only
(RabbitMQ queue.purge: rabbit_amqqueue_process purge / rabbit_fifo #purge{}; messages a consumer
holds stay and may return), or every stored message (JetStream stream purge: delivered and
unacknowledged ones too; the consumer's pending state is cleared, so an ack of one is answered and
changes nothing, DELIVERY-22). Purged messages are killed, never dead-lettered.
"""

from __future__ import annotations

from ._core import BrokerCore
from .state import Ref


class PurgeMixin(BrokerCore):
    """RING-29: purge."""

    def purge(self, queue_name: str) -> int:
        """Remove the queue's ready messages (or all stored ones, per profile); their number."""
        self._need("purge", "purge")
        queue = self._queue(queue_name)
        victims: list[Ref] = list(queue.pending)
        if self.options.purge_removes == "stored":
            victims = [ref for ref in queue.live.values()
                       if ref.place in ("pending", "delivering", "exhausted")]
        for ref in victims:
            if ref.place == "exhausted":  # REDELIVERY-21: kept past max_deliver, still stored
                del queue.exhausted[ref.id]
            elif ref.place == "pending":
                queue.pending.remove(ref.id)
                if queue.special:
                    self._unlisted(queue, ref)
            elif not queue.nak_waiting.pop(ref.id, None):
                self._take_from_consumers(queue, ref)
            else:
                self._undeliver(queue, ref)
            self._terminate(queue, ref, "killed")
            self._event("killed", queue.name, ref.id, "purged")
        if self.options.purge_removes == "stored":
            self._purged_past(queue)
        queue.rdc_removed.clear()  # a bug model's (nats_server_8102): o.rdc = nil, nothing pending
        self._settle(queue)
        return len(victims)
