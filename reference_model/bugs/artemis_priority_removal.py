"""Artemis: a removal below the top priority level sends the consumers' iterators below the top.

Artemis 2.24.0 to 2.56.0 (the regression scenario fails on 2.26.0 to 2.56.0, every served release from
2.26.0 replayed, and holds on 2.18.0 and 2.21.0; the prune came with ARTEMIS-3890 in 2.24.0). Found by
fresh seed 989465 (lastvalue area) on 2.40.0; not reported upstream yet (no Jira or GitHub
report found; ARTEMIS-4985's pull request apache/artemis#5142 discussed the same loop for the top
level only). DELIVERY-3, DELIVERY-12. Regression scenarios:
tests/adapters/scenarios/artemis-last-value-prune-skips-higher-priority.yaml (destructive) and
artemis-non-destructive-last-value-prune-skips-higher-priority.yaml (non-destructive, the same seed's
lastvalue-3 to lastvalue-9 on 2.40.0); report text:
docs/findings/artemis-last-value-prune-skips-higher-priority.md.

A queue's pending messages are a PriorityLinkedListImpl (apache/artemis 2.56.0,
artemis-commons/.../utils/collections/PriorityLinkedListImpl.java). Its iterator's removeLastElement
(L306-L321) lowers ``highestPriority`` with ``for (int i = index; i >= 0 && levels[i].size() == 0; i--)
highestPriority = i;``: from the iterator's own level down, whatever the levels above hold. An iterator
that removes below the top is LastValueQueue#pruneLastValues' (LastValueQueue.java L124-L141, a fresh
iterator walking the whole list, since ARTEMIS-3890 in 2.24.0): pruning a superseded message at level
4 while level 9 holds its successor leaves ``highestPriority`` at 0. The next add that resets the
iterators (checkHighest, L61-L74) sets it to the add's level only, and every consumer's iterator
restarts there (checkReset, L254-L260: ``index = highestPriority``), below the level-9 message, which a
consumer then gets only after everything from that level down.

A non-destructive queue is the same: its consumers walk the same list, each with its own iterator
(QueueImpl#deliver, QueueImpl.java L3004-L3007 at 2.56.0: ``holder.iter = messageReferences.iterator()``),
which delivery only moves past a message (it skips removeMessageReference on a non-destructive queue,
L3066-L3068; LastValueQueue#addTail, L71-L77, never delivers directly there), and pruneLastValues
removes a superseded message through its own iterator of that list as on a destructive queue. The
lowered ``highestPriority`` and the next add's reset send each consumer's iterator below the
higher-priority message it has not been given yet (2.40.0, seed 989465: m3 before m2; a receive of
three, with the level-4 iterator's repeat left by the prune of m1, gives m3, m3, m4).

The model (:class:`IteratorWalk`, under the option ``priority_removal_lowers_highest``): the list's
``highestPriority``, ``lastPriority`` and reset count kept as PriorityLinkedListImpl keeps them, and per
consumer the level its iterator is at and the resets it has seen; a removal other than a ring's poll runs
removeLastElement's loop, and a reset puts an iterator at ``highestPriority``. Every add resets the
iterators here (checkHighest's same-priority shortcut is part of ARTEMIS-4985's, the ring eviction's and
the non-destructive same-level add's bugs, their own models), except on a destructive queue while the loop
has left ``highestPriority`` below a listed level: there the shortcut is this bug's to show (an add at the
last add's level resets nothing; a 2.40.0 ci story of 2026-11-30). A busy consumer's iterator moves to the
first non-empty level at or below its own at each delivery pass (QueueImpl#deliver asks it for its next
message, L3024, and repeat()s it, L3075); a consumer whose iterator finds nothing at or below its level
gets nothing in that pass and its iterator goes back to the top (hasNext, L263-L289 of
PriorityLinkedListImpl, wraps and answers false; QueueImpl#deliver ends the pass once every consumer
answered nothing, and a later pass, or this one after another consumer took a message, hands out the top;
a pull consumer's receive ends with a drain, whose own pass is that later one). A consumer of a
non-destructive queue walks what it has not been given (ConsumerState.unseen, whose watch is its
:class:`ConsumerIterator`) with the list's shared bookkeeping, under this module's option, ARTEMIS-4985's
or artemis_non_destructive_priority_same_level's (the ring eviction's model alone keeps a non-destructive
consumer in list order: not replayed there); a busy one's iterator stopping at a message is where
artemis_linked_list_repeat's repeat is set, and a new iterator (a new consumer;
QueueImpl#resetAllIterators after a scheduled message fires, on every queue: clock._fire_due;
artemis_scheduled_resets_iterators for what it does on a non-destructive one) starts at the top. Not
distinguished: a removal by id (removeWithID, which leaves ``highestPriority`` alone) is taken as an
iterator's."""

from __future__ import annotations

from ..pending import PendingList
from ..state import Ref
from .model import BugModel

BUG = BugModel(
    name="artemis-priority-removal-lowers-highest",
    key="Artemis PriorityLinkedListImpl iterator removeLastElement below the top level (not yet filed)",
    option="priority_removal_lowers_highest",
    rules=("DELIVERY-3",),
    source="https://github.com/apache/artemis/blob/002fc7a084/artemis-commons/src/main/java/org/apache/"
           "activemq/artemis/utils/collections/PriorityLinkedListImpl.java#L305-L321",
    releases=">=2.24",
    summary="a last-value prune (an iterator's remove below the top level) lowers highestPriority "
            "below a pending higher-priority message, and the next add restarts every consumer's "
            "iterator there: the higher-priority message is delivered after lower ones",
)


class IteratorWalk:
    """The consumers' iterators over one queue's PriorityLinkedListImpl, with one or more of its bugs
    (each off is the list as it should behave):

    - `same_level_shortcut` (ARTEMIS-4985's regression and the ring eviction's bug): an add at the
      last add's level, not above ``highestPriority``, resets no iterator;
    - `removal_loop` (this module's bug; ARTEMIS-4985's): an iterator's remove that empties its level
      sets ``highestPriority`` to the lowest emptied level from there down; off: to the highest
      non-empty level;
    - `reset_to_highest` (this module's bug): a reset puts an iterator at ``highestPriority``; off: at
      the top (where the highest message is);
    - `exact_poll` (the ring eviction's bug): a poll (QueueImpl#enforceRing) lowers
      ``highestPriority`` by one when it empties that very level and leaves ``lastPriority``; off: to
      the highest non-empty level.
    """

    def __init__(self, pending: PendingList[Ref], levels: int, *, same_level_shortcut: bool = False,
                 removal_loop: bool = False, reset_to_highest: bool = False,
                 exact_poll: bool = False, shortcut_under_listed: bool = False) -> None:
        self.pending = pending
        self.top = levels - 1
        self.same_level_shortcut = same_level_shortcut
        self.shortcut_under_listed = shortcut_under_listed
        self.removal_loop = removal_loop
        self.reset_to_highest = reset_to_highest
        self.exact_poll = exact_poll
        #: PriorityLinkedListImpl#lastReset, lastPriority, highestPriority (-1: nothing added yet)
        self.resets = 0
        self.last = -1
        self.highest = -1
        #: consumer name -> (the consumer, its iterator's level, the resets it has seen)
        self.iterators: dict[str, tuple[object, int, int]] = {}

    def _listed(self) -> set[int]:
        return set(self.pending.level_of.values())

    def added(self, level: int) -> None:
        """PriorityLinkedListImpl#checkHighest (its same-level shortcut: with `same_level_shortcut`,
        or, `shortcut_under_listed`, while ``highestPriority`` is below a listed level)."""
        shortcut = self.same_level_shortcut or (
            self.shortcut_under_listed and self.highest < max(self._listed(), default=-1))
        if not shortcut or level != self.last or level > self.highest:
            self.resets += 1
        self.last = level
        self.highest = max(self.highest, level)

    def removed(self, level: int) -> None:
        """An iterator's remove (a delivery, a prune, an expiry, a purge, a delete)."""
        listed = self._listed()
        if level in listed:
            return
        if self.removal_loop:
            at = level
            while at >= 0 and at not in listed:
                self.highest = at
                at -= 1
        else:
            self.highest = max(listed, default=-1)

    def polled(self, level: int) -> None:
        """PriorityLinkedListImpl#poll (a ring's eviction)."""
        listed = self._listed()
        if self.exact_poll:
            if level not in listed and self.highest == level:
                self.highest -= 1
        elif level not in listed:
            self.highest = max(listed, default=-1)

    def iterator(self, unseen: PendingList[Ref]) -> ConsumerIterator:
        """A consumer's iterator over a non-destructive queue's list (`unseen`: what it has not been
        given yet, ConsumerState.unseen), sharing this list's ``highestPriority`` and resets."""
        return ConsumerIterator(self, unseen)

    def _position(self, consumer: object, name: str,
                  iterators: dict[str, tuple[object, int, int]]) -> tuple[int, int]:
        """The iterator's level and seen resets after its checkReset (a new one starts at the top)."""
        known = iterators.get(name)
        if known is None or known[0] is not consumer:
            return self.top, self.resets
        _, index, seen = known
        if seen != self.resets:
            return (self.highest if self.reset_to_highest else self.top), self.resets
        return index, seen

    @staticmethod
    def _found(index: int, over: PendingList[Ref]) -> int | None:
        below = [level for level in set(over.level_of.values()) if level <= index]
        return max(below) if below else None

    def walk(self, consumer: object, name: str, over: PendingList[Ref],
             iterators: dict[str, tuple[object, int, int]], *,
             wraps_when_empty: bool = False, again: bool = False) -> Ref | None:
        """Move `consumer`'s iterator (its level and seen resets in `iterators`) over the messages of
        `over` it can still be given: to the first non-empty level at or below its own (hasNext),
        and return that level's head. Finding none, the iterator goes back to the top and answers
        nothing in this pass (hasNext wrapped: a consumer with credit gets the top message in a later
        pass); `again`, for a pull consumer (no buffering: the adapter's receive is one credit and a
        drain), that later pass is the drain's own (ServerConsumerImpl#forceDelivery ->
        promptDelivery, L687-L688 at 2.40.0), in the same receive: the top message. With nothing in
        `over`, the iterator is left alone (QueueImpl#deliver asks no iterator of an empty queue), or,
        `wraps_when_empty`, goes back to the top (hasNext ran down every level)."""
        listed = list(over)
        if not listed:
            if wraps_when_empty:
                iterators[name] = (consumer, self.top, self._position(consumer, name, iterators)[1])
            return None
        index, seen = self._position(consumer, name, iterators)
        found = self._found(index, over)
        level_of = over.level_of
        if found is None:
            iterators[name] = (consumer, self.top, seen)
            if not (again and getattr(consumer, "no_buffering", False)):
                return None
            # a pull's receive ends with a drain, whose ServerConsumerImpl#forceDelivery runs another
            # pass (promptDelivery): the iterator, wrapped to the top, hands out the top message
            found = self._found(self.top, over)
            if found is None:
                return None
        iterators[name] = (consumer, found, seen)
        return next(r for r in listed if level_of[r.id] == found)

    def touch(self, consumer: object, name: str) -> Ref | None:
        """A busy consumer in a delivery pass: its iterator stops at the first non-empty level at or
        below its own (hasNext, then repeat), or, finding none, goes back to the top; the message it
        stopped at."""
        return self.walk(consumer, name, self.pending, self.iterators)

    def next_for(self, consumer: object, name: str) -> Ref | None:
        """The message `consumer`'s iterator hands out: the head of the first non-empty level at or
        below its own, or, when there is none, nothing (its iterator goes back to the top)."""
        return self.walk(consumer, name, self.pending, self.iterators, again=True)


class ConsumerIterator:
    """One consumer's PriorityLinkedListIterator over a non-destructive queue's list: its walk of the
    messages it has not been given (ConsumerState.unseen, whose watch it is) with the list's shared
    ``highestPriority`` and resets (:class:`IteratorWalk`, the queue's pending list's watch). The
    consumer's adds to and removals from `unseen` are its own progress, not the list's: the list tells
    :class:`IteratorWalk` of its own. A new one (a new consumer, or QueueImpl#resetAllIterators)
    starts at the top."""

    def __init__(self, walk: IteratorWalk, unseen: PendingList[Ref]) -> None:
        self.walk = walk
        self.unseen = unseen
        self.iterators: dict[str, tuple[object, int, int]] = {}

    def added(self, level: int) -> None:
        """The consumer's iterator moved back over a message (the list's add is told elsewhere)."""

    def removed(self, level: int) -> None:
        """The consumer's iterator moved past a message (the list's removal is told elsewhere)."""

    def polled(self, level: int) -> None:
        """As :meth:`removed`."""

    def touch(self, consumer: object, name: str) -> Ref | None:
        """As IteratorWalk.touch, over what the consumer has not been given."""
        return self.walk.walk(consumer, name, self.unseen, self.iterators, wraps_when_empty=True)

    def next_for(self, consumer: object, name: str) -> Ref | None:
        """As IteratorWalk.next_for, over what the consumer has not been given."""
        return self.walk.walk(consumer, name, self.unseen, self.iterators, wraps_when_empty=True, again=True)
