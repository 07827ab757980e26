"""The artemis adapter's records of its addresses, queues and consumers, the receiver handler that
collects a link's deliveries, and the message properties the adapter sets."""

from __future__ import annotations

import collections
from typing import Any

import attrs
from proton import Delivery, int32, symbol
from proton.handlers import MessagingHandler
from proton.reactor import ReceiverOption

from mqconform.reference_model.config import AddressConfig

ID_PROPERTY = "mqcid"
#: SCHED-*: the logical due time of a scheduled message (application property)
DUE_PROPERTY = "mqcdue"
#: EXPIRY-8: the application property Artemis reads a message's duplicate-detection id from
#: (Message#HDR_DUPLICATE_DETECTION_ID)
DUPLICATE_ID_PROPERTY = "_AMQ_DUPL_ID"
#: SCHED-*: a scheduled message's broker delivery time is this far ahead of open() plus its logical
#: due time, so the broker's own timer never fires it during an example (the adapter does)
FAR_MS = 86_400_000
#: AMQP credit standing in for a core byte window no example fills (the default 1 MiB, or -1
#: without max_unacked): topped up on every receive, like a core client returning credit
WIDE_CREDIT = 1000
#: the queue MBean's counts the adapter reads (after QueueControl#flushExecutor)
QUEUE_COUNTS = ("MessageCount", "DeliveringCount", "ScheduledCount", "MessagesAdded", "MessagesAcknowledged",
                "MessagesKilled", "MessagesExpired")


def counts_look(counts: dict[str, Any]) -> tuple[int, ...]:
    """The queue MBean's QUEUE_COUNTS as one comparable value: two looks equal after flushExecutor
    say nothing moved between them (_Address.pages)."""
    return tuple(int(counts[name]) for name in QUEUE_COUNTS)


#: how long a pull with a message pending waits for it before it drains (answers None)
PULL_WAIT_S = 1.0
#: how long a drain goes unanswered before the pull sends it again (the broker can drop a drain that
#: comes while the link's previous one is being answered: ArtemisAdapter._pull)
DRAIN_PATIENCE_S = 0.5
#: how often an empty drain answer on a non-destructive queue is asked again, each after a flush (a
#: previous drain's answer can take the credit: ArtemisAdapter._pull)
EMPTY_DRAIN_RETRIES = 3
#: the longest pending list read back (address setting managementBrowsePageSize)
BROWSE_LIMIT = 100_000


class _Priority(ReceiverOption):  # type: ignore[misc]
    """DELIVERY-25: a consumer's priority as the receiver's attach property ``priority`` (an int), which
    the broker reads into the ServerConsumer it creates (AmqpSupport#getReceiverPriority,
    AMQPSessionCallback#createSender; the same key from 2.18.0)."""

    def __init__(self, priority: int) -> None:
        self.priority = priority

    def apply(self, link: Any) -> None:
        link.properties = {symbol("priority"): int32(self.priority)}


class _Receiver(MessagingHandler):  # type: ignore[misc]
    """Collects the deliveries of one receiver link; nothing is accepted or flowed automatically."""

    def __init__(self) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        #: (delivery, logical id, AMQP header delivery-count), in arrival order
        self.arrived: collections.deque[tuple[Delivery, str, int]] = collections.deque()
        #: every logical id that ever arrived on this link (a non-destructive queue's settle: a consumer
        #: with credit is at rest once it was offered every message the queue lists)
        self.seen: set[str] = set()

    def on_message(self, event: Any) -> None:
        message = event.message
        msg_id = (message.properties or {}).get(ID_PROPERTY)
        self.arrived.append((event.delivery, str(msg_id), int(message.delivery_count or 0)))
        self.seen.add(str(msg_id))


@attrs.define
class _Address:
    name: str
    physical: str
    #: an address declared with `address`, or named as its address by a queue declaration, is
    #: MULTICAST (every queue gets a copy, PAGING-2); a queue's own address is ANYCAST
    routing: str = "ANYCAST"
    #: its limits and full policy, when declared with any (sends then carry sized bodies, .sizing)
    config: AddressConfig | None = None
    #: PAGING-3 BLOCK: deliveries written without credit, in send order, not yet settled by the broker
    blocked: collections.deque[Delivery] = attrs.Factory(collections.deque)
    settings: dict[str, Any] = attrs.Factory(dict)
    queues: list[str] = attrs.Factory(list)
    #: EXPIRY-1: the queue TTL (address setting expiry-delay) of its queues, if any
    expiry_delay: int | None = None

    @property
    def pages(self) -> bool:
        """The PAGE policy: its queues' pending counts may hold paged messages (QueueImpl#getMessageCount
        adds the page subscription's), which the queue may not read yet (its read budget, the address
        still full)."""
        return self.config is not None and self.config.full_policy == "PAGE"


@attrs.define
class _Queue:
    name: str
    physical: str
    address: str
    physical_address: str
    routing: str = "anycast"
    #: DELIVERY-12: delivered messages stay listed, so "pending" never says what is left to dispatch
    non_destructive: bool = False
    #: a last-value queue's key property (LASTVALUE-*), None on any other queue
    last_value_key: str | None = None
    #: DELIVERY-26: an exclusive queue, and the consumer the broker made its exclusive one as far as
    #: the adapter saw (the one a delivery arrived on; None until then and after it closed)
    exclusive: bool = False
    active: str | None = None
    #: DeliveringCount less what the links hold when a settle last ran out its bound (a broker whose
    #: count stays off, e.g. after a nack at the delivery limit): later settles take that difference
    #: as at rest too instead of waiting out their bound after every operation
    stuck: int = 0
    #: credit went to a consumer of this queue that the broker was not yet seen to have taken up
    #: (ArtemisSettling._settle_queue: a non-destructive queue's settle confirms it first)
    credited: bool = False
    #: LASTVALUE-1: the order of every send to this queue (id -> its place), and per value of the key
    #: the id of the latest send the queue took at once (accepted or paged, not scheduled): a listing
    #: that shows an older message of a value without its latest is read again (`superseded_shown`)
    sent: dict[str, int] = attrs.Factory(dict)
    latest: dict[str, str] = attrs.Factory(dict)

    def at_rest(self, delivering: int, held: int, timed_out: bool = False) -> bool:
        """Whether the broker's DeliveringCount says nothing is in flight: it equals what the links
        hold, or is off by the difference a settle that ran out its bound left (see `stuck`). A
        settle that runs out (`timed_out`) records its difference."""
        off = delivering - held
        if timed_out or off == 0:  # the count came right again: nothing is taken as stuck
            self.stuck = off
        return off in (0, self.stuck)

    def applied(self, delivering: int, held: int, timed_out: bool = False, killed: bool = False) -> bool:
        """After an ack or nack: whether the broker applied it, i.e. DeliveringCount is what the links
        hold plus the difference taken as at rest (`stuck`). Unlike `at_rest` a count that equals what
        the links hold is not taken as having come right again while `stuck` is not 0: with `stuck`
        -1 that is the count of the disposition still in flight (one above). `killed`: the broker
        counted the nacked message killed at its delivery limit (MessagesKilled rose); a count then
        one below `stuck` is finding 2 (docs/findings/artemis-drop-at-limit-delivering-negative.md:
        dropped without a bound dead-letter address, QueueImpl#cancel decrements the count a second
        time), which becomes the difference taken as at rest. A wait that runs out records its
        difference, as `at_rest` does."""
        off = delivering - held
        if timed_out or (killed and off == self.stuck - 1):
            self.stuck = off
        return off == self.stuck

    def took(self, msg_id: str, properties: dict[str, Any], at_once: bool) -> None:
        """Record a send to this last-value queue; `at_once`: accepted or paged, not scheduled."""
        self.sent[msg_id] = len(self.sent)
        if at_once:
            self._now_latest(msg_id, properties)

    def _now_latest(self, msg_id: str, properties: dict[str, Any]) -> None:
        """`msg_id` is its value's latest message (when it carries the queue's last-value key)."""
        value = properties.get(self.last_value_key) if self.last_value_key is not None else None
        if value is not None:
            self.latest[str(value)] = msg_id

    def fired(self, message: dict[str, Any]) -> None:
        """A scheduled message of this last-value queue fired now (`message`: its listScheduledMessages
        map): LastValueQueue#addHead(ref, scheduling=true) makes it its value's current message and the
        delivery pass prunes a later send of that value, so it is the value's latest from now on (of
        several fired together, the last placed)."""
        self._now_latest(str(message.get(ID_PROPERTY)), message)

    def superseded_shown(self, listed: list[dict[str, Any]], received: set[str]) -> bool:
        """LASTVALUE-1: whether `listed` (listMessages' maps, memory only: not while paging) shows a
        superseded message: two messages of one value, or one whose value a later send the queue took
        at once carries, that later send not listed and not `received` by a consumer. The listing was
        read inside the delivery pass that moves the new message out of the queue's intermediate list
        (QueueImpl#doInternalPoll) and then prunes the older one (pruneLastValues), which
        flushExecutor may return before. Seen on a loaded 2.40.0 ci run: a non-destructive last-value
        queue listed [m1] after m2 superseded it."""
        if self.last_value_key is None:
            return False
        values = [str(v) for m in listed if (v := m.get(self.last_value_key)) is not None]
        if len(values) != len(set(values)):
            return True
        ids = {str(m.get(ID_PROPERTY)) for m in listed}
        for message in listed:
            value = message.get(self.last_value_key)
            newer = self.latest.get(str(value)) if value is not None else None
            shown = str(message.get(ID_PROPERTY))
            if newer is not None and newer not in ids and newer not in received \
                    and self.sent.get(shown, -1) < self.sent[newer]:
                return True
        return False

    def forget(self, msg_id: str) -> None:
        """A message deleted through management: no longer the latest of its value."""
        self.latest = {value: latest for value, latest in self.latest.items() if latest != msg_id}

    @property
    def last_value(self) -> bool:
        """A last-value queue: its MessageCount leaves out what is being delivered (LastValueQueue)."""
        return self.last_value_key is not None

    def pending(self, counts: dict[str, int]) -> int:
        """The pending count from the queue MBean's counts: MessageCount less what is scheduled and,
        except on a last-value queue (whose MessageCount has no delivering messages), delivering."""
        delivering = 0 if self.last_value else counts["DeliveringCount"]
        return counts["MessageCount"] - delivering - counts["ScheduledCount"]


@attrs.define
class _Consumer:
    name: str
    queue: str
    link: Any
    handler: _Receiver
    pull: bool
    max_unacked: int
    mode: str
    #: received and not yet settled: id -> (delivery, delivery count shown)
    held: dict[str, tuple[Delivery, int]] = attrs.Factory(dict)
    #: earlier deliveries of a message received again while held (a broker bug's second copy, e.g.
    #: the scheduled fire's reset of the iterators): unsettled until the link closes, as the model has
    #: them (an ack settles the latest delivery only), so each holds a credit
    copies: list[tuple[str, tuple[Delivery, int]]] = attrs.Factory(list)

    def holding(self) -> int:
        """Deliveries received and not yet settled (a second copy of one message counts too)."""
        return len(self.held) + len(self.copies)


