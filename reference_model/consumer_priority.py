"""Consumer priorities and single active consumer: which of a queue's consumers may be offered the
next message.

Implements DELIVERY-25 (a consumer's `priority`: consumers of higher priority are offered messages
first while they have room, the profile's consumer_rotation (DELIVERY-24) ordering consumers of equal
priority, under cursor_per_priority with a cursor per priority level) and DELIVERY-26 (a queue
declared `single_active_consumer`: only its active consumer is offered messages; when it goes, the
profile's `single_active_next` picks the next one, under `priority_takeover` a new consumer of higher
priority takes over at once, and under `dispatch` the active one is whichever consumer a dispatch
serves while none is active).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import BrokerCore
from .errors import Unsupported
from .state import ConsumerState, QueueState


class ConsumerOrderMixin(BrokerCore):
    """Subscription bookkeeping for DELIVERY-25/26 and the dispatch order it gives `_deliver`."""

    if TYPE_CHECKING:
        def _release_groups(self, queue: QueueState, consumer: ConsumerState) -> None: ...  # message_groups

    def _check_consumer(self, queue: QueueState, consumer: ConsumerState) -> None:
        """The profile has what the consumer asks for (before it exists)."""
        if consumer.config.priority != 0:
            self._need("consumer_priority", "priority")
        if queue.config.single_active_consumer and consumer.no_buffering and not consumer.config.browser:
            raise Unsupported("a pull consumer on a single_active_consumer queue")

    def _subscribe(self, queue: QueueState, consumer: ConsumerState) -> None:
        """Add a (non-browsing) consumer to the queue's rotation, in registration order."""
        if consumer.config.priority != 0:
            queue.prioritised = True
        self._registrations += 1
        consumer.registered = self._registrations
        queue.consumers.append(consumer)
        if self.options.cursor_restarts_on_add and self.options.consumer_rotation == "cursor":
            queue.next_consumer = 0  # DELIVERY-24: Artemis QueueConsumersImpl#add, a fresh iterator
            queue.level_served.clear()  # DELIVERY-25: every level's iterator is new
        if queue.config.single_active_consumer and queue.active is None and not self._at_dispatch():
            queue.active = consumer  # DELIVERY-26: the first consumer is the active one
        elif queue.config.single_active_consumer and self._takes_over(queue.active, consumer):
            queue.active = consumer

    def _takes_over(self, active: ConsumerState | None, consumer: ConsumerState) -> bool:
        """DELIVERY-26 priority_takeover (ActiveMQ Queue#addSubscription): a new exclusive consumer of
        higher priority than the active one (or of priority 127) takes over at once; what the previous
        one was dispatched stays with it."""
        if self.options.single_active_next != "priority_takeover" or active is None:
            return False
        return consumer.config.priority > active.config.priority or consumer.config.priority == 127

    def _unsubscribe(self, queue: QueueState, consumer: ConsumerState) -> None:
        """Take a consumer out of the rotation; DELIVERY-26: an active consumer hands over."""
        queue.consumers.remove(consumer)
        queue.next_consumer = 0
        queue.level_served.clear()
        self._release_groups(queue, consumer)  # DELIVERY-49
        if queue.active is consumer:
            queue.active = self._next_active(queue)

    def _next_active(self, queue: QueueState) -> ConsumerState | None:
        """DELIVERY-26 single_active_next: the earliest registered waiting consumer ("registration",
        rabbit_fifo's waiting list) or the highest priority, earliest registered among equals
        ("priority", rabbit_queue_consumers:get_consumer over the consumers' priority queue;
        "priority_takeover", ActiveMQ Queue#removeSubscription: the first of the highest priority in
        its consumer list, sorted by priority and otherwise in subscription order, since
        Queue#doActualDispatch never rotates the exclusive consumer it served, DELIVERY-24)."""
        if not queue.consumers or self._at_dispatch():
            return None  # "dispatch": the next dispatch picks it (_served)
        if self.options.single_active_next in ("priority", "priority_takeover"):
            return min(queue.consumers, key=lambda c: (-c.config.priority, c.registered))
        return min(queue.consumers, key=lambda c: c.registered)

    def _dispatch_order(self, queue: QueueState) -> list[int]:
        """Indexes of the consumers to offer the next message to, in order: DELIVERY-26 only the
        active consumer, or with none active yet ("dispatch") the consumer list's order, whatever the
        rotation (QueueConsumersImpl#add and #remove give the dispatch loop a new iterator from the
        first consumer); DELIVERY-25 higher priority first, the rotation's order among equals."""
        consumers = queue.consumers
        if queue.active is not None:
            return [consumers.index(queue.active)]
        n = len(consumers)
        if queue.config.single_active_consumer:  # "dispatch": none active yet, the consumer list's order
            return sorted(range(n), key=lambda i: (-consumers[i].config.priority, consumers[i].registered))
        if self.options.cursor_per_priority and self.options.consumer_rotation == "cursor":
            return self._level_order(queue)
        start = queue.next_consumer if self.options.consumer_rotation == "cursor" else 0
        order = [(start + k) % n for k in range(n)]
        return sorted(order, key=lambda i: -consumers[i].config.priority)  # stable: rotation kept

    @staticmethod
    def _level_order(queue: QueueState) -> list[int]:
        """DELIVERY-25 cursor_per_priority (Artemis): the levels highest first, each from just past
        its consumer served last, in registration order (PriorityCollection's levels, each an
        ArrayResettableIterator over a CopyOnWriteArraySet; MultiResettableIterator)."""
        consumers = queue.consumers
        levels: dict[int, list[int]] = {}
        for i in sorted(range(len(consumers)), key=lambda i: consumers[i].registered):
            levels.setdefault(consumers[i].config.priority, []).append(i)
        order: list[int] = []
        for priority in sorted(levels, reverse=True):
            level = levels[priority]
            last = queue.level_served.get(priority)
            start = 0 if last is None else next(
                (k for k, i in enumerate(level) if consumers[i].registered > last), 0)
            order += level[start:] + level[:start]
        return order

    def _at_dispatch(self) -> bool:
        """DELIVERY-26 single_active_next "dispatch" (Artemis exclusive queues): no consumer is made
        active at a subscription or a close; the next dispatch makes one (:meth:`_served`)."""
        return self.options.single_active_next == "dispatch"

    @staticmethod
    def _served(queue: QueueState, consumer: ConsumerState) -> None:
        """DELIVERY-26 "dispatch": the consumer a dispatch serves while a single_active_consumer queue
        has no active one becomes it (QueueImpl#handleMessageGroup sets exclusiveConsumer), the first
        with room in :meth:`_dispatch_order`; it stays active until it goes."""
        if queue.config.single_active_consumer and queue.active is None:
            queue.active = consumer
