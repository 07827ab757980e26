"""Artemis: a removal below the top priority level sends the consumers' iterators below the top.

Artemis 2.24.0 to 2.56.0 (the regression scenario fails on 2.26.0 to 2.56.0, every served release from
2.26.0 replayed, and holds on 2.18.0 and 2.21.0; the prune came with ARTEMIS-3890 in 2.24.0). Found by
fresh seed 989465 (lastvalue area) on 2.40.0; not reported upstream yet (no Jira or GitHub
report found; ARTEMIS-4985's pull request apache/artemis#5142 discussed the same loop for the top
level only). DELIVERY-3. Regression scenario:
tests/adapters/scenarios/artemis-last-value-prune-skips-higher-priority.yaml; report text:
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

The model (:class:`IteratorWalk`, under the option ``priority_removal_lowers_highest``): the list's
``highestPriority``, ``lastPriority`` and reset count kept as PriorityLinkedListImpl keeps them, and
per consumer the level its iterator is at and the resets it has seen; a removal other than a ring's
poll runs removeLastElement's loop, and a reset puts an iterator at ``highestPriority``. Every add
resets the iterators here (checkHighest's same-priority shortcut is ARTEMIS-4985's and the ring
eviction's bug, their own models). A busy consumer's iterator moves to the first non-empty level at or
below its own at each delivery pass (QueueImpl#deliver asks it for its next message, L3024, and
repeat()s it, L3075); a consumer whose iterator finds nothing at or below its level is given the
top message (the broker gives it on its next delivery pass). Not distinguished: a removal by id
(removeWithID, which leaves ``highestPriority`` alone) is taken as an iterator's.
"""

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
                 exact_poll: bool = False) -> None:
        self.pending = pending
        self.top = levels - 1
        self.same_level_shortcut = same_level_shortcut
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
        """PriorityLinkedListImpl#checkHighest."""
        if not self.same_level_shortcut or level != self.last or level > self.highest:
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

    def _position(self, consumer: object, name: str) -> tuple[int, int]:
        """The iterator's level and seen resets after its checkReset (a new one starts at the top)."""
        known = self.iterators.get(name)
        if known is None or known[0] is not consumer:
            return self.top, self.resets
        _, index, seen = known
        if seen != self.resets:
            return (self.highest if self.reset_to_highest else self.top), self.resets
        return index, seen

    def _found(self, index: int) -> int | None:
        below = [level for level in self._listed() if level <= index]
        return max(below) if below else None

    def touch(self, consumer: object, name: str) -> None:
        """A busy consumer in a delivery pass: its iterator stops at the first non-empty level at or
        below its own (hasNext, then repeat), or, finding none, goes back to the top."""
        if not self.pending.level_of:
            return
        index, seen = self._position(consumer, name)
        found = self._found(index)
        self.iterators[name] = (consumer, self.top if found is None else found, seen)

    def next_for(self, consumer: object, name: str) -> Ref | None:
        """The message `consumer`'s iterator hands out: the head of the first non-empty level at or
        below its own, or, when there is none, of the top one."""
        listed = list(self.pending)
        if not listed:
            return None
        index, seen = self._position(consumer, name)
        found = self._found(index)
        level_of = self.pending.level_of
        if found is None:
            found = level_of[listed[0].id]
        ref = next(r for r in listed if level_of[r.id] == found)
        self.iterators[name] = (consumer, found, seen)
        return ref
