"""Mutants: realistic bugs an implementer could make, each behind the adapter contract.

Each mutant is the reference model with one thing wrong. The self-test runs the machine of the
mutant's area against it and requires a failure with a short shrunk counterexample.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.admission import Admission
from mqconform.reference_model.broker import AckResult, Broker, SendResult
from mqconform.reference_model.config import Message
from mqconform.reference_model.options import ModelOptions
from mqconform.reference_model.profiles import ARTEMIS, JETSTREAM
from mqconform.reference_model.state import AddressState, QueueState, Ref
from mqconform.reference_model.storage import PutResult, QueueFile, RemoveResult, StoreConfig, TruncateResult
from mqconform.reference_model.throttle import Throttle
from mqconform.reference_model.world import World

from .lastvalue_mutants import LASTVALUE_MUTANTS
from .retention_mutants import RETENTION_MUTANTS

WorldFactory = Callable[[ModelOptions], World]


@attrs.frozen
class Mutant:
    name: str
    area: str
    description: str
    world: WorldFactory
    #: capabilities its adapter does not offer (a bug behind an adapter that lacks them)
    without: frozenset[str] = frozenset()
    #: the profile it claims (and is checked against)
    options: ModelOptions = ARTEMIS

    def adapter(self) -> ReferenceAdapter:
        """The broken implementation behind the contract, claiming its profile (artemis by default)."""
        adapter = ReferenceAdapter(options=self.options, world_factory=self.world)
        adapter.capabilities = adapter.capabilities - self.without
        return adapter


def _options(**changes: object) -> WorldFactory:
    return lambda options: World(options.evolve(**changes))


def _broker(cls: type[Broker]) -> WorldFactory:
    return lambda options: World(options, broker_class=cls)


class _ScheduledIgnoresRing(Broker):
    """Due scheduled messages enter the head without the ring check."""

    def _fire_due(self, queue: QueueState) -> bool:
        due = queue.scheduler.pop_due(self.now_ms)
        for ref in reversed(due):
            ref.place = "pending"
            queue.pending.add_head(ref, ref.size)
        return bool(due)


class _FiresEarly(Broker):
    """Scheduled messages and delayed redeliveries fire 1 ms before they are due."""

    def _fire_due(self, queue: QueueState) -> bool:
        self.now_ms += 1
        try:
            return super()._fire_due(queue)
        finally:
            self.now_ms -= 1


class _DropStillDelivers(Broker):
    """DROP reports the message dropped but routes it anyway."""

    def _route(self, address: AddressState, message: Message, unblocking: bool = False) -> SendResult:
        if address.config.full_policy == "DROP" and address.full():
            full_policy = address.config
            address.config = attrs.evolve(full_policy, full_policy="PAGE", max_size_bytes=-1,
                                          max_size_messages=-1)
            try:
                super()._route(address, message, unblocking)
            finally:
                address.config = full_policy
            return "dropped"
        return super()._route(address, message, unblocking)


class _BlockPages(Broker):
    """BLOCK pages the message instead of holding the producer (PAGING-26)."""

    def _route(self, address: AddressState, message: Message, unblocking: bool = False) -> SendResult:
        if address.config.full_policy != "BLOCK" or not address.full():
            return super()._route(address, message, unblocking)
        blocking = address.config
        address.config = attrs.evolve(blocking, full_policy="PAGE")
        try:
            return super()._route(address, message, unblocking)
        finally:
            address.config = blocking


class _BlockLosesMessage(Broker):
    """BLOCK: when memory frees up the blocked sends are released but never routed."""

    def _unblock(self, address: AddressState) -> bool:
        moved = False
        while address.blocked and not address.full():
            address.blocked.popleft()
            moved = True
        return moved


class _CopyPerQueue(AddressState):
    def hold(self, msg: Message) -> None:
        self.memory_bytes += msg.size
        self.memory_messages += 1
        self.copies[msg.id] = self.copies.get(msg.id, 0) + 1

    def release(self, msg: Message) -> None:
        self.memory_bytes -= msg.size
        self.memory_messages -= 1
        count = self.copies[msg.id] - 1
        if count:
            self.copies[msg.id] = count
        else:
            del self.copies[msg.id]


class _CopyPerQueueBroker(Broker):
    """Each queue's reference holds its own copy of the message in address memory."""

    def declare_address(self, config):  # type: ignore[no-untyped-def]
        super().declare_address(config)
        state = _CopyPerQueue(config)
        self.addresses[config.name] = state


class _WindowOverrun(Broker):
    """Dispatch ignores the consumer window: every pending message is pushed to the consumer."""

    def _deliver(self, queue: QueueState) -> bool:
        moved = False
        for consumer in queue.consumers:
            if consumer.config.browser or consumer.no_buffering:
                continue
            while len(queue.pending):
                ref = self._first_match(queue, consumer)
                if ref is None:
                    break
                queue.pending.remove(ref.id)
                self._dispatch(queue, consumer, ref)
                consumer.buffer[ref.id] = ref
                consumer.buffer_bytes += ref.size
                moved = True
        return moved


class _CloseReturnsAll(Broker):
    """A consumer close returns what every consumer of the queue holds, not only its own."""

    def close(self, consumer_name: str) -> None:
        queue = self._queue(self._consumer(consumer_name).config.queue)
        others = [c for c in queue.consumers if c.name != consumer_name]
        super().close(consumer_name)
        for other in others:
            self._return_all(other, delay=False)
        self._settle(queue)


class _PendingListsDelivering(Broker):
    """DELIVERY-15: the pending listing also walks the delivering messages (a browse iterator over
    the queue's whole reference list), so a message held by a consumer shows as pending too."""

    def pending_ids(self, queue_name: str) -> list[str]:
        queue = self._queue(queue_name)
        held = [m for consumer in queue.consumers for m in (*consumer.buffer, *consumer.received)]
        return super().pending_ids(queue_name) + held


class _CloseDropsPrefetched(Broker):
    """DELIVERY-21: a consumer close acknowledges (drops) the messages dispatched to its buffer that
    the client never received, instead of returning them to the queue."""

    def close(self, consumer_name: str) -> None:
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        for ref in list(consumer.buffer.values()):
            del consumer.buffer[ref.id]
            consumer.buffer_bytes -= ref.size
            self._undeliver(queue, ref)
            self._terminate(queue, ref, "acknowledged")
        super().close(consumer_name)


class _FirstConsumer(Broker):
    """Dispatch always offers the next message to the first consumer with room (no round robin)."""

    def _deliver(self, queue: QueueState) -> bool:
        moved = False
        while self._deliver_one(queue):
            moved = True
        return moved

    def _deliver_one(self, queue: QueueState) -> bool:
        for consumer in queue.consumers:
            if not consumer.has_room():
                continue
            ref = self._first_match(queue, consumer)
            if ref is None:
                continue
            self._take(queue, consumer, ref)
            self._push(queue, consumer, ref)
            return True
        return False


class _DoubleAckCounts(Broker):
    """A second ack of an acknowledged message answers ok and counts it acknowledged again."""

    def ack(self, consumer_name: str, msg_id: str, tx: bool = False) -> AckResult:
        done = self.__dict__.setdefault("_done", set())
        result = super().ack(consumer_name, msg_id, tx)
        if result == "ok":
            done.add((consumer_name, msg_id))
        elif (consumer_name, msg_id) in done:
            self._queue(self._consumer(consumer_name).config.queue).counters.acknowledged += 1
            return "ok"
        return result


class _WrongConsumerAck(Broker):
    """An ack from a consumer that does not hold the message acknowledges it where it is held."""

    def ack(self, consumer_name: str, msg_id: str, tx: bool = False) -> AckResult:
        consumer = self._consumer(consumer_name)
        if msg_id not in consumer.received:
            for other in self._queue(consumer.config.queue).consumers:
                if msg_id in other.received:
                    return super().ack(other.name, msg_id, tx)
        return super().ack(consumer_name, msg_id, tx)


class _MultiplierIgnored(Broker):
    """The redelivery delay is the same for every redelivery (multiplier ignored)."""

    def _redelivery_delay(self, queue: QueueState, ref: Ref) -> int:
        cfg = queue.config
        cap = cfg.max_redelivery_delay_ms
        return min(cfg.redelivery_delay_ms, cap if cap is not None else cfg.redelivery_delay_ms * 10)


class _CapIgnored(Broker):
    """The redelivery delay keeps growing past max-redelivery-delay (cap ignored)."""

    def _redelivery_delay(self, queue: QueueState, ref: Ref) -> int:
        cfg = queue.config
        if cfg.redelivery_delay_ms <= 0:
            return 0
        return int(cfg.redelivery_delay_ms * cfg.redelivery_multiplier ** max(ref.delivery_count - 1, 0))


class _SeventeenthToHead(Broker):
    """A queue holding 16 pending messages puts the 17th at the head instead of the tail."""

    def _add_tail(self, queue: QueueState, ref: Ref) -> None:
        full = len(queue.pending) == 16
        super()._add_tail(queue, ref)
        if full and ref.id in queue.pending:
            queue.pending.remove(ref.id)
            queue.pending.add_head(ref, ref.size)


class _MoveDropsDeliveryTime(Broker):
    """A moved message's copy loses its delivery time: pending at the target's tail at once (DELIVERY-48)."""

    def move_message(self, queue_name: str, msg_id: str, to: str) -> bool:
        queue = self.queues.get(queue_name)
        ref = queue.refs.get(msg_id) if queue is not None else None
        if ref is not None and self._movable(ref):
            ref.msg = attrs.evolve(ref.msg, scheduled_at_ms=None)
        return super().move_message(queue_name, msg_id, to)


QUEUE_MUTANTS: tuple[Mutant, ...] = (
    Mutant("priority-ignored", "delivery", "priorities are ignored: plain FIFO", _options(priority_levels=1)),
    Mutant("window-overrun", "delivery", "the consumer window is not enforced on dispatch",
           _broker(_WindowOverrun)),
    Mutant("ring-evicts-delivering", "ring", "the ring counts delivering messages and evicts them",
           _options(bound_counts="stored", evict_unacked=True)),
    Mutant("cancel-to-tail", "ring", "cancelled messages return to the tail, not their place",
           _options(return_placement="tail")),
    Mutant("scheduled-to-tail", "scheduling", "due scheduled messages go to the tail",
           _options(scheduled_placement="tail")),
    Mutant("scheduled-ignores-ring", "scheduling", "the ring is not enforced when a scheduled message "
           "arrives", _broker(_ScheduledIgnoresRing)),
    # SCHED-4 / REDELIVERY-7 at the due boundary (the scheduling machine's probe_due)
    Mutant("fires-1ms-early", "scheduling", "scheduled messages and delayed redeliveries fire 1 ms "
           "before they are due", _broker(_FiresEarly)),
    # DELIVERY-48 (the scheduling machine's move, where the adapter offers move and deliver_scheduled)
    Mutant("move-pending-only", "scheduling", "a move by id finds pending messages only, behind an "
           "adapter that claims move_listed (Artemis 2.53.0+)", _options(move_listed=False)),
    Mutant("move-drops-delivery-time", "scheduling", "a moved message's copy loses its delivery time",
           _broker(_MoveDropsDeliveryTime)),
    Mutant("count-on-cancel", "redelivery", "the delivery count is kept when a message is cancelled "
           "without an ack", _options(cancel_undoes_delivery_count=False)),
    Mutant("delay-on-close", "redelivery", "the redelivery delay is applied on a plain consumer close",
           _options(delay_on_close=True)),
    Mutant("drop-still-delivers", "paging", "DROP reports dropped but still delivers",
           _broker(_DropStillDelivers)),
    Mutant("block-loses-message", "paging", "BLOCK loses the blocked message when it unblocks",
           _broker(_BlockLosesMessage)),
    Mutant("copy-per-queue", "paging", "a copy per queue instead of one per address",
           _broker(_CopyPerQueueBroker)),
    # the checks of the rules that had model tests only (ring.pending_bound, close.tx_kept, send.blocked)
    Mutant("ring-return-over-bound", "ring", "messages a close or rollback returns to a full ring are "
           "all kept, above the ring size", _options(return_over_bound="keep")),
    Mutant("close-rolls-back-tx", "redelivery", "a consumer close also rolls back what it acknowledged "
           "in its session's open transaction", _options(close_keeps_tx=False)),
    Mutant("block-pages", "paging", "BLOCK pages the message instead of holding the producer",
           _broker(_BlockPages)),
    # several consumers per queue, invalid acks, deep redelivery, long queues
    Mutant("close-returns-all-consumers", "delivery", "a consumer close returns every consumer's messages",
           _broker(_CloseReturnsAll)),
    # DELIVERY-15 (pending.one_place) and DELIVERY-21 (drain.accounted)
    Mutant("pending-lists-delivering", "delivery", "the pending order lists the messages consumers hold "
           "too", _broker(_PendingListsDelivering)),
    Mutant("close-drops-prefetched", "delivery", "a consumer close drops the messages in its buffer "
           "(counted acknowledged) instead of returning them", _broker(_CloseDropsPrefetched)),
    Mutant("dispatch-first-consumer", "delivery", "dispatch always picks the first consumer with room "
           "(no round robin)", _broker(_FirstConsumer)),
    Mutant("exclusive-first-subscriber", "delivery", "an exclusive queue's first subscriber is its active "
           "consumer at once (DELIVERY-26: Artemis makes the one a dispatch serves active)",
           _options(single_active_next="registration")),
    Mutant("double-ack-counts", "delivery", "a second ack of the same message is accepted and counted "
           "again", _broker(_DoubleAckCounts)),
    # DELIVERY-8 without the capability invalid_ack: the delivery machine still sends a second ack
    Mutant("double-ack-without-invalid-ack", "delivery", "a second ack of the same message is accepted "
           "and counted again, behind an adapter without the capability invalid_ack",
           _broker(_DoubleAckCounts), without=frozenset({"invalid_ack"})),
    Mutant("wrong-consumer-ack", "delivery", "an ack from a consumer that does not hold the message is "
           "accepted", _broker(_WrongConsumerAck)),
    Mutant("redelivery-multiplier-ignored", "redelivery", "the redelivery multiplier is ignored",
           _broker(_MultiplierIgnored)),
    # the cap shows only once the grown delay passes it (three redeliveries, a cap below the growth):
    # more examples than the ci settings' 200 (tests/selftest/test_mutants.py, EXAMPLES)
    Mutant("redelivery-cap-ignored", "redelivery", "max-redelivery-delay does not cap the delay",
           _broker(_CapIgnored)),
    Mutant("dla-off-by-one", "redelivery", "dead-lettered only after max-delivery-attempts + 1 deliveries",
           _options(dla_threshold="gt")),
    Mutant("seventeenth-to-head", "delivery", "the 17th pending message goes to the head of the queue",
           _broker(_SeventeenthToHead)),
    # EXPIRY-4 / EXPIRY-3: expiry only at the head; the queue TTL caps a message's own
    Mutant("expiry-head-only", "expiry", "only the head of the queue expires (an expired message behind "
           "a longer-lived one stays)", _options(expiry_scope="head")),
    Mutant("expiry-queue-ttl-caps", "expiry", "the queue's expiry delay also caps a message's own "
           "expiration", _options(ttl_combination="min")),
)

# ---------------------------------------------------------------- storage (VOS queue files)
class _BestFitFile(QueueFile):
    """Without a slot of the exact length, the smallest larger free slot is taken whole (best fit)."""

    def put(self, msg_id: str, size: int) -> PutResult:
        stored = self.config.stored_size(size)
        if not self._index.get(stored):
            larger = [length for length in self._index if length > stored]
            if larger:
                size = min(larger)
        return super().put(msg_id, size)


class _TruncateWhileOpen(QueueFile):
    """s$truncate_queue ignores requesters that hold the queue open."""

    def truncate(self, caller: str = "server") -> TruncateResult:
        held, self._requesters = self._requesters, 0
        try:
            return super().truncate(caller)
        finally:
            self._requesters = held


class _OldestSlot(QueueFile):
    """The free slots of one length are a FIFO: the oldest deleted slot is reused first."""

    def put(self, msg_id: str, size: int) -> PutResult:
        slots = self._index.get(self.config.stored_size(size))
        if slots and len(slots) > 1:
            slots.append(slots.pop(0))
        return super().put(msg_id, size)


class _EmptyReclaims(QueueFile):
    """An emptied queue forgets its index and reclaims its space (as if truncated by itself)."""

    def remove(self, msg_id: str) -> RemoveResult:
        result = super().remove(msg_id)
        if result == "ok" and not self.live:
            self._index.clear()
            self._free_slots = self._free_bytes = self._virgin = 0
        return result


def _store(cls: type[QueueFile]) -> WorldFactory:
    class _StoreWorld(World):
        def call(self, op: str, **kw: object) -> object:
            if op == "store":
                config = StoreConfig(**kw)  # type: ignore[arg-type]
                self.stores[config.name] = cls(config)
                return None
            return super().call(op, **kw)

    return lambda options: _StoreWorld(options)


STORAGE_MUTANTS: tuple[Mutant, ...] = (
    Mutant("storage-best-fit", "storage", "a free slot larger than the message is reused (best fit) "
           "instead of exact-length only", _store(_BestFitFile)),
    Mutant("storage-truncate-while-open", "storage", "truncate is allowed while a requester holds the "
           "queue open", _store(_TruncateWhileOpen)),
    Mutant("storage-oldest-slot", "storage", "the oldest deleted slot of the length is reused instead of "
           "the most recently deleted", _store(_OldestSlot)),
    Mutant("storage-empty-reclaims", "storage", "an emptied queue forgets its index and reclaims its "
           "space", _store(_EmptyReclaims)),
)


# ---------------------------------------------------------------- flow control (throttle, admission)
class _ReleaseAtHigh(Throttle):
    """The throttle wakes as soon as the count is back at high, not at low."""

    def _released(self) -> bool:
        return self.in_flight <= self.config.high


class _AlwaysGe(Throttle):
    """The block test is count >= high even under the `gt` rule."""

    def _over(self) -> bool:
        return self.in_flight >= self.config.high


class _ReleaseForgetsWaiting(Throttle):
    """On release the messages left on the destination while blocked are never taken again."""

    def _drain(self) -> list[str]:
        self._waiting.clear()
        return super()._drain()


class _EarlyScan(Admission):
    """The scanner rejects a request one scan period before its wait limit (age at the next tick)."""

    def _expired(self, request: object, wait_ms: int, now: int) -> bool:
        return now - request.created_ms + self.config.scan_period_ms >= wait_ms  # type: ignore[attr-defined]


class _FreeLockIsBusy(Admission):
    """PCBUSY reads a free lock as begin = 0, so a long-running broker looks busy (A.3)."""

    def page_cache_busy(self, now: int) -> bool:
        held_for = now - (self.lock_begin or 0)
        return self.config.busy_after_ms < held_for < self.config.busy_upper_ms


class _TimeoutLeavesRequest(Admission):
    """The timeout scan answers expired requests but leaves them queued, so a worker runs them too."""

    def tick(self, now: int) -> None:
        if not self.config.enabled:
            return
        for name in self._order:
            wait_ms = self.config.queues[name].wait_ms
            for request in self._queues[name]:
                if not self._expired(request, wait_ms, now):
                    break
                if self._answers[request.id] is None:
                    self._reject(request, "TIMEOUT_CLEAN_QUEUE", now, len(self._queues[name]))


class _OverloadLate(Admission):
    """The queue accepts one request beyond its capacity before refusing OVERLOAD."""

    def submit(self, queue: str, request_id: str, now: int) -> str:  # type: ignore[override]
        q = self._queue(queue)
        if len(q) == self.config.queues[queue].capacity and request_id not in self._answers:
            q.append(type(q[0])(request_id, queue, now))
            self._answers[request_id] = None
            return "queued"
        return super().submit(queue, request_id, now)


class _GuardsEveryQueue(Admission):
    """The page-cache guards refuse every request, not only sends (ADMISSION-19 / -20)."""

    def _guarded(self, queue: str, now: int) -> bool:
        return self.config.page_cache_guards and self.page_cache_busy(now)


def _flow(throttle: type[Throttle] = Throttle, admission: type[Admission] = Admission) -> WorldFactory:
    """A world whose throttles or admissions are built from the given (mutant) classes."""

    class _FlowWorld(World):
        def call(self, op: str, **kw: object) -> object:
            result = super().call(op, **kw)
            if op == "throttle":
                for name, component in self.throttles.items():
                    if type(component) is not throttle:
                        self.throttles[name] = throttle(component.config)
            elif op == "admission":
                for name, gate in self.admissions.items():
                    if type(gate) is not admission:
                        self.admissions[name] = admission(gate.config)
            return result

    return lambda options: _FlowWorld(options)


FLOW_MUTANTS: tuple[Mutant, ...] = (
    Mutant("throttle-release-at-high", "throttle", "the blocked throttle is released when the count is "
           "back at high instead of low", _flow(throttle=_ReleaseAtHigh)),
    Mutant("throttle-ge-under-gt", "throttle", "the throttle blocks at count >= high under the gt rule",
           _flow(throttle=_AlwaysGe)),
    Mutant("throttle-release-forgets-waiting", "throttle", "messages left on the destination while "
           "blocked are lost at the release", _flow(throttle=_ReleaseForgetsWaiting)),
    Mutant("admission-early-scan", "admission", "the scanner rejects a young request one period before "
           "its wait limit", _flow(admission=_EarlyScan)),
    Mutant("admission-free-lock-busy", "admission", "PCBUSY fires without a held lock (free lock read as "
           "begin 0)", _flow(admission=_FreeLockIsBusy)),
    Mutant("admission-second-answer", "admission", "a timed-out request stays queued and is answered a "
           "second time by a worker", _flow(admission=_TimeoutLeavesRequest)),
    Mutant("admission-overload-late", "admission", "the queue takes one request beyond its capacity",
           _flow(admission=_OverloadLate)),
    Mutant("admission-guards-every-queue", "admission", "a busy page cache refuses pulls too, not only "
           "sends", _flow(admission=_GuardsEveryQueue)),
)


def _retention_mutants() -> tuple[Mutant, ...]:
    """The retention area's mutants (:mod:`.retention_mutants`), claiming jetstream."""
    return tuple(Mutant(name, "retention", description, _broker(cls), options=JETSTREAM)
                 for name, description, cls in RETENTION_MUTANTS)


MUTANTS: tuple[Mutant, ...] = (QUEUE_MUTANTS + STORAGE_MUTANTS + FLOW_MUTANTS + _retention_mutants()
                               + tuple(Mutant(name, "lastvalue", description, _broker(cls))
                                       for name, description, cls in LASTVALUE_MUTANTS))
