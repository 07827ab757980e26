"""Mutable state of queues, consumers and addresses; private to the model (see :mod:`.broker`).

A message reference (`Ref`) is in exactly one place: pending, delivering (a consumer's buffer,
received set or transaction), scheduled, paged, or done (DELIVERY-1, artemis-semantics C1).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Literal

import attrs

from .config import AddressConfig, ConsumerConfig, Message, QueueConfig
from .pending import PendingList
from .scheduler import Scheduler
from .selectors import Predicate, compile_selector

if TYPE_CHECKING:
    from .bugs.nats_max_age_after_a_ttl_message import AgeCheck

#: "exhausted": JetStream, past the delivery limit: stored, never delivered again (REDELIVERY-21)
Place = Literal["pending", "delivering", "scheduled", "paged", "exhausted", "done"]


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
    #: DELIVERY-23: delivered at least once before; the redelivered flag of the current delivery
    delivered_before: bool = False
    redelivered: bool = False
    #: EXPIRY-1..3: the logical time at which it expires in this queue (None: never)
    expires_at: int | None = None
    #: DELIVERY-29: the consumer sequence of its first delivery (JetStream's Pending.Sequence, kept
    #: through redeliveries); 0 before it
    first_dseq: int = 0
    #: copies of msg.id and msg.size (plain attributes: read on every hot-path step)
    id: str = attrs.field(init=False)
    size: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.id = self.msg.id
        self.size = self.msg.size


def ref_priority(ref: Ref) -> int:
    """The priority level a ref is listed at (DELIVERY-3)."""
    return ref.msg.priority


def ref_sequence(ref: Ref) -> int:
    """The per-queue sequence a sorted insert compares (DELIVERY-13; 0 for one scheduled at send)."""
    return ref.sequence


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
    #: DELIVERY-22 by_sequence: ids this consumer was ever given (it holds a reply subject for each).
    tokens: set[str] = attrs.field(factory=set)
    #: REDELIVERY-27: received id -> the sequence of its live ack-wait timer (consumers with
    #: ack_wait_ms): a restart (+WPI) replaces it, even when the wait then ends at the same time.
    ack_timers: dict[str, int] = attrs.field(factory=dict)
    #: DELIVERY-12: on a non-destructive queue, the listed messages this consumer's iterator has not
    #: passed yet (each consumer walks the whole list; delivered messages stay listed).
    unseen: PendingList[Ref] | None = None
    #: a bug model's state (reference_model.bugs.artemis_linked_list_repeat; empty on a profile's
    #: model), per priority level (PriorityLinkedListImpl keeps one LinkedListImpl iterator per level):
    #: the listed message the level's iterator was on when the queue found the consumer without credit
    #: (BUSY: repeat()), and the levels whose iterator's last returned node lags behind it (a removal
    #: moved it on), so the repeat branch's message comes again
    repeating: dict[int, str] = attrs.field(factory=dict)
    repeat_lags: set[int] = attrs.field(factory=set)
    #: a bug model's state (the same; empty on a profile's model): the second copies of messages the
    #: repeat gave this consumer while it held them (it holds each of them twice)
    copies: list[Ref] = attrs.field(factory=list)
    #: a bug model's state (the same; empty on a profile's model): per buffer key, the delivery count a
    #: delivery still in the buffer showed when the same message was dispatched to it again, and per
    #: id, the count the consumer's latest received delivery showed when it was such an earlier one
    copy_counts: dict[str, int] = attrs.field(factory=dict)
    shown: dict[str, int] = attrs.field(factory=dict)
    #: REDELIVERY-31: the delivery tag of each message received by a pull receive (a channel's tags
    #: count from 1; a new channel, after a close or a channel error, starts again).
    get_tags: dict[str, int] = attrs.field(factory=dict)
    next_get_tag: int = 1
    #: DELIVERY-24 active_queue: out of the rotation since a dispatch found it without room.
    blocked: bool = False
    #: DELIVERY-26: when the consumer subscribed (a broker-wide sequence; single_active_next)
    registered: int = 0
    #: DELIVERY-45..47: the pin id this pull client names in its requests (None: none)
    pin: int | None = None
    #: copies of the config read by has_room on every dispatch (set after init)
    pushes: bool = attrs.field(init=False, default=True)
    window_bytes: int = attrs.field(init=False, default=0)
    window_messages: int | None = attrs.field(init=False, default=None)
    max_unacked: int | None = attrs.field(init=False, default=None)
    #: REDELIVERY-11: the server's credit (may go negative) and the bytes the client consumed and
    #: has not returned yet; credit returns once they reach half the window (window >> 1).
    credit: int = attrs.field(init=False, default=0)
    credit_to_send: int = attrs.field(init=False, default=0)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def times_out(self) -> bool:
        """REDELIVERY-27/32: what it receives comes back by itself (an ack wait or a BackOff)."""
        return self.config.ack_wait_ms is not None or self.config.backoff_ms is not None

    def ack_wait_for(self, delivery_count: int) -> int:
        """REDELIVERY-27 / REDELIVERY-32: the ack wait of a message's `delivery_count`-th delivery:
        BackOff[min(n - 1, len - 1)] (consumer.go checkPending: o.rdc[seq], capped at the last
        index), else ack_wait_ms."""
        backoff = self.config.backoff_ms
        if backoff:
            return backoff[min(max(delivery_count - 1, 0), len(backoff) - 1)]
        assert self.config.ack_wait_ms is not None
        return self.config.ack_wait_ms

    @property
    def no_buffering(self) -> bool:
        return self.config.window_bytes == 0 or self.config.window_messages == 0

    def unacked(self) -> int:
        """What it holds unacknowledged: buffered, received, and a bug model's second copies of
        received messages (each a delivery the broker gave credit for)."""
        return len(self.buffer) + len(self.received) + len(self.copies)

    def under_unacked_limit(self, parked: int = 0) -> bool:
        """Room under max_unacked; `parked` messages held for nobody count too (RESTART-3)."""
        limit = self.config.max_unacked
        return limit is None or self.unacked() + parked < limit

    def __attrs_post_init__(self) -> None:
        cfg = self.config
        self.pushes = not (cfg.browser or self.no_buffering)
        self.window_bytes = cfg.window_bytes
        self.window_messages = cfg.window_messages
        self.max_unacked = cfg.max_unacked
        self.credit = cfg.window_bytes

    def took(self, size: int) -> None:
        """REDELIVERY-11: a dispatch to the buffer spends credit (ServerConsumerImpl L1215-1225)."""
        self.credit -= size

    def consumed(self, size: int) -> None:
        """REDELIVERY-11: the client consumed `size` bytes (receive, or a rollback clearing its
        buffer); it sends the accumulated bytes once they reach half the window
        (ClientConsumerImpl#flowControl L817-851, ActiveMQSessionContext#calcWindowSize)."""
        window = self.window_bytes
        if window <= 0:
            return
        self.credit_to_send += size
        if self.credit_to_send >= (window >> 1 if window > 1 else window):
            self.credit += self.credit_to_send
            self.credit_to_send = 0

    def has_room(self) -> bool:
        """Window credit left (REDELIVERY-11: dispatch while credit > 0, so bytes may overshoot)."""
        if not self.pushes:
            return False
        if self.window_bytes > 0 and self.credit <= 0:
            return False
        buffered = len(self.buffer)
        if self.window_messages is not None and buffered >= self.window_messages:
            return False
        limit = self.max_unacked
        return limit is None or self.unacked() < limit

    def matches(self, ref: Ref) -> bool:
        return self.selector is None or self.selector(ref.msg.properties)


@attrs.define(eq=False, slots=True)
class Counters:
    """The monotonic counters of a queue (artemis-semantics C5, C6)."""

    added: int = 0
    acknowledged: int = 0
    replaced: int = 0
    killed: int = 0
    #: EXPIRY-7 (artemis-semantics C5 messagesExpired)
    expired: int = 0
    #: DELIVERY-21: new messages the queue's bound refused at the door (RING-3 options), whatever the
    #: sender was told (RING-21: Mosquitto drops silently and still answers PUBACK); not an
    #: observable counter, only the final drain's accounting reads it
    refused: int = 0


class QueueState:
    """A queue: pending list, delivering refs, scheduler, paged refs and counters."""

    def __init__(self, config: QueueConfig, priority_levels: int, address: AddressState) -> None:
        self.config = config
        self.name = config.name
        self.address = address
        self.ring_size = config.ring_size
        #: RING-27: the byte bound (-1: none)
        self.max_bytes = config.max_length_bytes
        #: RING-31..33: per-subject bound (-1: none) and whether discard new refuses at it
        self.max_per_subject = config.max_per_subject
        self.discard_new_per_subject = config.discard_new_per_subject
        #: RING-28: the model overflow of this queue (set by Broker.declare_queue from the profile)
        self.overflow = "drop_head"
        #: RING-23: the queue follows the quorum reject-publish hysteresis (set at declaration)
        self.hysteresis = False
        #: REDELIVERY-5/26: the effective delivery limit (None: no limit; set at declaration)
        self.delivery_limit: int | None = None
        self.filter = compile_selector(config.filter)
        self.pending: PendingList[Ref] = PendingList(priority_levels, ref_priority, ref_sequence)
        self.scheduler: Scheduler[Ref] = Scheduler()
        self.paged: deque[Ref] = deque()
        self.consumers: list[ConsumerState] = []
        self.next_consumer = 0
        #: DELIVERY-25: some consumer has a priority (dispatch consults _dispatch_order)
        self.prioritised = False
        #: DELIVERY-25 cursor_per_priority: per priority level, the `registered` number of the
        #: consumer of that level served last (none: the level starts at its first consumer)
        self.level_served: dict[int, int] = {}
        #: DELIVERY-26: the active consumer of a single_active_consumer queue
        self.active: ConsumerState | None = None
        #: DELIVERY-49: each message group's consumer (QueueImpl#groups)
        self.groups: dict[str, ConsumerState] = {}
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
        #: DELIVERY-12: delivered messages stay pending (Artemis non-destructive).
        self.non_destructive = config.non_destructive
        #: RING-15: last-value key -> the current ref for each value, and refs that may be superseded
        #: and are pruned (REPLACED) after the next dispatch pass.
        self.last_value_key = config.last_value_key
        self.last_values: dict[object, Ref] = {}
        self.lv_candidates: list[Ref] = []
        #: a last-value or non-destructive queue: list changes go through Broker._listed/_unlisted.
        self.special = self.non_destructive or self.last_value_key is not None
        #: PAGING-15: the page-subscription counter: paged refs of this queue not yet acknowledged.
        self.page_counter = 0
        #: REDELIVERY-28: nacked with a delay: id -> when it joins the redelivery queue (the ref
        #: stays delivering, held by no consumer, until then).
        self.nak_waiting: dict[str, int] = {}
        #: EXPIRY-4: the queue holds (or held) a message with an expiry time; (expiry, n, ref) heap of
        #: them (scopes ready/stored), and refs whose time passed while not removable (overdue).
        self.expiring = False
        self.expiries: list[tuple[int, int, Ref]] = []
        self.overdue: dict[str, Ref] = {}
        #: the stream's age-check timer, by which alone the queue expires (a bug model's state:
        #: reference_model.bugs.nats_max_age_after_a_ttl_message; always None on a profile's model)
        self.age_check: AgeCheck | None = None
        self._init_consumer_state()

    def _init_consumer_state(self) -> None:
        """The state of the queue's durable consumer as JetStream keeps it (pause, priority groups,
        sequences, ack floor, messages kept past max_deliver)."""
        #: DELIVERY-34: the queue's consumers deliver nothing before this logical time (ms)
        self.paused_until = 0
        #: DELIVERY-41..47: the durable's ADR-42 priority policy (None: none; set by join)
        self.priority_policy: str | None = None
        #: DELIVERY-45..47: the current pin id of a pinned_client queue (None: none) and the last
        #: one assigned
        self.pinned: int | None = None
        self.pins = 0
        #: RESTART-5, DELIVERY-28: the highest sequence ever dispatched, or skipped past by a purge or
        #: by the first consumer starting at the stream's first sequence (JetStream's delivered
        #: stream sequence)
        self.delivered_seq = 0
        #: DELIVERY-28: every dispatch, redeliveries included (JetStream's delivered consumer sequence)
        self.dispatches = 0
        #: DELIVERY-27..29: a consumer was ever opened on the queue (the durable JetStream consumer
        #: exists: before it, its state is that of a fresh one)
        self.had_consumer = False
        #: DELIVERY-29: the durable consumer's ack floor (consumer sequence, stream sequence)
        self.ack_floor = (0, 0)
        #: DELIVERY-30: the stream was purged (an empty stream's first sequence is then last + 1,
        #: even before any message: filestore purge sets first = last + 1)
        self.purged = False
        #: REDELIVERY-21 (delivery_limit_action keep): stored messages past the delivery limit
        self.exhausted: dict[str, Ref] = {}
        #: ids of `exhausted` whose redelivered count a restart dropped (a bug model's state:
        #: reference_model.bugs.nats_server_78fd547; always empty on a profile's model)
        self.rdc_dropped: set[str] = set()
        #: ids of messages put back once delivered whose o.rdc entry a refused pull request left at 0
        #: (a bug model's state: reference_model.bugs.nats_refused_pull_counts_redelivered; always
        #: empty on a profile's model)
        self.rdc_zero: set[str] = set()
        #: ids (-> stream sequence) of messages kept past the delivery limit that left the stream with
        #: their o.rdc entry kept (a bug model's state: reference_model.bugs.nats_server_8102; always
        #: empty on a profile's model)
        self.rdc_removed: dict[str, int] = {}
        #: ids of listed refs the broker has in delivery (MessageReference#isInDelivery: dispatched,
        #: not acknowledged since), and how many refs a ring eviction took off the list but left in the
        #: pending count (a bug model's state: reference_model.bugs.artemis_enforce_ring_in_delivery;
        #: always empty and 0 on a profile's model)
        self.in_delivery: set[str] = set()
        self.pending_kept = 0
        #: ids of keyed messages a send gave a consumer at once, never listed, so still their value's
        #: current one (a bug model's state: reference_model.bugs.artemis_last_value_direct; always
        #: empty on a profile's model)
        self.lv_direct: set[str] = set()
        #: that bug model's QueueImpl#directDeliver: whether a send may go to a consumer at once, the
        #: list's insert count when it last looked, and whether its one prompt re-check was used
        self.lv_direct_on = True
        self.lv_direct_listed = 0
        self.lv_direct_rechecked = False

    def last_value(self, ref: Ref) -> object:
        """RING-15: the ref's last-value property value, None when it has none."""
        key = self.last_value_key
        return None if key is None else ref.msg.properties.get(key)

    def subject_refs(self, subject: str | None) -> list[Ref]:
        """RING-31: the stored messages on `subject`, oldest first (pending, delivering, exhausted)."""
        return [ref for ref in self.live.values()
                if ref.msg.subject == subject and ref.place in ("pending", "delivering", "exhausted")]

    def subject_at_limit(self, subject: str | None) -> bool:
        """RING-32/33: `subject` already has max_per_subject stored messages."""
        return self.max_per_subject > 0 and len(self.subject_refs(subject)) >= self.max_per_subject

    def stored(self) -> int:
        return len(self.pending) + self.delivering

    def bound_count(self, counts: str) -> int:
        """RING-4: the count a ring bound compares: pending only, or pending + delivering."""
        listed = len(self.pending.level_of) + self.pending_kept  # pending_kept: a bug model's
        return listed if counts == "pending" else listed + self.delivering + len(self.exhausted)

    @property
    def bounded(self) -> bool:
        """RING-1 / RING-27: the queue has a count or a byte bound."""
        return self.ring_size >= 0 or self.max_bytes >= 0

    def bound_bytes(self, counts: str) -> int:
        """RING-27: the bytes a byte bound compares: pending only, or pending + delivering."""
        listed = self.pending.bytes
        if counts == "pending":
            return listed
        return listed + self.delivering_bytes + sum(ref.size for ref in self.exhausted.values())

    def over_bound(self, counts: str) -> bool:
        """RING-3 / RING-27: over the count bound or over the byte bound."""
        return (0 <= self.ring_size < self.bound_count(counts)) or (
            0 <= self.max_bytes < self.bound_bytes(counts))

    def next_sequence(self) -> int:
        self.sequence += 1
        return self.sequence


class AddressState:
    """An address and its paging store: one copy of a message however many queues (PAGING-2)."""

    def __init__(self, config: AddressConfig) -> None:
        self.config = config
        self.name = config.name
        self.queues: list[str] = []
        #: the same queues as state objects, in the same order
        self.queue_states: list[QueueState] = []
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
        #: PAGING-14..16: page-full flag (page limits reached: page-full-policy applies).
        self.page_full = False
        #: RING-16: the last n messages routed to the address (its internal retroactive ring queue).
        count = config.retroactive_message_count
        self.retro: deque[Message] | None = deque(maxlen=count) if count > 0 else None
        #: EXPIRY-8: the duplicate ids the address has routed (its duplicate-id cache)
        self.duplicate_ids: set[str] = set()
        #: RETENTION-1: the messages a Limits stream address accepted (see reference_model/retention.py)
        self.stream_accepted = 0

    def page_files(self) -> int:
        """PAGING-14: Artemis numberOfPages: the page files, counting the (possibly empty) current
        page opened when page mode started."""
        return len(self.pages) if self.pages else int(self.paging)

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
