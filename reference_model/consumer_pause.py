"""Consumer pause: a queue's consumers deliver nothing until a deadline (DELIVERY-34).

JetStream pauses a consumer until ``pause_until`` (``$JS.API.CONSUMER.PAUSE``, nats-server 2.11+):
while paused a pull request is answered with no message, messages are still stored and acks, NAKs and
ack-wait timers go on; at the deadline delivery resumes in the usual order (what came back in the
meantime first, REDELIVERY-20). The model's consumers of one queue are one JetStream durable, so the
pause belongs to the queue; the deadline is on the logical clock.
"""

from __future__ import annotations

from ._core import BrokerCore
from .errors import ModelMisuse


class ConsumerPauseMixin(BrokerCore):
    """DELIVERY-34: pausing a queue's consumers."""

    def pause_consumers(self, queue_name: str, until_ms: int) -> None:
        """Pause the queue's consumers until the logical time `until_ms` (a past time resumes them)."""
        self._need("consumer_pause", "consumer pause")
        if until_ms < 0:
            raise ModelMisuse("a pause deadline is a logical time >= 0")
        queue = self._queue(queue_name)
        queue.paused_until = until_ms
        self._settle(queue)
