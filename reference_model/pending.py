"""The pending list of a queue: priority levels, FIFO inside a level, head and sorted inserts.

DELIVERY-3 (10 levels, highest first, FIFO within a level), RING-6 (poll takes the head of the
highest non-empty level), RING-8/REDELIVERY-10 (sorted insert by the original per-queue sequence),
SCHED-4 (head inserts go in front of everything in their level). Each level is a binary heap keyed
by (band, n) with lazy deletion, so add, poll and remove are O(log n); ordered iteration (browse,
selector dispatch) and a sorted insert that lands between two messages are O(n log n). A sorted
insert takes a key strictly between its two neighbours (n a fraction), so it never disturbs the
order of what is already pending.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Generic, Protocol, TypeVar

from .errors import ModelMisuse


class HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=HasId)
T_co = TypeVar("T_co", bound=HasId, covariant=True)


class PendingWatch(Protocol[T_co]):
    """Told of every add to and removal from a pending list, and asked which message a consumer is
    handed next: the hook of a bug model that walks the list as a broker's iterators do
    (reference_model.bugs; None on every profile's model)."""

    def added(self, level: int) -> None: ...

    def removed(self, level: int) -> None: ...

    def polled(self, level: int) -> None: ...

    def touch(self, consumer: object, name: str) -> T_co | None:
        """A busy consumer's iterator in a delivery pass; the message it stopped at, if known."""

    def next_for(self, consumer: object, name: str) -> T_co | None: ...

_HEAD_BAND = 0
_RETURN_BAND = 1
_SEQ_BAND = 2
Key = tuple[int, int | Fraction]


class _Level(Generic[T]):
    """One priority level: a heap of (key, token, item); an entry is live while its token is current."""

    __slots__ = ("heap", "keys", "tokens")

    def __init__(self) -> None:
        self.heap: list[tuple[Key, int, T]] = []
        self.keys: dict[str, int] = {}
        self.tokens = 0

    def push(self, key: Key, item: T) -> None:
        self.tokens += 1
        self.keys[item.id] = self.tokens
        heapq.heappush(self.heap, (key, self.tokens, item))

    def _live(self, entry: tuple[Key, int, T]) -> bool:
        return self.keys.get(entry[2].id) == entry[1]

    def _settle(self) -> None:
        """Drop dead entries off the top; rebuild the heap when dead entries dominate."""
        heap, keys = self.heap, self.keys
        while heap:
            entry = heap[0]
            if keys.get(entry[2].id) == entry[1]:
                break
            heapq.heappop(heap)
        self.compact()

    def compact(self) -> None:
        """Rebuild the heap once dead entries outnumber live ones 3 to 1 (amortised O(1))."""
        heap = self.heap
        if len(heap) > 64 and len(heap) > 4 * len(self.keys):
            self.heap = [entry for entry in heap if self._live(entry)]
            heapq.heapify(self.heap)

    def peek(self) -> T | None:
        heap, keys = self.heap, self.keys
        while heap:
            entry = heap[0]
            if keys.get(entry[2].id) == entry[1]:
                return entry[2]
            heapq.heappop(heap)
        return None

    def pop(self) -> T:
        self._settle()
        _key, _token, item = heapq.heappop(self.heap)
        del self.keys[item.id]
        return item

    def ordered(self) -> list[T]:
        return [entry[2] for entry in self.ordered_entries()]

    def ordered_entries(self) -> list[tuple[Key, int, T]]:
        return [entry for entry in sorted(self.heap, key=lambda e: (e[0], e[1])) if self._live(entry)]


def _between(before: Key, after: Key) -> Key:
    """A key strictly between two adjacent keys (before < after) of one level. Across two bands it
    stays out of the redelivery queue's band, which :meth:`PendingList.returned` lists."""
    if before[0] == after[0]:
        return (after[0], Fraction(before[1]) + (Fraction(after[1]) - Fraction(before[1])) / 2)
    if after[0] == _RETURN_BAND:
        return (before[0], before[1] + 1)
    return (after[0], after[1] - 1)


class PendingList(Generic[T]):
    """Pending messages of one queue in delivery order."""

    def __init__(self, levels: int, priority_of: Callable[[T], int],
                 sequence_of: Callable[[T], int] | None = None) -> None:
        if levels < 1:
            raise ModelMisuse("a queue needs at least one priority level")
        self._levels: list[_Level[T]] = [_Level() for _ in range(levels)]
        self._by_priority = self._levels[::-1]
        self._priority_of = priority_of
        self._sequence_of = sequence_of
        #: id -> priority level of every pending message (public: a cheap emptiness/length test).
        self.level_of: dict[str, int] = {}
        self._head_counter = 0
        self._return_counter = 0
        #: ids in the redelivery queue (added with add_returned and still listed)
        self.returned_ids: set[str] = set()
        self.bytes = 0
        self._size_of: dict[str, int] = {}
        #: a bug model's walk of the list (see PendingWatch); None: the list is served in order
        self.watch: PendingWatch[T] | None = None
        #: how many inserts the list has had (a bug model tells from it whether anything was listed
        #: since it last looked: reference_model.bugs.artemis_last_value_direct)
        self.inserted = 0

    def _level(self, item: T) -> int:
        return min(max(self._priority_of(item), 0), len(self._levels) - 1)

    def __len__(self) -> int:
        return len(self.level_of)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self.level_of

    def _insert(self, item: T, key: Key, size: int) -> None:
        if item.id in self.level_of:
            raise ModelMisuse(f"message {item.id!r} is already pending")
        level = self._level(item)
        self._levels[level].push(key, item)
        self.level_of[item.id] = level
        self._size_of[item.id] = size
        self.bytes += size
        self.inserted += 1
        if self.watch is not None:
            self.watch.added(level)

    def add_tail(self, item: T, sequence: int, size: int) -> None:
        """Append at the tail of its level (sequence is the new per-queue sequence, C8)."""
        self._insert(item, (_SEQ_BAND, sequence), size)

    def add_sorted(self, item: T, sequence: int, size: int) -> None:
        """Insert by original sequence (a cancelled message returning to its place).

        DELIVERY-13 / REDELIVERY-10 / REDELIVERY-23 (placement ``sorted``), as Artemis'
        LinkedListImpl#addSorted: a sequence <= that of the head of its level goes to the head,
        whatever kind of insert put the head there (a due scheduled or delayed message keeps its
        sequence; one scheduled at send has 0); one >= the tail's goes to the tail; otherwise it goes
        in front of the first message after the head whose sequence is >= its own. So a message
        returned after earlier head inserts goes among them by sequence, not behind them.
        """
        sequence_of = self._sequence_of
        if sequence_of is None:
            self._insert(item, (_SEQ_BAND, sequence), size)
            return
        level = self._levels[self._level(item)]
        entries = level.ordered_entries()
        if not entries or sequence <= sequence_of(entries[0][2]):
            self.add_head(item, size)
            return
        tail_key = entries[-1][0]
        if sequence >= sequence_of(entries[-1][2]):
            after = tail_key[1] + 1 if tail_key[0] == _SEQ_BAND else sequence
            self._insert(item, (_SEQ_BAND, max(after, sequence)), size)
            return
        index = next(i for i in range(1, len(entries)) if sequence_of(entries[i][2]) >= sequence)
        self._insert(item, _between(entries[index - 1][0], entries[index][0]), size)

    def add_head(self, item: T, size: int) -> None:
        """Insert in front of everything in its level; the latest head insert comes first."""
        self._head_counter += 1
        self._insert(item, (_HEAD_BAND, -self._head_counter), size)

    def add_returned(self, item: T, size: int) -> None:
        """Append to the redelivery queue: behind earlier returns, ahead of every sequenced message of
        its level (JetStream -NAK, REDELIVERY-20)."""
        self._return_counter += 1
        self._insert(item, (_RETURN_BAND, self._return_counter), size)
        self.returned_ids.add(item.id)

    def requeue_returned(self, item: T) -> None:
        """Move a message of the redelivery queue to its back (DELIVERY-44)."""
        if item.id not in self.returned_ids:
            raise ModelMisuse(f"message {item.id!r} is not in the redelivery queue")
        size = self._size_of[item.id]
        self.remove(item.id)
        self.add_returned(item, size)

    def returned(self) -> list[T]:
        """The messages in the redelivery queue (added with add_returned), in delivery order."""
        found: list[T] = []
        for level in self._by_priority:
            live = [entry for entry in level.heap if entry[0][0] == _RETURN_BAND and level._live(entry)]
            found.extend(item for _, _, item in sorted(live, key=lambda entry: (entry[0], entry[1])))
        return found

    def peek(self) -> T | None:
        """The next message to deliver: head of the highest non-empty level."""
        for level in self._by_priority:
            if level.keys:
                return level.peek()
        return None

    def poll(self) -> T | None:
        """Remove and return the next message to deliver (RING-6)."""
        for level in self._by_priority:
            if level.keys:
                item = level.pop()
                self._forget(item.id, polled=True)
                return item
        return None

    def remove(self, item_id: str) -> None:
        """Remove a message anywhere in the list (selector dispatch, eviction of a stored message)."""
        level = self.level_of.get(item_id)
        if level is None:
            raise ModelMisuse(f"message {item_id!r} is not pending")
        holder = self._levels[level]
        del holder.keys[item_id]
        holder.compact()
        self._forget(item_id)

    def around_removed(self, item: T) -> tuple[list[T], list[T]] | None:
        """The live messages of `item`'s level before and after the place `item` had in the list
        (it was removed, its heap entry is dead but still held); None once the entry is gone (a
        compaction dropped it). The list order, not the sequence: a head insert (a due scheduled
        message, sequence 0) sits before later sequences (a bug model's iterator nudge,
        reference_model.bugs.artemis_linked_list_repeat)."""
        if item.id in self.level_of:
            return None
        holder = self._levels[self._level(item)]
        entries = [entry for entry in holder.heap if entry[2].id == item.id]
        if not entries:
            return None
        place = max(entries, key=lambda e: e[1])
        spot = (place[0], place[1])
        before: list[T] = []
        after: list[T] = []
        for key, token, other in holder.ordered_entries():
            (before if (key, token) < spot else after).append(other)
        return before, after

    def _forget(self, item_id: str, polled: bool = False) -> None:
        level = self.level_of.pop(item_id)
        self.returned_ids.discard(item_id)
        self.bytes -= self._size_of.pop(item_id)
        if self.watch is not None:
            if polled:
                self.watch.polled(level)
            else:
                self.watch.removed(level)

    def __iter__(self) -> Iterator[T]:
        for level in reversed(self._levels):
            if level.keys:
                yield from level.ordered()
