"""Artemis: a scheduled message fired to a non-destructive queue makes every consumer walk the list again.

Artemis 2.18.0 to 2.56.0 (fails on 2.26.0, 2.40.0 and 2.56.0; the code is the same in 2.18.0; not reported
upstream yet: docs/findings/artemis-non-destructive-scheduled-reoffers.md). DELIVERY-12, LASTVALUE-8,
LASTVALUE-9. References at tag 2.40.0 of apache/artemis, artemis-server/.../core/server/impl/:

- Due scheduled messages reach the queue through QueueImpl#addHead(List, scheduling) (QueueImpl.java
  L877-L889): each goes to the head (addHead(ref, true), L828-L850; LastValueQueue#addHead tracks it as
  its value's current message first, LastValueQueue.java L78-L89), then ``resetAllIterators()`` (L884).
  Both ways in go there: the broker's timer (ScheduledDeliveryHandlerImpl.java L320) and
  QueueControl#deliverScheduledMessage, how the adapter fires a message at its logical due time
  (QueueImpl#internalDeliverScheduleMessages, L1921-L1933).
- resetAllIterators (L2647-L2652) closes every consumer's iterator and sets it to null
  (ConsumerHolder#resetIterator, L4084-L4089); the next delivery pass creates a new one at the head of
  the list (QueueImpl#deliver, L2935-L2937): a fresh PriorityLinkedListImpl iterator, highest priority
  first, with no repeat state (whatever the old one had been offered without credit is forgotten).
- On a non-destructive queue a delivered message stays listed (deliver skips removeMessageReference,
  L2997-L2999), so the new iterator offers the consumer every listed message again, and
  ServerConsumerImpl#handle (ServerConsumerImpl.java L458-L469) takes a message the consumer already
  holds without a look: a second delivery (deliveringRefs.add, delivery count + 1), counted delivering
  until it is settled or cancelled. On a destructive queue delivered messages have left the list and the
  reset changes nothing the model shows.

The model (option ``scheduled_fire_resets_iterators``; hook in Broker._fire_due): after due messages of a
non-destructive queue went to its head, every consumer's iterator (ConsumerState.unseen) is the whole
list again, from its head, and forgets the repeat state of artemis_linked_list_repeat (and, under
artemis_priority_removal's walk, its level: a new iterator starts at the top). A consumer given
a message it holds holds it twice (shared with that bug model: Broker._push keeps both copies in a
pushing consumer's buffer, in the order given; Broker.receive keeps the second as ConsumerState.copies,
delivering until a close, rollback or restart cancels it; an acknowledgement settles one, a second one
of the id fails; a received delivery shows the count it was sent with, Broker.delivery_count). The
artemis adapter's settle forgets, at a firing, what each consumer of the queue was offered
(adapters/artemis/settling.py, _fire): a consumer out of credit then is offered the list again only as
its credit returns, which the settle must wait for. Found on 2.40.0 by the lastvalue area, seeds
387410 and 989465 (the regression scenarios:
tests/adapters/scenarios/artemis-non-destructive-last-value-scheduled-reoffers.yaml and
artemis-non-destructive-scheduled-reoffers-seed-387410.yaml).
"""

from __future__ import annotations

from collections.abc import Callable

from ..pending import PendingList
from ..state import QueueState, Ref
from .model import BugModel

BUG = BugModel(
    name="artemis-non-destructive-scheduled-reoffers",
    key="Artemis QueueImpl#addHead(List, scheduling) resets every iterator (not yet filed)",
    option="scheduled_fire_resets_iterators",
    rules=("DELIVERY-12", "LASTVALUE-8", "LASTVALUE-9"),
    source="https://github.com/apache/artemis/blob/2.56.0/artemis-server/src/main/java/org/apache/"
           "activemq/artemis/core/server/impl/QueueImpl.java#L911-L924",
    releases=">=2.18",
    summary="a scheduled message that fires to the head of a non-destructive queue resets every "
            "consumer's iterator, so each consumer is given again every message the queue lists, "
            "a second copy of those it holds",
)


def reset(queue: QueueState, iterator_over: Callable[[QueueState], PendingList[Ref]]) -> None:
    """QueueImpl#resetAllIterators after addHead(List, scheduling): each consumer of the non-destructive
    `queue` starts again at the head of the list (`iterator_over`: a new consumer's iterator), with no
    message offered without credit."""
    for consumer in queue.consumers:
        if consumer.unseen is None:
            continue
        consumer.unseen = iterator_over(queue)
        consumer.repeating.clear()
        consumer.repeat_lags.clear()
