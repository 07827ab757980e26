"""ARTEMIS-4985's regression: a message added at priority p waits behind lower-priority messages.

Artemis 2.37.0 and later (bisected: 2.35.0 holds, 2.37.0 is the first release with commit ef3b5fa02c,
and the code is unchanged through 2.56.0). DELIVERY-3. The report:
docs/findings/artemis-priority-after-cancel.md.

A queue's pending messages are a PriorityLinkedListImpl; each consumer walks it with its own iterator,
which starts at the top level and moves down a level when its level is empty. An add sends the
iterators back to the top only through a reset counter, bumped by ``checkHighest`` when the priority
differs from the last added one or exceeds ``highestPriority``. Since ARTEMIS-4985 the loop in the
iterator's remove leaves ``highestPriority`` at the emptied level above the highest non-empty one, so
an add at that level, when the last add was at it too, resets nothing: a consumer whose iterator had
moved below it (asked for its next message while it had no credit, as QueueImpl#deliver does)
is handed the lower levels first and finds the new message only when it wraps to the top.

The model (:class:`PriorityWalk`, the pending list's watch under the option
``stale_priority_iterators``): a per-queue reset count, last added level and highest level kept as
that code keeps them, and per consumer the level its iterator is at. Exact for plain consumers of a
destructive queue (the walk is not used for selectors); a removal other than a delivery (expiry,
ring, purge) updates the highest level as the iterator's remove does, which the broker does through
other paths. On a non-destructive queue a consumer is kept in list order: there checkHighest's
same-level shortcut alone skips a consumer on every release (a delivered message stays listed, so
``highestPriority`` never drops), which is the bug artemis_non_destructive_priority_same_level, not
this one; with both held, that bug's walk runs this one's removal loop in a prune's remove. Eleven
FAILs of a 2.40.0 ``ci`` run's lastvalue area (a pull consumer given a lower message before the top
one's same-level successor) were taken as this bug's for a day, with a walk of such a consumer added
here; the story replays alike on 2.26.0 and 2.35.0, releases without 4985's change, and is the other
bug's.
"""

from __future__ import annotations

from ..pending import PendingList
from ..state import Ref
from .model import BugModel

BUG = BugModel(
    name="artemis-4985",
    key="ARTEMIS-4985",
    option="stale_priority_iterators",
    rules=("DELIVERY-3",),
    source="https://github.com/apache/activemq-artemis/commit/ef3b5fa02c905c503d6b4271b4ce0849600f0215",
    releases=">=2.37",
    summary="a message sent at priority p right after another add at p is delivered after the "
            "lower-priority messages already pending (the consumer's priority iterator is not reset)",
)


class PriorityWalk:
    """The consumers' priority iterators over one queue's pending list (see the module docstring)."""

    def __init__(self, pending: PendingList[Ref]) -> None:
        self.pending = pending
        #: PriorityLinkedListImpl#lastReset: bumped by an add that resets the iterators
        self.resets = 0
        #: lastPriority and highestPriority (-1: nothing added yet)
        self.last = -1
        self.highest = -1
        #: consumer name -> (the consumer, its iterator's level, the resets it has seen)
        self.iterators: dict[str, tuple[object, int, int]] = {}

    def _empty(self, level: int) -> bool:
        return level not in self.pending.level_of.values()

    def added(self, level: int) -> None:
        """PriorityLinkedListImpl#checkHighest."""
        if level != self.last or level > self.highest:
            self.resets += 1
        self.last = level
        self.highest = max(self.highest, level)

    def removed(self, level: int) -> None:
        """The iterator's remove (ARTEMIS-4985's loop: highestPriority ends at the lowest of the
        emptied levels from `level` down), then every iterator whose level is now empty moves down to
        the next non-empty one (QueueImpl#deliver asks each consumer's iterator for its next message,
        and a busy consumer's iterator stays there: repeat())."""
        at = level
        while at >= 0 and self._empty(at):
            self.highest = at
            at -= 1
        levels = set(self.pending.level_of.values())
        for name, (consumer, where, seen) in list(self.iterators.items()):
            if seen == self.resets and where not in levels:
                lower = [lv for lv in levels if lv < where]
                if lower:
                    self.iterators[name] = (consumer, max(lower), seen)

    def polled(self, level: int) -> None:
        """A ring's poll: as any other removal here."""
        self.removed(level)

    def touch(self, consumer: object, name: str) -> None:
        """A busy consumer in a delivery pass: followed by :meth:`removed` here."""

    def next_for(self, consumer: object, name: str) -> Ref | None:
        """The message `consumer`'s iterator hands out next: the first at or below its level, or,
        when nothing is left there, the first from the top (it wraps); from the top after a reset or
        for a new consumer."""
        listed = list(self.pending)
        if not listed:
            return None
        known = self.iterators.get(name)
        level_of = self.pending.level_of
        ref = listed[0]
        if known is not None and known[0] is consumer and known[2] == self.resets:
            ref = next((r for r in listed if level_of[r.id] <= known[1]), ref)
        self.iterators[name] = (consumer, level_of[ref.id], self.resets)
        return ref
