"""Pull consumer priority groups: the overflow policy (DELIVERY-41..44, feature priority_overflow)
and the pinned_client policy (DELIVERY-45..47, feature priority_pinned).

JetStream's ADR-42: a durable consumer with ``priority_groups`` [g] and ``priority_policy`` overflow (a
queue of a stream address joined with ``priority: overflow``) serves a pull request that names
``min_pending`` n only while its num_pending, counting the message about to be delivered, is at least
n (DELIVERY-41), one that names ``min_ack_pending`` n only while num_ack_pending is at least n
(DELIVERY-42), and one that names both when either holds (DELIVERY-43). The thresholds are weighed
before each message of the request; a message the request is not given stays the consumer's next one
(a redelivery goes to the back of the redelivery queue, :meth:`PullBatchMixin._put_back`) and the
request ends (DELIVERY-44). Weighing
reads the durable's counters as :meth:`consumer_state` does: linear in the messages the queue holds,
and only for a request that names a threshold.

A queue joined with ``priority: pinned_client`` serves one pull client at a time: with no pin, the
first client without a pin id whose request finds a message is pinned (its messages carry the new id,
which it names from then on, DELIVERY-45); while a pin holds, only requests naming it are served, a
client without an id gets nothing (DELIVERY-46), and one naming an older id is refused and forgets it
(423; with no pin only once a message is there to take, DELIVERY-47). ``unpin`` clears the pin
(``$JS.API.CONSUMER.UNPIN``). The pin's timeout (``priority_timeout``) is longer than any example.

A request the pin turns away once a message is there (DELIVERY-46: cycled; DELIVERY-47 with no pin:
423 Nats-Wrong-Pin-Id) was weighed against a message the server had already taken, so that message
is put back as for DELIVERY-44: a redelivery goes to the back of the redelivery queue, once per such
request (nats-server v2.14.5 server/consumer.go nextWaiting L4339-L4361 returns no request;
loopAndGatherMsgs L5380-L5396 addToRedeliverQueue; the same in 2.11.0; observed on 2.15.1). A 423
at the request itself, while another pin holds, takes no message and moves none
(processNextMsgRequest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import BrokerCore
from .errors import ModelMisuse

if TYPE_CHECKING:
    from .state import ConsumerState, QueueState, Ref

#: ADR-42 priority policies the model has, each with its feature
PRIORITY_POLICIES = {"overflow": "priority_overflow", "pinned_client": "priority_pinned"}


class PriorityGroupsMixin(BrokerCore):
    """DELIVERY-41..44: the overflow priority policy of a stream address's queue."""

    if TYPE_CHECKING:
        def _consumer_counters(self, queue: QueueState) -> dict[str, int]: ...  # stream_state
        def _put_back(self, queue: QueueState, ref: Ref) -> None: ...  # pull_batch

    def _check_priority(self, priority: str | None) -> None:
        """A queue's priority policy needs the feature and one of PRIORITY_POLICIES."""
        if priority is None:
            return
        if priority not in PRIORITY_POLICIES:
            raise ModelMisuse(f"unknown priority policy {priority!r}")
        self._need(PRIORITY_POLICIES[priority], f"priority {priority}")

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
        if self.options.overflow_needs_every_threshold:  # a bug model (bugs.nats_server_7795)
            return ((min_pending <= 0 or pending >= min_pending)
                    and (min_ack_pending <= 0 or counts["num_ack_pending"] >= min_ack_pending))
        return ((min_pending > 0 and pending >= min_pending)
                or (min_ack_pending > 0 and counts["num_ack_pending"] >= min_ack_pending))

    def _pin_admits(self, queue: QueueState, consumer: ConsumerState, ref: Ref | None) -> bool:
        """DELIVERY-45..47: whether a pull request of `consumer` on a pinned_client queue is served
        now (`ref`: the message there for it, None: none); pins it or makes it forget an older id. A
        request turned away in nextWaiting puts `ref` back (a redelivery to the back, DELIVERY-44)."""
        if queue.pinned is None:
            if ref is None:
                return False  # nextWaiting runs only for a message: the request waits
            if consumer.pin is not None:
                consumer.pin = None  # nextWaiting: 423 Nats-Wrong-Pin-Id, the request removed
                self._put_back(queue, ref)  # loopAndGatherMsgs: no waiting request took it
                return False
            queue.pins += 1
            queue.pinned = consumer.pin = queue.pins
            return True
        if consumer.pin == queue.pinned:
            return ref is not None
        if consumer.pin is not None:
            consumer.pin = None  # 423 Nats-Pin-Id mismatch (processNextMsgRequest): no message taken
        elif ref is not None:
            self._put_back(queue, ref)  # nextWaiting cycles the request: no waiting request took it
        return False

    def unpin(self, queue_name: str) -> None:
        """DELIVERY-45: ``$JS.API.CONSUMER.UNPIN``: the queue's pin is cleared (its client keeps
        naming the old id until a request of it is refused)."""
        self._need("priority_pinned", "unpin")
        queue = self._queue(queue_name)
        if queue.priority_policy != "pinned_client":
            raise ModelMisuse(f"queue {queue_name!r} is not of the pinned_client priority policy")
        queue.pinned = None
