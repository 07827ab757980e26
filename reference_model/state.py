"""Mutable state of queues, consumers and addresses; private to the model (see :mod:`.broker`).

A message reference (`Ref`) is in exactly one place: pending, delivering (a consumer's buffer,
received set or transaction), scheduled, paged, or done (DELIVERY-1, artemis-semantics C1).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Literal

import attrs

from .config import AddressConfig, ConsumerConfig, Message, QueueConfig
from .pending import PendingList
from .scheduler import Scheduler
from .selectors import Predicate, compile_selector

Place = Literal["pending", "delivering", "scheduled", "paged", "done"]


@attrs.define(eq=False, slots=True)
class Ref:
    """One queue's reference to a message (REDELIVERY-1: the delivery count lives here)."""

    msg: Message
    queue: str
    sequence: int = 0
    delivery_count: int = 0
    place: Place = "pending"
    page: int | None = None
    in_memory: bool = False

    @property
    def id(self) -> str:
        return self.msg.id

    @property
    def size(self) -> int:
        return self.msg.size


def _priority(ref: Ref) -> int:
    return ref.msg.priority


@attrs.define(eq=False, slots=True)
class ConsumerState:
    """A consumer and its session: dispatched-but-not-received buffer, received-unacked, tx-acked."""

    config: ConsumerConfig
    selector: Predicate | None
    buffer: OrderedDict[str, Ref] = attrs.field(factory=OrderedDict)
    buffer_bytes: int = 0
    received: dict[str, Ref] = attrs.field(factory=dict)
    tx_acked: list[Ref] = attrs.field(factory=list)
    #: ids removed by an eviction while unacked (RING-5 under evict_unacked): acking them is a no-op.
    evicted: set[str] = attrs.field(factory=set)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def no_buffering(self) -> bool:
        return self.config.window_bytes == 0 or self.config.window_messages == 0

    def unacked(self) -> int:
        return len(self.buffer) + len(self.received)

    def under_unacked_limit(self) -> bool:
        limit = self.config.max_unacked
        return limit is None or self.unacked() < limit

    def has_room(self) -> bool:
        """Window credit left (DELIVERY window: bytes may overshoot, as Artemis credits do)."""
        cfg = self.config
        if cfg.browser or self.no_buffering:
            return False
        if cfg.window_bytes > 0 and self.buffer_bytes >= cfg.window_bytes:
            return False
        if cfg.window_messages is not None and len(self.buffer) >= cfg.window_messages:
            return False
        return self.under_unacked_limit()

    def matches(self, ref: Ref) -> bool:
        return self.selector is None or self.selector(ref.msg.properties)


@attrs.define(eq=False, slots=True)
class Counters:
    """The monotonic counters of a queue (artemis-semantics C5, C6)."""

    added: int = 0
    acknowledged: int = 0
    replaced: int = 0
    killed: int = 0


class QueueState:
    """A queue: pending list, delivering refs, scheduler, paged refs and counters."""

    def __init__(self, config: QueueConfig, priority_levels: int) -> None:
        self.config = config
        self.ring_size = config.ring_size
        self.filter = compile_selector(config.filter)
        self.pending: PendingList[Ref] = PendingList(priority_levels, _priority)
        self.scheduler: Scheduler[Ref] = Scheduler()
        self.paged: deque[Ref] = deque()
        self.consumers: list[ConsumerState] = []
        self.next_consumer = 0
        self.delivering = 0
        self.delivering_bytes = 0
        #: refs left delivering by a closed consumer that does not return them (Redis PEL).
        self.orphans: dict[str, Ref] = {}
        #: every ref in memory (pending, delivering, scheduled) in routing order, for stored eviction.
        self.live: OrderedDict[str, Ref] = OrderedDict()
        self.refs: dict[str, Ref] = {}
        self.sequence = 0
        self.counters = Counters()
        #: reject_new hysteresis state (RabbitMQ quorum reject-publish).
        self.rejecting = False

    @property
    def name(self) -> str:
        return self.config.name

    def stored(self) -> int:
        return len(self.pending) + self.delivering

    def bound_count(self, counts: str) -> int:
        return len(self.pending) if counts == "pending" else self.stored()

    def next_sequence(self) -> int:
        self.sequence += 1
        return self.sequence


class AddressState:
    """An address and its paging store: one copy of a message however many queues (PAGING-2)."""

    def __init__(self, config: AddressConfig) -> None:
        self.config = config
        self.queues: list[str] = []
        self.memory_bytes = 0
        self.memory_messages = 0
        #: message id -> number of live in-memory refs holding the one copy.
        self.copies: dict[str, int] = {}
        self.paging = False
        self.pages: OrderedDict[int, list[Ref]] = OrderedDict()
        self.page_outstanding: dict[int, int] = {}
        self.page_number = 0
        self.page_bytes = 0
        self.blocked: deque[Message] = deque()

    @property
    def name(self) -> str:
        return self.config.name

    def full(self) -> bool:
        """PAGING-1: over when size >= max or elements >= max; negative limits are off."""
        cfg = self.config
        return (0 <= cfg.max_size_bytes <= self.memory_bytes) or (
            0 <= cfg.max_size_messages <= self.memory_messages
        )

    def hold(self, msg: Message) -> None:
        count = self.copies.get(msg.id, 0)
        if count == 0:
            self.memory_bytes += msg.size
            self.memory_messages += 1
        self.copies[msg.id] = count + 1

    def release(self, msg: Message) -> None:
        count = self.copies[msg.id] - 1
        if count == 0:
            del self.copies[msg.id]
            self.memory_bytes -= msg.size
            self.memory_messages -= 1
        else:
            self.copies[msg.id] = count

    def page_for(self, size: int) -> int:
        """The page number a new paged message of `size` bytes goes to (PAGING-9 page files)."""
        current_full = self.page_bytes > 0 and self.page_bytes + size > self.config.page_size_bytes
        if self.page_number not in self.pages or current_full:
            self.page_number += 1
            self.pages[self.page_number] = []
            self.page_outstanding[self.page_number] = 0
            self.page_bytes = 0
        self.page_bytes += size
        return self.page_number
