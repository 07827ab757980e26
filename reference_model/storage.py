"""A Stratus VOS message-queue file: storage that remembers (seed S0, spec/storage.yaml).

Implements STORAGE-1 .. STORAGE-5, STORAGE-7 .. STORAGE-11 and STORAGE-13; STORAGE-6 (the VOS cost
model) is reported as a counter, never reproduced: every operation here is O(1) (amortised for the
FIFO read), whatever the number of deleted records of one length.

Decisions (each is the model's documented reading of the seed):

* ``used_bytes`` is the **virgin-space mark**: the offset of the first never-written byte. It only
  grows (STORAGE-3) until a truncation resets it to 0 (STORAGE-9), and it always equals the bytes of
  live messages plus the bytes of free slots.
* Capacity is ``max_bytes * extent_size`` bytes (STORAGE-11; ``extent_size`` 1 is a non-extent
  file). ``block_size`` does not enter the capacity and does not pad messages (the index keys are
  byte lengths); it only converts ``used_bytes`` into ``blocks_used``, the figure ``display_file``
  prints (the seed's 520,201 blocks).
* ``round_to`` (the seed's advice) rounds every length **up** before it is stored: an int ``R``
  rounds to the next multiple of ``R``; a sequence of standard sizes rounds to the smallest one that
  fits (a longer message keeps its exact length). ``None`` stores exact lengths.
* ``remove`` of an id that is not live (never added, or already removed) returns
  ``e$record_not_found`` and changes nothing.
* ``live`` is the number of live messages; ``free_slots`` the number of reusable slots (one
  ``_record_index`` entry per freed position, STORAGE-4); ``index_entries`` the number of distinct
  keys of ``_record_index`` (lengths with at least one free slot). A key goes when its last slot is
  reused; emptying the queue never removes one (STORAGE-4); truncation removes them all (STORAGE-9).
* Truncate precedence (STORAGE-8 note): a transaction file answers ``e$invalid_io_operation`` first,
  whatever else holds; then conditions (1) no requester open, (2) no message, (3) caller is a server,
  else ``e$no_truncate_queue`` (STORAGE-7). Message numbers keep counting across truncation
  (STORAGE-13).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Literal

import attrs

from .errors import ModelMisuse

PutResult = Literal["ok", "e$max_file_exceeded"]
RemoveResult = Literal["ok", "e$record_not_found"]
TruncateResult = Literal["ok", "e$no_truncate_queue", "e$invalid_io_operation"]
Caller = Literal["server", "requester"]
CALLERS: tuple[Caller, ...] = ("server", "requester")
VOS_BLOCK_SIZE = 4096


def _round_to(value: int | Sequence[int] | None) -> int | tuple[int, ...] | None:
    if value is None or isinstance(value, int):
        return value
    return tuple(sorted(set(value)))


def _check_round_to(_: object, __: object, value: int | tuple[int, ...] | None) -> None:
    if value is None:
        return
    sizes = (value,) if isinstance(value, int) else value
    if not sizes or any(not isinstance(s, int) or s < 1 for s in sizes):
        raise ModelMisuse(f"round_to must be null, a positive int or a list of positive sizes, not {value!r}")


def _positive(name: str, value: int, minimum: int) -> None:
    if not isinstance(value, int) or value < minimum:
        raise ModelMisuse(f"{name} must be an integer >= {minimum}, not {value!r}")


@attrs.frozen
class StoreConfig:
    """A queue file's declaration: its size limit, extents, rounding and kind (STORAGE-5, 8, 11)."""

    name: str
    max_bytes: int
    block_size: int = VOS_BLOCK_SIZE
    extent_size: int = 1
    round_to: int | tuple[int, ...] | None = attrs.field(default=None, converter=_round_to,
                                                         validator=_check_round_to)
    transaction_file: bool = False

    def __attrs_post_init__(self) -> None:
        _positive("max_bytes", self.max_bytes, 0)
        _positive("block_size", self.block_size, 1)
        _positive("extent_size", self.extent_size, 1)

    @property
    def capacity(self) -> int:
        """The maximum file size in bytes: max_bytes times the extent size (STORAGE-11)."""
        return self.max_bytes * self.extent_size

    def stored_size(self, size: int) -> int:
        """The length a message of `size` bytes is stored with, after rounding up (STORAGE-10)."""
        step = self.round_to
        if step is None:
            return size
        if isinstance(step, int):
            return -(-size // step) * step
        for standard in step:
            if standard >= size:
                return standard
        return size


@attrs.define
class _Record:
    number: int
    size: int
    offset: int


class QueueFile:
    """One VOS message-queue file: exact-length reuse of the most recently freed slot, else virgin space.

    Implements STORAGE-1 (exact length only), STORAGE-2 (most recently deleted first, before virgin
    space), STORAGE-3 (virgin mark, bytes conserved), STORAGE-4 (the index survives emptying),
    STORAGE-5 (e$max_file_exceeded even when empty), STORAGE-7/8/9 (truncate), STORAGE-10 (rounding),
    STORAGE-11 (extents) and STORAGE-13 (FIFO, increasing message numbers).
    """

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        self._capacity = config.capacity
        #: _record_index: length -> stack of freed offsets, the most recently freed last
        self._index: dict[int, list[int]] = {}
        self._free_slots = 0
        self._free_bytes = 0
        self._live: dict[str, _Record] = {}
        self._live_bytes = 0
        self._order: deque[tuple[str, int]] = deque()  # (id, number) in add order, stale entries skipped
        self._virgin = 0
        self._last_message = 0
        self._requesters = 0
        self._vos_cost = 0

    # ------------------------------------------------------------------ observations
    @property
    def used_bytes(self) -> int:
        """The virgin-space mark: bytes of live messages plus bytes of free slots (STORAGE-3)."""
        return self._virgin

    @property
    def blocks_used(self) -> int:
        """used_bytes in whole blocks of block_size, as display_file shows it."""
        return -(-self._virgin // self.config.block_size)

    @property
    def live(self) -> int:
        """The number of live (added, not removed) messages."""
        return len(self._live)

    @property
    def live_bytes(self) -> int:
        return self._live_bytes

    @property
    def free_slots(self) -> int:
        """Freed positions an add of the exact length can reuse (one index entry each, STORAGE-4)."""
        return self._free_slots

    @property
    def free_bytes(self) -> int:
        return self._free_bytes

    @property
    def index_entries(self) -> int:
        """Distinct lengths in _record_index with at least one free slot (STORAGE-4)."""
        return len(self._index)

    @property
    def last_message(self) -> int:
        """The number of the last message added; never decreases, not even by truncation (STORAGE-13)."""
        return self._last_message

    @property
    def requesters(self) -> int:
        return self._requesters

    @property
    def last_vos_cost(self) -> int:
        """STORAGE-6 as a counter: what the last put/remove would cost VOS, 1 + same-length free slots.

        The model itself pays O(1); this figure is what the seed's file system walks.
        """
        return self._vos_cost

    def free_slots_of(self, size: int) -> int:
        """How many free slots of exactly `size` stored bytes the index holds."""
        slots = self._index.get(size)
        return len(slots) if slots else 0

    def capacity_left(self) -> int:
        """Virgin bytes still available before e$max_file_exceeded."""
        return self._capacity - self._virgin

    def offset_of(self, msg_id: str) -> int | None:
        """Where a live message is stored (None if it is not live)."""
        record = self._live.get(msg_id)
        return None if record is None else record.offset

    # ------------------------------------------------------------------ operations
    def put(self, msg_id: str, size: int) -> PutResult:
        """Add a message: reuse the most recently freed slot of its exact length, else virgin space.

        Returns e$max_file_exceeded iff no free slot has the exact length and the virgin space is
        too small, independent of how many messages are live (STORAGE-1, 2, 3, 5).
        """
        if not isinstance(size, int) or size < 1:
            raise ModelMisuse(f"message size must be a positive integer, not {size!r}")
        if msg_id in self._live:
            raise ModelMisuse(f"message {msg_id!r} is already in store {self.config.name!r}")
        size = self.config.stored_size(size)
        slots = self._index.get(size)
        if slots:
            self._vos_cost = 1 + len(slots)
            offset = slots.pop()
            if not slots:
                del self._index[size]
            self._free_slots -= 1
            self._free_bytes -= size
        elif self._virgin + size <= self._capacity:
            self._vos_cost = 1
            offset = self._virgin
            self._virgin += size
        else:
            self._vos_cost = 1
            return "e$max_file_exceeded"
        self._last_message += 1
        self._live[msg_id] = _Record(self._last_message, size, offset)
        self._live_bytes += size
        self._order.append((msg_id, self._last_message))
        return "ok"

    def remove(self, msg_id: str) -> RemoveResult:
        """Delete a live message: its slot goes on top of its length's stack (STORAGE-1, STORAGE-4)."""
        record = self._live.pop(msg_id, None)
        if record is None:
            return "e$record_not_found"
        self._live_bytes -= record.size
        slots = self._index.setdefault(record.size, [])
        self._vos_cost = 1 + len(slots)
        slots.append(record.offset)
        self._free_slots += 1
        self._free_bytes += record.size
        if not self._live:
            self._order.clear()
        elif len(self._order) > 2 * len(self._live) + 64:
            self._compact_order()
        return "ok"

    def _compact_order(self) -> None:
        live = self._live
        self._order = deque((i, n) for i, n in self._order
                            if (r := live.get(i)) is not None and r.number == n)

    def oldest(self) -> str | None:
        """The live message a reader gets next: the earliest added (STORAGE-13). Amortised O(1)."""
        order, live = self._order, self._live
        while order:
            msg_id, number = order[0]
            record = live.get(msg_id)
            if record is not None and record.number == number:
                return msg_id
            order.popleft()
        return None

    def read(self) -> str | None:
        """Read and delete the oldest live message (a server's s$read_msg + delete, STORAGE-13)."""
        msg_id = self.oldest()
        if msg_id is not None:
            self.remove(msg_id)
        return msg_id

    def open_requester(self) -> None:
        """A requester opens the queue (blocks truncation, STORAGE-7 condition 1)."""
        self._requesters += 1

    def close_requester(self) -> None:
        if self._requesters == 0:
            raise ModelMisuse(f"no requester holds store {self.config.name!r} open")
        self._requesters -= 1

    def truncate(self, caller: str = "server") -> TruncateResult:
        """s$truncate_queue (STORAGE-7, STORAGE-8, STORAGE-9).

        A transaction file: e$invalid_io_operation (checked first). Otherwise ok only if no requester
        holds the queue open, it holds no message and the caller is a server, else
        e$no_truncate_queue. Success empties the index and resets the virgin mark to 0.
        """
        if caller not in CALLERS:
            raise ModelMisuse(f"caller must be one of {', '.join(CALLERS)}, not {caller!r}")
        if self.config.transaction_file:
            return "e$invalid_io_operation"
        if self._requesters or self._live or caller != "server":
            return "e$no_truncate_queue"
        self._index.clear()
        self._order.clear()
        self._free_slots = self._free_bytes = self._virgin = 0
        return "ok"
