"""HornetQ 2.4: MessagesAdded counts a depaged message twice while it is delivering.

HornetQ 2.4.9.Final (measured; HornetQ is end-of-life, its code went to ActiveMQ Artemis, so not
reported upstream: docs/findings/hornetq-2.4-paging.md, finding 4). DELIVERY-9.
QueueImpl#getInstantMessagesAdded is ``messagesAdded + pageSubscription.getCounter().getValue() -
pagedReferences``. A paged message is counted by the page subscription's counter from its send until
its acknowledgement commits (PageSubscriptionImpl#ackTx: ``counter.increment(tx, -1)``). Its depage
(QueueImpl#depage -> addTail -> doInternalPoll) adds 1 to ``messagesAdded`` and, through #refAdded, 1 to
``pagedReferences``, which cancel out; but #deliver takes the reference out of ``pagedReferences``
again at dispatch (#refRemoved), so from then on the queue shows it twice. That ends when

- its acknowledgement commits (QueueImpl#acknowledge(ref) commits its own transaction at once; an
  acknowledgement in the session's transaction only at ClientSession#commit: until then the page
  counter still holds it), or it is dropped at max-delivery-attempts (acknowledged too), or
- it goes back to the queue: a consumer close (ServerConsumerImpl#cancelRefs) or a rollback
  (RefsOperation#afterRollback -> QueueImpl#postRollback -> #addHead -> #internalAddHead) calls
  #refAdded, which counts it in ``pagedReferences`` again.

Regression scenario: tests/adapters/scenarios/hornetq-2.4-messages-added-depaged-delivering.yaml.

The model: the queue's observed ``added`` counter adds the queue's messages that were paged (their
``page`` set) and are delivering (``place`` delivering: dispatched or received, or acknowledged in an
open transaction), Broker._depaged_in_delivery. Not modelled: a restart (the adapter offers none; the
broker reloads the page counter and its metrics start over), and the race when the acknowledgement
that commits ends page mode: the page cleanup's reset of the page counter
(PageSubscriptionImpl#onPageModeCleared -> PageSubscriptionCounterImpl#delete) can come before the
ack's own decrement of it (CounterOperations#afterCommit), and then ``added`` stays one below this
model's (a race of threads, which no deterministic model decides: finding 4, the race).
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="hornetq-2.4-messages-added-depaged-delivering",
    key="HornetQ 2.4 QueueImpl#getInstantMessagesAdded (not filed: end-of-life)",
    option="messages_added_counts_depaged_delivering",
    rules=("DELIVERY-9",),
    source="https://github.com/hornetq/hornetq/blob/HornetQ_2_4_9_Final/hornetq-server/src/main/java/org/"
           "hornetq/core/server/impl/QueueImpl.java#L1220-L1229",
    releases="2.4.9",
    summary="MessagesAdded counts a message that was paged and depaged once more from its dispatch to a "
            "consumer until its acknowledgement commits or it goes back to the queue",
)
