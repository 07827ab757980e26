"""Message groups (DELIVERY-49): the messages of one group go to one consumer of a queue.

Artemis (2.40.0 and 2.56.0 alike) keeps a map from group id to consumer per queue (QueueImpl#groups,
SimpleMessageGroups under the default group-buckets -1). The delivery loop offers the next pending
message to the consumer whose turn it is, unless the message's group has a consumer in the map
(QueueImpl#getGroupConsumer): then only that consumer may take it, and when it is busy (no credit) the
loop stops, so the messages behind it wait too (QueueImpl#deliver: ``if (groupConsumer != null) { if
(noDelivery > 0) break; }``). The first consumer that takes a message of a group not in the map becomes
the group's consumer (QueueImpl#handleMessageGroup: ``groups.put(groupID, consumer)``); a delivery to
a group's consumer leaves the rotation where it was (``consumers.repeat()``). A consumer's groups are
released when it leaves the queue (QueueImpl#removeConsumer: ``groups.removeIf(consumer::equals)``),
and the next consumer that takes one of their messages owns them. An exclusive queue ignores groups
(QueueImpl#extractGroupID answers null), as do messages without one. Not modelled: group-buckets,
group-rebalance, group-first-key, a group sequence of -1 (closes the group), management resetGroup.
"""

from __future__ import annotations

from ._core import BrokerCore
from .errors import Unsupported
from .state import ConsumerState, QueueState, Ref


class MessageGroupsMixin(BrokerCore):
    """DELIVERY-49: the group -> consumer map of a queue and what it means for dispatch."""

    def _grouping(self, queue: QueueState, ref: Ref) -> str | None:
        """The group `ref` is dispatched by in `queue` (None: dispatched as usual)."""
        group = ref.msg.group
        if group is None or queue.config.single_active_consumer or not self.options.has("message_groups"):
            return None
        return group

    def _check_group_send(self, queues: list[QueueState]) -> None:
        """A grouped send (DELIVERY-49, feature message_groups): not modelled on a non-destructive or
        last-value queue nor beside a consumer with a selector (each consumer's own iterator)."""
        self._need("message_groups", "group")
        for queue in queues:
            if queue.special or any(c.selector is not None for c in queue.consumers):
                raise Unsupported("message groups on a non-destructive or last-value queue or with selectors")

    def _group_owner(self, queue: QueueState, ref: Ref) -> ConsumerState | None:
        """The consumer that owns `ref`'s group in `queue` (None: none, or no group)."""
        group = self._grouping(queue, ref)
        return None if group is None else queue.groups.get(group)

    def _grouped_head(self, queue: QueueState) -> bool | None:
        """DELIVERY-49 at the head of a delivery pass: None when the head has no group consumer (the
        usual rotation serves it), True when it went to its group's consumer, False when that consumer
        is busy (the pass stops: nothing behind it is delivered either)."""
        head = queue.pending.peek()
        if head is None:
            return None
        owner = self._group_owner(queue, head)
        if owner is None:
            return None
        if not owner.has_room():
            return False
        queue.pending.remove(head.id)
        self._push(queue, owner, head)  # the rotation stays (consumers.repeat())
        return True

    def _group_taken(self, queue: QueueState, consumer: ConsumerState, ref: Ref) -> None:
        """The consumer that takes a message of a group without a consumer owns the group."""
        group = self._grouping(queue, ref)
        if group is not None and group not in queue.groups:
            queue.groups[group] = consumer

    def _group_admits(self, queue: QueueState, consumer: ConsumerState, ref: Ref | None) -> bool:
        """A pull: a message whose group another consumer owns is not given (that consumer, without
        credit, is busy and the broker's pass stops at it)."""
        if ref is None:
            return True
        owner = self._group_owner(queue, ref)
        return owner is None or owner is consumer

    @staticmethod
    def _release_groups(queue: QueueState, consumer: ConsumerState) -> None:
        """A consumer leaving the queue releases its groups (QueueImpl#removeConsumer)."""
        if queue.groups:
            for group in [g for g, owner in queue.groups.items() if owner is consumer]:
                del queue.groups[group]
