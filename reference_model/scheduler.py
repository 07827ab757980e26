"""The scheduled-delivery buffer of a queue (SCHED-3, SCHED-5, REDELIVERY-9).

Ordered by due time; on a tie head-type entries (redelivery delay, cancel) come before tail-type
entries (new sends), tail-type ties are FIFO and head-type ties are LIFO, as Artemis'
ScheduledDeliveryHandler comparator orders them. A heap: add and pop are O(log n).
"""

from __future__ import annotations

import heapq
from typing import Generic, TypeVar

T = TypeVar("T")


class Scheduler(Generic[T]):
    """Scheduled messages of one queue awaiting their due time."""

    def __init__(self) -> None:
        #: (due, band, tie, item) entries; public so the broker can test emptiness cheaply.
        self.heap: list[tuple[int, int, int, T]] = []
        self._counter = 0

    def __len__(self) -> int:
        return len(self.heap)

    def add(self, due_ms: int, item: T, head: bool) -> None:
        """Schedule `item` at `due_ms`; `head` marks a redelivery/cancel entry (SCHED-3)."""
        self._counter += 1
        tie = -self._counter if head else self._counter
        heapq.heappush(self.heap, (due_ms, 0 if head else 1, tie, item))

    def next_due(self) -> int | None:
        return self.heap[0][0] if self.heap else None

    def pop_due(self, now_ms: int) -> list[T]:
        """Remove every entry due at or before `now_ms`, in scheduler order (SCHED-4)."""
        due: list[T] = []
        while self.heap and self.heap[0][0] <= now_ms:
            due.append(heapq.heappop(self.heap)[3])
        return due

    def remove(self, item: T) -> None:
        """Take `item` out wherever it is due (a delete by id, SCHED-16's deliver now): O(n), as
        Artemis' own scan of its scheduled set (ScheduledDeliveryHandlerImpl#removeReferenceWithID,
        #cancel)."""
        self.heap = [entry for entry in self.heap if entry[3] is not item]
        heapq.heapify(self.heap)

    def items(self) -> list[T]:
        return [entry[3] for entry in sorted(self.heap, key=lambda e: e[:3])]
