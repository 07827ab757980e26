"""A pull request for a batch of messages within a byte budget (DELIVERY-38..40, feature pull_batch).

JetStream's ``$JS.API.CONSUMER.MSG.NEXT`` with ``batch`` n, ``no_wait`` and ``max_bytes`` b: the
consumer's next messages in delivery order, as single receives would give them, at most n of them
(fewer when fewer are available, DELIVERY-38); each must fit in what is left of b, and the first that
does not ends the request and stays for the next one (a redelivery at the back of the redelivery
queue), even when a later message would fit (409 Message Size Exceeds MaxBytes, DELIVERY-39; the first
one too large: nothing, DELIVERY-40). b = 0
means no byte budget. A message's size is the model's ``size`` (the nats adapter makes the size the
server counts, subject, ack reply, headers and payload, just within size x 1 KiB).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import BrokerCore
from .errors import ModelMisuse

if TYPE_CHECKING:
    from .state import ConsumerState, QueueState, Ref


class PullBatchMixin(BrokerCore):
    """DELIVERY-38..40: one pull request for a batch."""

    if TYPE_CHECKING:
        def receive(self, consumer_name: str) -> str | None: ...  # delivery
        def _first_match(self, queue: QueueState, consumer: ConsumerState) -> Ref | None: ...  # delivery
        def _check_thresholds(self, queue: QueueState, min_pending: int,
                              min_ack_pending: int) -> None: ...  # priority_groups
        def _overflow_serves(self, queue: QueueState, ref: Ref, min_pending: int,
                             min_ack_pending: int) -> bool: ...  # priority_groups
        def _pin_admits(self, queue: QueueState, consumer: ConsumerState,
                        ref: Ref | None) -> bool: ...  # priority_groups

    def _next_pull(self, queue: QueueState, consumer: ConsumerState) -> Ref | None:
        """The message the consumer's next receive would take (None: none), without taking it."""
        if self.now_ms < queue.paused_until:
            return None
        self._take_exhausted(queue)
        if not consumer.under_unacked_limit(self._parked(queue)):
            return None
        return self._first_match(queue, consumer)

    def _put_back(self, queue: QueueState, ref: Ref) -> None:
        """DELIVERY-39, 40, 44: a message no waiting request takes stays the consumer's next one, but a
        redelivery goes to the back of the redelivery queue (consumer.go loopAndGatherMsgs:
        getNextToRedeliver took it off the front, addToRedeliverQueue appends it)."""
        if ref.id in queue.pending.returned_ids:
            queue.pending.requeue_returned(ref)
            if self.options.put_back_keeps_zero_redelivered and ref.delivery_count == 1:
                queue.rdc_zero.add(ref.id)  # a bug model (reference_model.bugs): decDeliveryCount

    def next_size(self, consumer_name: str) -> int | None:
        """The size of the message the consumer's next pull would take (None: none now)."""
        consumer = self._consumer(consumer_name)
        ref = self._next_pull(self._queue(consumer.config.queue), consumer)
        return None if ref is None else ref.size

    def fetch(self, consumer_name: str, batch: int, max_bytes: int = 0, min_pending: int = 0,
              min_ack_pending: int = 0) -> list[str]:
        """The ids one pull request with `batch` and `max_bytes` delivers, in order; with `min_pending`
        or `min_ack_pending` (an overflow queue's thresholds, DELIVERY-41..44) only while they hold."""
        self._need("pull_batch", "fetch")
        if batch < 1 or max_bytes < 0:
            raise ModelMisuse("a fetch has batch >= 1 and max_bytes >= 0")
        consumer = self._consumer(consumer_name)
        if not consumer.no_buffering or consumer.config.browser:
            raise ModelMisuse("fetch is a pull consumer's request")
        queue = self._queue(consumer.config.queue)
        self._check_thresholds(queue, min_pending, min_ack_pending)
        got: list[str] = []
        left = max_bytes
        while len(got) < batch:
            ref = self._next_pull(queue, consumer)
            if ref is None:
                if not got and queue.priority_policy == "pinned_client":
                    self._pin_admits(queue, consumer, None)  # DELIVERY-47: refused at the request
                break
            if not self._overflow_serves(queue, ref, min_pending, min_ack_pending):
                self._put_back(queue, ref)
                break  # DELIVERY-44: checked before max_bytes (consumer.go nextWaiting)
            if max_bytes:
                if ref.size > left:
                    self._put_back(queue, ref)
                    break  # DELIVERY-39/40: the request ends, the message stays
                left -= ref.size
            msg_id = self.receive(consumer_name)
            if msg_id is None:
                break  # DELIVERY-46/47: a pinned_client queue does not serve this client now
            assert msg_id == ref.id
            got.append(msg_id)
            if max_bytes and left == 0:
                break  # consumer.go nextWaiting: the budget spent, this one is the last
        return got
