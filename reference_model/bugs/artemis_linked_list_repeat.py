"""Artemis: a non-destructive queue gives a consumer a message twice after its offered message left the list.

Artemis 2.18.0 to 2.56.0 (every served release replayed through a ring eviction; through a last-value
prune from 2.24.0, ARTEMIS-3890; not reported upstream yet:
docs/findings/artemis-non-destructive-ring-repeats-replaced.md). DELIVERY-12, RING-6, LASTVALUE-1.
Each consumer walks the queue's list with its own LinkedListImpl.Iterator (last, current, repeat;
references at tag 2.56.0 of apache/artemis, artemis-commons/.../utils/collections/LinkedListImpl.java).
QueueImpl#deliver asks a consumer without credit for its next message and, told BUSY, calls repeat()
(QueueImpl.java L3073-L3075): the iterator's current and last are that message, repeat is set. When
that node leaves the list (a ring eviction's poll, QueueImpl#enforceRing L4562; a last-value prune's
iter.remove, LastValueQueue#pruneLastValues L124-L133), removeAfter nudges every iterator whose current
it is (L382-L405): current moves on to the next node, or, at the tail, back to the previous one (last
follows it only if last was the removed node), or to null (L630-L650). Iterator#next's repeat branch
(L559-L574) returns current without setting last (the normal path sets ``last = e``, L587), so when
last lags, the call after it returns the same node again: a non-destructive queue, which keeps a
delivered message listed, delivers it to the consumer twice. Regression scenarios:
docs/findings/artemis-non-destructive-ring-repeats-replaced.yaml (ring) and
tests/adapters/scenarios/artemis-non-destructive-last-value-repeats-current.yaml (last-value).

The model (option ``repeat_after_removal_returns_twice``; hooks in Broker._deliver, _take, _unlisted and
_cancel_list): a consumer of a non-destructive queue found without credit while it has a message it has
not been given keeps that message's id (ConsumerState.repeating, per priority level); when that message
leaves the list, ``repeating`` moves to the next listed message of its priority (the iterator's last now
lags: repeat_lags), or back to the previous one, which the consumer is then given again, or to none
(lags): the next and previous listed messages by place in the list (PendingList.around_removed), not by
sequence, since a due scheduled message fired to the head has sequence 0 (2.40.0 ci run, lastvalue
area: m1 and m2 fired, m2 offered and pruned by m3 of priority 0, m1 given twice: regression scenario
tests/adapters/scenarios/artemis-non-destructive-last-value-scheduled-repeats-previous.yaml); a take while
``repeat_lags`` gives the message once more (it goes back to the head of what the
consumer has not been given); given it while it holds it, the consumer holds a second copy
(ConsumerState.copies: delivering until a close, rollback or restart cancels it; an ack settles one copy,
the second ack fails). PriorityLinkedListImpl keeps one such iterator per priority level
(PriorityLinkedListImpl.PriorityLinkedListIterator, cachedIters; repeat() goes to the level iterator last
used, L230-L236 at 2.40.0): the model keeps the repeat per level, a message of another level the consumer
is given meanwhile leaves it pending, and a lagging repeat gives twice only a message of its own level
(2.40.0, seed 387410: m1 at priority 4 offered, pruned by m2 of the same value at priority 0, which the
consumer received once; seed 662903: m1 at priority 4 and m2 at priority 9 offered, m2 pruned by m3 at
priority 9, which came twice).
Measured on 2.40.0 beyond the regression scenarios: a delete moves the iterator the same way (the
offered tail deleted, the one before it comes again; the offered head deleted, the next comes twice),
and a close cancels both copies.
"""

from __future__ import annotations

from ..state import ConsumerState, QueueState, Ref
from .model import BugModel

BUG = BugModel(
    name="artemis-non-destructive-ring-repeats-replaced",
    key="Artemis LinkedListImpl.Iterator#next repeat branch leaves last (not yet filed)",
    option="repeat_after_removal_returns_twice",
    rules=("DELIVERY-12", "RING-6"),
    source="https://github.com/apache/artemis/blob/2.56.0/artemis-commons/src/main/java/org/apache/"
           "activemq/artemis/utils/collections/LinkedListImpl.java#L555-L592",
    releases=">=2.18",
    summary="a consumer of a non-destructive queue receives a message twice when the message it had been "
            "offered without credit left the list (a ring eviction, a last-value prune)",
)


def busy(consumer: ConsumerState, head: Ref | None) -> None:
    """QueueImpl#deliver found `consumer` without credit: the iterator of its next message's level
    (`head`: the first it has not been given, or where the priority walk of
    artemis_priority_removal stopped; None: nothing) stops at it (repeat()); one a level's iterator
    already stopped at stays (the repeat branch returns it again)."""
    if consumer.unseen is not None and head is not None:
        consumer.repeating.setdefault(head.msg.priority, head.id)


def took(queue: QueueState, consumer: ConsumerState, ref: Ref) -> None:
    """`consumer` was given `ref` by its level's iterator: when that iterator's last lagged, the next
    call returns `ref` again; the other levels' iterators keep their repeat. Given it while it holds
    it, the consumer holds it twice (Broker._push keeps both in its buffer, Broker.receive the second
    as ConsumerState.copies): the second copy stays delivering until a close or rollback cancels it
    (an acknowledgement by id settles one copy; a second one fails, as measured on 2.40.0 through the
    adapter)."""
    level = ref.msg.priority
    if level in consumer.repeat_lags and consumer.unseen is not None and ref.id in queue.pending:
        consumer.unseen.add_head(ref, ref.size)
    consumer.repeat_lags.discard(level)
    consumer.repeating.pop(level, None)


def removed(queue: QueueState, ref: Ref) -> None:
    """`ref` left the list: LinkedListImpl nudges each iterator (of its level) whose current it was."""
    priority = ref.msg.priority
    for consumer in queue.consumers:
        if consumer.repeating.get(priority) != ref.id or consumer.unseen is None:
            continue
        around = queue.pending.around_removed(ref)
        if around is not None:  # by place in the list: a due scheduled message went to the head
            before, after = around
        else:
            level = [r for r in queue.pending if r.msg.priority == priority]
            after = [r for r in level if r.sequence > ref.sequence]
            before = [r for r in level if r.sequence < ref.sequence]
        if after:  # current = the next node; last still names the removed one
            consumer.repeating[priority] = after[0].id
            consumer.repeat_lags.add(priority)
        elif before:  # current = the previous node, given again (last follows only if it was ref)
            back = before[-1]
            consumer.repeating[priority] = back.id
            if back.id not in consumer.unseen:
                consumer.unseen.add_head(back, back.size)
        else:  # current = null: the repeat branch returns the level's first node, whatever it is then
            del consumer.repeating[priority]
            consumer.repeat_lags.add(priority)
