"""The executable queue semantics: addresses, queues, consumers, ring, redelivery, scheduling, paging.

One :class:`Broker` holds the whole state and a logical clock in milliseconds that only
:meth:`Broker.advance` moves. Every operation is O(log n) (or amortised O(1)) in the live state and
independent of history; expected outcomes are return values, misuse raises ModelMisuse.
Implements DELIVERY-* (with DELIVERY-11 cumulative acks and DELIVERY-12 non-destructive queues),
RING-1..16 (RING-15 last-value queues, RING-16 retroactive addresses), REDELIVERY-1..10, SCHED-1..8
and PAGING-1..16 (PAGING-13..16 page limits) of spec/ with the options of
:class:`~.options.ModelOptions` where the sources disagree.
"""

from __future__ import annotations

from typing import Literal

import attrs

from .config import AddressConfig, ConsumerConfig, Message, QueueConfig
from .errors import ModelMisuse, Unsupported
from .options import ModelOptions, ReturnPlacement
from .pending import PendingList
from .profiles import ARTEMIS
from .selectors import compile_selector
from .state import AddressState, ConsumerState, QueueState, Ref, ref_priority

SendResult = Literal["accepted", "paged", "dropped", "failed", "blocked"]
AckResult = Literal["ok", "failed"]
Reason = Literal["acknowledged", "replaced", "killed"]


@attrs.frozen
class QueueCounters:
    """What a queue shows (DELIVERY-1: message_count = pending + delivering + scheduled + paged)."""

    message_count: int
    pending_count: int
    delivering_count: int
    scheduled_count: int
    paged_count: int
    added: int
    acknowledged: int
    replaced: int
    killed: int


@attrs.frozen
class Event:
    """Something the model did on its own account (eviction, dead letter, firing, depage, unblock)."""

    time_ms: int
    kind: str
    queue: str
    msg_id: str
    detail: str = ""


class Broker:
    """The reference broker for one profile (see :mod:`.profiles`)."""

    def __init__(self, options: ModelOptions = ARTEMIS) -> None:
        self.options = options
        self.now_ms = 0
        self.addresses: dict[str, AddressState] = {}
        self.queues: dict[str, QueueState] = {}
        self.consumers: dict[str, ConsumerState] = {}
        self.events: list[Event] = []
        self.record_events = False
        #: settle's per-profile switches (the options are frozen)
        self._whole_pages = options.depage_rule == "address_memory"
        self._hysteresis = options.overflow == "reject_new" and options.reject_check == "after"
        #: addresses an operation changed and the next settle must look at (see _settle)
        self._dirty: dict[str, AddressState] = {}

    # ------------------------------------------------------------------ declarations
    def _need(self, feature: str, what: str) -> None:
        if not self.options.has(feature):
            raise Unsupported(f"{what} is not supported by profile {self.options.name}")

    def declare_address(self, config: AddressConfig) -> None:
        """Create an address (PAGING-1, PAGING-4 defaults)."""
        if config.name in self.addresses:
            raise ModelMisuse(f"address {config.name!r} already exists")
        policy_feature = {"FAIL": "fail_policy", "BLOCK": "block_policy", "DROP": "drop_policy"}
        if config.full_policy in policy_feature:
            self._need(policy_feature[config.full_policy], f"full_policy {config.full_policy}")
        elif config.full_policy != "PAGE":
            raise ModelMisuse(f"unknown full_policy {config.full_policy!r}")
        elif config.max_size_bytes >= 0 or config.max_size_messages >= 0:
            self._need("paging", "paging")
        if config.page_size_bytes <= 0:
            raise ModelMisuse("page_size_bytes must be positive")
        if (config.page_full_policy is not None or config.page_limit_bytes >= 0
                or config.page_limit_messages >= 0):
            self._need("page_limits", "page limits")
            if config.page_full_policy not in (None, "DROP", "FAIL"):
                raise ModelMisuse(f"unknown page_full_policy {config.page_full_policy!r}")
        if config.retroactive_message_count != 0:
            self._need("retroactive", "retroactive_message_count")
            if config.retroactive_message_count < 0:
                raise ModelMisuse("retroactive_message_count must be >= 0")
        self.addresses[config.name] = AddressState(config)

    def declare_queue(self, config: QueueConfig) -> None:
        """Create a queue on its address (created with defaults when missing)."""
        if config.name in self.queues:
            raise ModelMisuse(f"queue {config.name!r} already exists")
        if config.ring_size != -1:
            self._need("ring", "ring_size")
            if config.ring_size < 0:
                raise ModelMisuse("ring_size must be -1 or >= 0")
        if config.redelivery_delay_ms:
            self._need("redelivery_delay", "redelivery_delay_ms")
        if config.filter is not None:
            self._need("selectors", "filter")
        if config.non_destructive:
            self._need("non_destructive", "non_destructive")
        if config.last_value_key is not None:
            self._need("last_value", "last_value_key")
        address = config.address_name
        if address not in self.addresses:
            self.declare_address(AddressConfig(name=address))
        state = self.addresses[address]
        queue = QueueState(config, self.options.priority_levels, state)
        self.queues[config.name] = queue
        state.queues.append(config.name)
        state.queue_states.append(queue)
        if state.retro:
            self._copy_retroactive(state, queue)

    def _copy_retroactive(self, address: AddressState, queue: QueueState) -> None:
        """RING-16: a new queue gets copies of the address's retained messages its filter matches,
        oldest first, through its tail (its ring applies); the retained messages stay."""
        for message in list(address.retro or ()):
            if queue.filter is None or queue.filter(message.properties):
                self._admit_to_queue(queue, address, message)
        self._settle(queue)

    def open_consumer(self, config: ConsumerConfig) -> None:
        """Open a consumer; dispatch to it happens at once (DELIVERY window rules)."""
        if config.name in self.consumers:
            raise ModelMisuse(f"consumer {config.name!r} already exists")
        queue = self._queue(config.queue)
        if config.selector is not None:
            self._need("selectors", "selector")
        if config.window_bytes != 1024 * 1024 and config.window_bytes not in (-1, 0):
            self._need("window_bytes", "window_bytes")
        state = ConsumerState(config, compile_selector(config.selector))
        self.consumers[config.name] = state
        if config.cumulative_ack:
            self._need("cumulative_ack", "cumulative_ack")
        if not config.browser:
            if queue.non_destructive:
                state.unseen = self._iterator_over(queue)
            queue.consumers.append(state)
        self._settle(queue)

    def _iterator_over(self, queue: QueueState) -> PendingList[Ref]:
        """DELIVERY-12: a new consumer of a non-destructive queue starts at the head of the list."""
        unseen: PendingList[Ref] = PendingList(self.options.priority_levels, ref_priority)
        listed = list(queue.pending)
        for n, ref in enumerate(listed):
            unseen.add_tail(ref, n - len(listed), ref.size)
        return unseen

    def set_ring_size(self, queue_name: str, size: int) -> None:
        """RING-2: change the ring size; nothing is purged."""
        self._need("set_ring_size", "set_ring_size")
        if size < -1:
            raise ModelMisuse("ring size must be -1 or >= 0")
        self._queue(queue_name).ring_size = size

    # ------------------------------------------------------------------ lookups
    def _queue(self, name: str) -> QueueState:
        try:
            return self.queues[name]
        except KeyError:
            raise ModelMisuse(f"unknown queue {name!r}") from None

    def _consumer(self, name: str) -> ConsumerState:
        try:
            return self.consumers[name]
        except KeyError:
            raise ModelMisuse(f"unknown consumer {name!r}") from None

    def _event(self, kind: str, queue: str, msg_id: str, detail: str = "") -> None:
        if self.record_events:
            self.events.append(Event(self.now_ms, kind, queue, msg_id, detail))

    # ------------------------------------------------------------------ send / routing
    def send(self, to: str, message: Message) -> SendResult:
        """Route a message to every queue of address `to` whose filter matches (PAGING-2, 3, 6, 7)."""
        address = self.addresses.get(to)
        if address is None:
            raise ModelMisuse(f"unknown address {to!r}")
        if message.size < 0:
            raise ModelMisuse("message size must be >= 0")
        if message.scheduled_at_ms is not None and message.scheduled_at_ms > 0:
            self._need("scheduling", "scheduled_at_ms")
        result = self._route(address, message)
        self._settle()
        return result

    def _route(self, address: AddressState, message: Message, unblocking: bool = False) -> SendResult:
        self._touch(address)
        policy = address.config.full_policy
        if policy == "BLOCK" and not unblocking and (address.blocked or address.full()):
            address.blocked.append(message)
            self._event("blocked", address.name, message.id)
            return "blocked"
        if policy in ("DROP", "FAIL") and address.full():
            self._event("dropped", address.name, message.id, policy)
            return "dropped" if policy == "DROP" else "failed"
        if address.page_full:  # PAGING-14: page limits reached, page-full-policy applies
            page_policy = address.config.page_full_policy
            self._event("dropped", address.name, message.id, f"page_full {page_policy}")
            return "dropped" if page_policy == "DROP" else "failed"
        if address.retro is not None:
            address.retro.append(message)  # RING-16: the internal ring queue keeps the last n
        targets = [queue for queue in address.queue_states
                   if queue.filter is None or queue.filter(message.properties)]
        if not targets:
            return "accepted"  # no queue matches: routed nowhere
        for queue in targets:
            if message.id in queue.refs:
                raise ModelMisuse(f"message id {message.id!r} is already in queue {queue.name!r}")
        if policy == "PAGE" and address.paging:
            page = address.page_for(message.size)
            self._check_page_files(address)
            limit = address.config.message_page_limit
            for queue in targets:
                ref = Ref(message, queue.name, place="paged", page=page)
                queue.refs[ref.id] = ref
                queue.paged.append(ref)
                queue.counters.added += 1
                queue.page_counter += 1
                if limit is not None and queue.page_counter >= limit:
                    address.page_full = True  # PAGING-15: checked as the counter is incremented
                address.pages[page].append(ref)
                address.page_outstanding[page] += 1
            self._event("paged", address.name, message.id, str(page))
            return "paged"
        outcome: SendResult = "accepted"
        for queue in targets:
            if not self._admit_to_queue(queue, address, message):
                outcome = "accepted" if self.options.silent_overflow else self._overflow_result()
        if policy == "PAGE" and address.full() and address.copies:
            address.paging = True  # PAGING-6: the crossing message stays in memory
            self._check_page_files(address)  # PAGING-14: page mode opens the first page file
            self._event("paging_started", address.name, message.id)
        return outcome

    def _check_page_files(self, address: AddressState) -> None:
        """PAGING-14: page-full once the page files exceed page_limit_bytes // page_size_bytes."""
        max_pages = address.config.max_pages
        if max_pages is not None and address.page_files() > max_pages:
            address.page_full = True

    def _check_page_release(self, address: AddressState) -> None:
        """PAGING-16: at page cleanup, clear page-full when the largest page counter is below
        page_limit_messages and the page files are within the byte limit; stopping paging clears it."""
        if not address.page_full:
            return
        if address.paging:
            cfg = address.config
            limit = cfg.message_page_limit
            if limit is not None and max(self.queues[q].page_counter for q in address.queues) >= limit:
                return
            max_pages = cfg.max_pages
            if max_pages is not None and address.page_files() > max_pages:
                return
        address.page_full = False
        self._event("page_free", address.name, "")

    def _overflow_result(self) -> SendResult:
        return "failed" if self.options.overflow == "reject_new" else "dropped"

    def _admit_to_queue(self, queue: QueueState, address: AddressState, message: Message) -> bool:
        """Put a new message on one queue; False when the queue's bound refused it (RING-3 options)."""
        if queue.ring_size >= 0 and not self._bound_accepts(queue):
            self._event("rejected", queue.name, message.id, self.options.overflow)
            return False
        ref = Ref(message, queue.name)
        queue.refs[ref.id] = ref
        queue.counters.added += 1
        address.hold(message)
        ref.in_memory = True
        self._enqueue_new(queue, ref)
        return True

    def _bound_accepts(self, queue: QueueState) -> bool:
        """reject_new / drop_newest: may one more message enter? (drop_head always admits.)"""
        bound, opts = queue.ring_size, self.options
        if bound < 0 or opts.overflow == "drop_head":
            return True
        count = queue.bound_count(opts.bound_counts)
        if opts.overflow == "drop_newest":
            return count < bound
        if opts.reject_check == "before":  # RING-22: refused before the enqueue
            if count + 1 > bound:
                queue.rejecting = True
                return False
            return True
        # RING-23 (quorum): the limit is evaluated after the enqueue: the message that goes over is
        # accepted and the queue rejects from then on, until count <= trunc(ratio x bound)
        self._reject_state(queue)
        if queue.rejecting:
            return False
        queue.rejecting = count + 1 > bound
        return True

    def _reject_state(self, queue: QueueState) -> None:
        """RING-23: the quorum reject-publish state follows the count whenever it changes (enqueue,
        return, checkout, settle), as rabbit_fifo evaluates the limit: over the bound -> rejecting,
        at or below trunc(ratio x bound) -> accepting again, in between -> unchanged."""
        opts = self.options
        count = queue.bound_count(opts.bound_counts)
        if count > queue.ring_size:
            queue.rejecting = True
        elif count <= opts.unblock_ratio * queue.ring_size:
            queue.rejecting = False

    def _enqueue_new(self, queue: QueueState, ref: Ref) -> None:
        """A message entering the queue from routing or depage: scheduled or tail (SCHED-2, S7)."""
        scheduled = ref.msg.scheduled_at_ms
        queue.live[ref.id] = ref
        if scheduled is not None and scheduled > 0 and self.options.has("scheduling"):
            ref.place = "scheduled"
            queue.scheduler.add(scheduled, ref, head=False)
            return
        self._add_tail(queue, ref)

    def _add_tail(self, queue: QueueState, ref: Ref) -> None:
        """RING-3: insert at the tail, then evict exactly one head when over the bound."""
        ref.place = "pending"
        queue.sequence += 1
        ref.sequence = sequence = queue.sequence
        queue.pending.add_tail(ref, sequence, ref.size)
        if queue.special:
            if queue.non_destructive:
                self._listed(queue, ref, head=False)
            self._lv_put(queue, ref)
        bound = queue.ring_size
        if bound >= 0:
            opts = self.options
            if opts.dispatch_before_bound and queue.consumers:
                self._deliver(queue)
            if opts.overflow == "drop_head" and queue.bound_count(opts.bound_counts) > bound:
                self._evict_one(queue)

    def _evict_one(self, queue: QueueState) -> None:
        """Remove one message to keep the bound: the pending head (RING-4/5/6), or with evict_unacked
        the oldest stored message whatever its state (JetStream discard=old)."""
        if self.options.evict_unacked:
            for ref in queue.live.values():
                if ref.place in ("pending", "delivering"):
                    self._evict(queue, ref)
                    return
            return
        victim = queue.pending.poll()
        if victim is not None:
            if queue.special:
                self._unlisted(queue, victim)
            self._terminate(queue, victim, "replaced")
            self._event("replaced", queue.name, victim.id, "ring")

    def _evict(self, queue: QueueState, ref: Ref) -> None:
        if ref.place == "pending":
            queue.pending.remove(ref.id)
            if queue.special:
                self._unlisted(queue, ref)
        else:
            self._take_from_consumers(queue, ref)
        self._terminate(queue, ref, "replaced")
        self._event("replaced", queue.name, ref.id, "ring")

    def _take_from_consumers(self, queue: QueueState, ref: Ref) -> None:
        for consumer in queue.consumers:
            if ref.id in consumer.buffer:
                del consumer.buffer[ref.id]
                consumer.buffer_bytes -= ref.size
            elif ref.id in consumer.received:
                del consumer.received[ref.id]
            elif ref in consumer.tx_acked:
                consumer.tx_acked.remove(ref)
            else:
                continue
            consumer.evicted.add(ref.id)
            break
        else:
            queue.orphans.pop(ref.id, None)
        self._undeliver(queue, ref)

    def _undeliver(self, queue: QueueState, ref: Ref) -> None:
        queue.delivering -= 1
        queue.delivering_bytes -= ref.size

    def _terminate(self, queue: QueueState, ref: Ref, reason: Reason) -> None:
        """A ref leaves the queue for good: counters (C5), address memory, page completion (PAGING-9)."""
        counters = queue.counters
        if reason == "acknowledged":
            counters.acknowledged += 1
        elif reason == "replaced":
            counters.replaced += 1
        else:
            counters.killed += 1
        ref.place = "done"
        del queue.refs[ref.id]
        queue.live.pop(ref.id, None)
        address = queue.address
        self._dirty[address.name] = address
        if ref.in_memory:
            address.release(ref.msg)
            ref.in_memory = False
        if ref.page is not None:
            queue.page_counter -= 1
        if ref.page is not None and ref.page in address.page_outstanding:
            address.page_outstanding[ref.page] -= 1
            if address.page_outstanding[ref.page] == 0:
                self._drop_page(address, ref.page)

    def _drop_page(self, address: AddressState, page: int) -> None:
        del address.pages[page]
        del address.page_outstanding[page]
        if not address.pages:
            address.paging = False  # PAGING-8: leave page mode when no page is left
            self._event("paging_stopped", address.name, "")
        self._check_page_release(address)  # PAGING-16: page cleanup

    # ------------------------------------------------------------------ last value, non-destructive
    def _listed(self, queue: QueueState, ref: Ref, *, head: bool) -> None:
        """DELIVERY-12: a ref entered the list of a non-destructive queue: every consumer's iterator
        will still reach it."""
        for consumer in queue.consumers:
            if consumer.unseen is not None:
                if head:
                    consumer.unseen.add_head(ref, ref.size)
                else:
                    consumer.unseen.add_tail(ref, ref.sequence, ref.size)

    def _lv_put(self, queue: QueueState, ref: Ref) -> None:
        """RING-15: a new (or due scheduled) message becomes its key's current value; the previous
        one is pruned after the next dispatch pass (LastValueQueue#trackLastValue)."""
        value = queue.last_value(ref)
        if value is not None:
            current = queue.last_values.get(value)
            queue.last_values[value] = ref
            if current is not None and current is not ref:
                queue.lv_candidates.append(current)

    def _lv_if_absent(self, queue: QueueState, ref: Ref) -> None:
        """RING-15: a message returned by a rollback or close is current only if no value is."""
        value = queue.last_value(ref)
        if value is not None:
            queue.last_values.setdefault(value, ref)

    def _lv_check(self, queue: QueueState, ref: Ref) -> None:
        """RING-15: a listed ref that is not its key's current value is pruned after the next pass."""
        value = queue.last_value(ref)
        if value is not None and queue.last_values.get(value) is not ref:
            queue.lv_candidates.append(ref)

    def _unlisted(self, queue: QueueState, ref: Ref) -> None:
        """A ref left the pending list (dispatch, eviction, prune): consumers' iterators skip it,
        and it stops being its key's current value (LastValueQueue#refRemoved)."""
        if queue.non_destructive:
            for consumer in queue.consumers:
                if consumer.unseen is not None and ref.id in consumer.unseen:
                    consumer.unseen.remove(ref.id)
        self._forget_value(queue, ref)

    def _forget_value(self, queue: QueueState, ref: Ref) -> None:
        if queue.last_value_key is not None:
            value = queue.last_value(ref)
            if value is not None and queue.last_values.get(value) is ref:
                del queue.last_values[value]

    def _prune_last_values(self, queue: QueueState) -> bool:
        """RING-15: after a dispatch pass, pending refs that are not their key's current value are
        removed with reason REPLACED (LastValueQueue#pruneLastValues); a consumer still holding one
        (non-destructive) keeps it delivering."""
        candidates, queue.lv_candidates = queue.lv_candidates, []
        pruned = False
        for ref in candidates:
            if ref.place != "pending" or ref.id not in queue.pending:
                continue
            if queue.last_values.get(queue.last_value(ref)) is ref:
                continue
            queue.pending.remove(ref.id)
            self._unlisted(queue, ref)
            self._terminate(queue, ref, "replaced")
            self._event("replaced", queue.name, ref.id, "last_value")
            pruned = True
        return pruned

    # ------------------------------------------------------------------ dispatch and consume
    def _dispatch(self, queue: QueueState, consumer: ConsumerState, ref: Ref) -> None:
        """REDELIVERY-1: the delivery count is incremented at dispatch."""
        ref.delivery_count += 1
        if not queue.non_destructive:
            ref.place = "delivering"
        queue.delivering += 1
        queue.delivering_bytes += ref.size

    def _first_match(self, queue: QueueState, consumer: ConsumerState) -> Ref | None:
        source = queue.pending if consumer.unseen is None else consumer.unseen
        if consumer.selector is None:
            return source.peek()
        for ref in source:
            if consumer.matches(ref):
                return ref
        return None

    def _take(self, queue: QueueState, consumer: ConsumerState, ref: Ref) -> None:
        """Dispatch takes `ref` off the list (C2), or on a non-destructive queue only moves the
        consumer's iterator past it (DELIVERY-12)."""
        if consumer.unseen is not None:
            consumer.unseen.remove(ref.id)
            return
        queue.pending.remove(ref.id)
        if queue.special:
            self._unlisted(queue, ref)

    def _deliver(self, queue: QueueState) -> bool:
        """Dispatch pending messages round-robin to consumers with room; True if anything moved."""
        moved = False
        consumers = queue.consumers
        pending = queue.pending
        listed = pending.level_of
        plain = not queue.special
        while listed and consumers:
            n = len(consumers)
            for offset in range(n):
                index = (queue.next_consumer + offset) % n
                consumer = consumers[index]
                if not consumer.has_room():
                    continue
                if plain and consumer.selector is None:
                    ref = pending.peek()
                    if ref is None:
                        continue
                    pending.remove(ref.id)
                else:
                    ref = self._first_match(queue, consumer)
                    if ref is None:
                        continue
                    self._take(queue, consumer, ref)
                self._dispatch(queue, consumer, ref)
                consumer.buffer[ref.id] = ref
                consumer.buffer_bytes += ref.size
                queue.next_consumer = (index + 1) % n
                moved = True
                break
            else:
                return moved
        return moved

    def receive(self, consumer_name: str) -> str | None:
        """The consumer takes its next dispatched message; with no buffering it pulls one."""
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        ref: Ref | None = None
        if consumer.buffer:
            _, ref = consumer.buffer.popitem(last=False)
            consumer.buffer_bytes -= ref.size
        elif consumer.no_buffering and not consumer.config.browser and consumer.under_unacked_limit():
            ref = self._first_match(queue, consumer)
            if ref is not None:
                self._take(queue, consumer, ref)
                self._dispatch(queue, consumer, ref)
        if ref is None:
            return None
        consumer.received[ref.id] = ref
        self._settle(queue)
        return ref.id

    def ack(self, consumer_name: str, msg_id: str, tx: bool = False) -> AckResult:
        """Acknowledge a received message; in a transaction it stays delivering until commit (C3).

        DELIVERY-11: a consumer with `cumulative_ack` acknowledges every message it received before
        `msg_id` too. DELIVERY-12: on a non-destructive queue an ack only ends the delivery.
        """
        consumer = self._consumer(consumer_name)
        if tx:
            self._need("transactions", "transactional ack")
        received = consumer.received
        if msg_id not in received:
            if msg_id in consumer.evicted:
                consumer.evicted.discard(msg_id)
                return "ok"  # JetStream: acking a message discard=old removed succeeds
            return "failed"
        queue = self._queue(consumer.config.queue)
        if consumer.config.cumulative_ack:
            refs = []
            for ref in received.values():
                refs.append(ref)
                if ref.id == msg_id:
                    break
            for ref in refs:
                del received[ref.id]
        else:
            refs = [received.pop(msg_id)]
        for ref in refs:
            if tx:
                consumer.tx_acked.append(ref)
            elif queue.non_destructive:
                self._undeliver(queue, ref)
            else:
                self._undeliver(queue, ref)
                self._terminate(queue, ref, "acknowledged")
        self._settle(queue)
        return "ok"

    def commit(self, consumer_name: str) -> None:
        """Commit the consumer's session: its tx-acked messages are acknowledged (C3)."""
        self._need("transactions", "commit")
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        for ref in consumer.tx_acked:
            self._undeliver(queue, ref)
            if not queue.non_destructive:
                self._terminate(queue, ref, "acknowledged")
        consumer.tx_acked.clear()
        self._settle(queue)

    def _cancel_list(self, consumer: ConsumerState) -> tuple[list[Ref], list[Ref]]:
        acked = list(consumer.tx_acked)
        cancelled = list(consumer.received.values()) + list(consumer.buffer.values())
        consumer.tx_acked.clear()
        consumer.received.clear()
        consumer.buffer.clear()
        consumer.buffer_bytes = 0
        return acked, cancelled

    def rollback(self, consumer_name: str) -> None:
        """Roll back the consumer's session (RING-8, REDELIVERY-2, 3, 8): tx-acked then unacked
        messages return newest first; counts of unacked ones are undone; the delay applies."""
        self._need("transactions", "rollback")
        consumer = self._consumer(consumer_name)
        self._return_all(consumer, delay=self.options.delay_on_rollback)
        self._settle(self._queue(consumer.config.queue))

    def close(self, consumer_name: str) -> None:
        """Close the consumer (and its session): everything it holds returns at once (REDELIVERY-8)."""
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        del self.consumers[consumer_name]
        if consumer in queue.consumers:  # first: what it returns never comes back to it
            queue.consumers.remove(consumer)
            queue.next_consumer = 0
        if self.options.close_returns:
            self._return_all(consumer, delay=self.options.delay_on_close)
        else:
            acked, cancelled = self._cancel_list(consumer)
            for ref in acked + cancelled:
                queue.orphans[ref.id] = ref
        self._settle(queue)

    def _return_all(self, consumer: ConsumerState, delay: bool) -> None:
        queue = self._queue(consumer.config.queue)
        acked, cancelled = self._cancel_list(consumer)
        undo = self.options.cancel_undoes_delivery_count
        # RING-13: a last-value queue's addSorted is addHead
        placement = "head" if queue.last_value_key is not None else self.options.return_placement
        held = acked + cancelled
        # RING-8 step 2: newest first (Artemis); a RabbitMQ quorum queue returns in delivery order
        for ref in reversed(held) if self.options.return_order == "newest_first" else held:
            keep = ref in acked
            self._return(queue, ref, undo=undo and not keep, delay=delay,
                         placement=placement, ring_check=True)

    def nack(self, consumer_name: str, msg_id: str) -> AckResult:
        """Individual cancel of a received message (REDELIVERY-2 Modified-failed, RING-9)."""
        self._need("nack", "nack")
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        if queue.non_destructive:
            # QueueImpl#cancel re-adds the still-listed ref and resets every iterator: not modelled
            raise Unsupported("nack on a non-destructive queue is not modelled")
        ref = consumer.received.pop(msg_id, None)
        if ref is None:
            return "failed"
        opts = self.options
        if opts.nack_action == "dead_letter":
            self._undeliver(queue, ref)
            self._dead_letter(queue, ref)
        else:
            self._return(queue, ref, undo=not opts.nack_keeps_delivery_count, delay=opts.delay_on_nack,
                         placement=opts.nack_placement, ring_check=not opts.nack_bypasses_ring)
        self._settle(queue)
        return "ok"

    def _return(self, queue: QueueState, ref: Ref, *, undo: bool, delay: bool,
                placement: ReturnPlacement, ring_check: bool) -> None:
        """A delivering message goes back: DLA check (REDELIVERY-5), ring check before insertion
        (RING-7), then redelivery delay (REDELIVERY-7, 9) or re-insertion (REDELIVERY-10).

        DELIVERY-12: on a non-destructive queue the message never left the list: only the delivery
        ends. RING-15: on a last-value queue a rolled-back or closed message is tracked if absent
        (before the ring check and the delay); an individual cancel is not tracked.
        """
        self._undeliver(queue, ref)
        if undo:
            ref.delivery_count -= 1
        if queue.non_destructive:
            return
        if self._dla_due(queue, ref):
            self._dead_letter(queue, ref)
            return
        lvq = queue.last_value_key is not None
        if lvq and placement == "head":
            self._lv_if_absent(queue, ref)
        delay_ms = self._redelivery_delay(queue, ref) if delay else 0
        opts = self.options
        bound = queue.ring_size
        if (ring_check and bound >= 0 and opts.return_over_bound == "drop_returning"
                and queue.bound_count(opts.bound_counts) + 1 > bound):
            self._terminate(queue, ref, "replaced")
            self._event("replaced", queue.name, ref.id, "returning")
            return
        if delay_ms > 0:
            ref.place = "scheduled"
            queue.scheduler.add(self.now_ms + delay_ms, ref, head=True)
            return
        ref.place = "pending"
        if placement == "sorted":
            queue.pending.add_sorted(ref, ref.sequence, ref.size)
        elif placement == "head":
            queue.pending.add_head(ref, ref.size)
        elif placement == "returns" or (placement == "returns_if_limited"
                                        and queue.config.max_delivery_attempts > 0):
            queue.pending.add_returned(ref, ref.size)
        else:
            ref.sequence = queue.next_sequence()
            queue.pending.add_tail(ref, ref.sequence, ref.size)
        if lvq:
            self._lv_check(queue, ref)
        # RING-14/RING-22: drop-head trims after a requeue; reject-publish never refuses a requeue
        trims = opts.return_over_bound == "drop_head" and opts.overflow == "drop_head"
        if ring_check and bound >= 0 and trims:
            if opts.dispatch_before_bound and queue.consumers:
                self._deliver(queue)  # a consumer with room takes it before the limit is checked
            while queue.bound_count(opts.bound_counts) > bound and len(queue.pending):
                self._evict_one(queue)

    def _dla_due(self, queue: QueueState, ref: Ref) -> bool:
        limit = queue.config.max_delivery_attempts
        if limit <= 0 or not self.options.has("dead_letter") or not self.options.dead_letter_on_return:
            return False
        if self.options.dla_threshold == "ge":
            return ref.delivery_count >= limit
        return ref.delivery_count > limit

    def _redelivery_delay(self, queue: QueueState, ref: Ref) -> int:
        """REDELIVERY-7: delay x multiplier^(max(count-1, 0)), capped (default cap 10 x delay)."""
        cfg = queue.config
        if cfg.redelivery_delay_ms <= 0:
            return 0
        delay = cfg.redelivery_delay_ms * cfg.redelivery_multiplier ** max(ref.delivery_count - 1, 0)
        cap = cfg.max_redelivery_delay_ms
        if cap is None:
            cap = cfg.redelivery_delay_ms * 10
        return int(min(delay, cap))

    def _dead_letter(self, queue: QueueState, ref: Ref) -> None:
        """REDELIVERY-6: KILLED; moved to the dead-letter address if it exists, else dropped."""
        self._terminate(queue, ref, "killed")
        target = queue.config.dead_letter
        self._event("killed", queue.name, ref.id, target or "")
        if target is not None and target in self.addresses:
            copy = attrs.evolve(ref.msg, scheduled_at_ms=None)
            self._route(self.addresses[target], copy)

    def browse(self, queue_name: str) -> list[str]:
        """Ids a browser sees: pending in delivery order, then paged ones where visible (PAGING-12)."""
        self._need("browse", "browse")
        queue = self._queue(queue_name)
        ids = [ref.id for ref in queue.pending]
        if self.options.paged_visible_to_browsers:
            ids.extend(ref.id for ref in queue.paged)
        return ids

    # ------------------------------------------------------------------ time
    def advance(self, ms: int) -> None:
        """Move the clock forward, firing every due scheduled message at its own due time (SCHED-4)."""
        if ms < 0:
            raise ModelMisuse("time only moves forward")
        target = self.now_ms + ms
        while True:
            due = self.next_due_ms()
            if due is None or due > target:
                break
            self.now_ms = max(self.now_ms, due)
            self._settle_everything()
        self.now_ms = target
        self._settle_everything()

    def next_due_ms(self) -> int | None:
        """The earliest due time of any scheduled message."""
        times = [t for q in self.queues.values() if (t := q.scheduler.next_due()) is not None]
        return min(times) if times else None

    def _fire_due(self, queue: QueueState) -> bool:
        """SCHED-4 / RING-10: due messages go to the head in scheduler order; a full ring drops them."""
        due = queue.scheduler.pop_due(self.now_ms)
        if not due:
            return False
        opts = self.options
        for ref in reversed(due):
            if opts.scheduled_placement == "tail":
                self._add_tail(queue, ref)
                continue
            if queue.last_value_key is not None:
                self._lv_put(queue, ref)  # RING-15: tracked before the ring check (LVQ#addHead)
            bound = queue.ring_size
            if bound >= 0 and queue.bound_count(opts.bound_counts) + 1 > bound:
                self._terminate(queue, ref, "replaced")
                self._event("replaced", queue.name, ref.id, "scheduled")
                continue
            ref.place = "pending"
            queue.pending.add_head(ref, ref.size)
            if queue.non_destructive:
                self._listed(queue, ref, head=True)
        return True

    # ------------------------------------------------------------------ paging
    def _depage(self, queue: QueueState, address: AddressState) -> bool:
        """PAGING-10/11: move paged refs to the queue tail while the read budget allows."""
        if not queue.paged or self.options.depage_rule != "read_budget":
            return False
        cfg = address.config
        budget_bytes, budget_msgs = cfg.read_budget_bytes, cfg.max_read_page_messages
        moved = False
        while queue.paged:
            if budget_bytes > 0 and queue.pending.bytes + queue.delivering_bytes >= budget_bytes:
                break
            if budget_msgs > 0 and len(queue.pending) + queue.delivering >= budget_msgs:
                break
            ref = queue.paged.popleft()
            self._enqueue_new(queue, ref)
            self._event("depaged", queue.name, ref.id)
            moved = True
        return moved

    def _depage_address(self, address: AddressState) -> bool:
        """HornetQ H1: while address memory is under its limit, route a whole page into memory."""
        if self.options.depage_rule != "address_memory":
            return False
        moved = False
        while address.pages and not address.full():
            page, refs = next(iter(address.pages.items()))
            del address.pages[page]
            del address.page_outstanding[page]
            for ref in refs:
                queue = self.queues[ref.queue]
                if ref.place != "paged":
                    continue
                queue.paged.popleft()
                ref.page = None
                queue.page_counter -= 1
                address.hold(ref.msg)
                ref.in_memory = True
                self._enqueue_new(queue, ref)
                self._event("depaged", queue.name, ref.id)
            moved = True
        if moved and not address.pages:
            address.paging = False
        return moved

    def _unblock(self, address: AddressState) -> bool:
        """PAGING-3 BLOCK: blocked sends resume, in order, as soon as the address is under its limit."""
        moved = False
        while address.blocked and not address.full():
            message = address.blocked.popleft()
            self._event("unblocked", address.name, message.id)
            self._route(address, message, unblocking=True)
            moved = True
        return moved

    def _touch(self, address: AddressState) -> None:
        """Mark an address whose state changed: the next settle looks at it (and only at such)."""
        self._dirty[address.name] = address

    def _settle_everything(self) -> None:
        """Settle every address (time moved: anything may be due)."""
        self._dirty.update(self.addresses)
        self._settle()

    def _settle(self, *touched: QueueState) -> None:
        """Run what happens by itself after an operation until nothing changes: unblocking, due
        scheduled messages, depaging and dispatch, on the addresses the operation touched.

        Only unblocking, firing and depaging can enable more of each other; dispatch moves pending
        messages to delivering, which changes neither address memory nor a queue's read budget
        (pending + delivering), so a pass is repeated only after one of the former moved something.
        This keeps every operation's cost independent of the number of other queues.
        """
        dirty = self._dirty
        for queue in touched:
            address = queue.address
            dirty[address.name] = address
        whole_pages, hysteresis = self._whole_pages, self._hysteresis
        while dirty:
            _, address = dirty.popitem()
            moved = True
            while moved:
                moved = False
                if address.blocked:
                    moved = self._unblock(address)
                if whole_pages and address.pages:
                    moved |= self._depage_address(address)
                for queue in address.queue_states:
                    if queue.scheduler.heap:
                        moved |= self._fire_due(queue)
                    if queue.paged:
                        moved |= self._depage(queue, address)
                    if queue.consumers and queue.pending.level_of:
                        self._deliver(queue)
                    if queue.lv_candidates:
                        moved |= self._prune_last_values(queue)
                    if hysteresis and queue.ring_size >= 0:
                        self._reject_state(queue)

    # ------------------------------------------------------------------ observation
    def counters(self, queue_name: str) -> QueueCounters:
        """The queue's counters (DELIVERY-1 identity holds by construction)."""
        queue = self._queue(queue_name)
        c = queue.counters
        pending, scheduled, paged = len(queue.pending), len(queue.scheduler), len(queue.paged)
        # DELIVERY-12: a non-destructive queue counts a delivering message twice (pending +
        # delivering); LastValueQueue#getMessageCount subtracts the delivering count.
        delivering = 0 if queue.last_value_key is not None else queue.delivering
        return QueueCounters(
            message_count=pending + delivering + scheduled + paged,
            pending_count=pending,
            delivering_count=queue.delivering,
            scheduled_count=scheduled,
            paged_count=paged,
            added=c.added,
            acknowledged=c.acknowledged,
            replaced=c.replaced,
            killed=c.killed,
        )

    def pending_ids(self, queue_name: str) -> list[str]:
        """Pending message ids in delivery order."""
        return [ref.id for ref in self._queue(queue_name).pending]

    def delivery_count(self, queue_name: str, msg_id: str) -> int | None:
        """The delivery count of a message still in the queue, else None."""
        ref = self._queue(queue_name).refs.get(msg_id)
        return None if ref is None else ref.delivery_count

    def paging(self, address_name: str) -> bool:
        """PAGING-28: the observable flag: page mode under PAGE, "full" under DROP and FAIL, and
        always false under BLOCK (PagingStore.isPaging)."""
        try:
            address = self.addresses[address_name]
        except KeyError:
            raise ModelMisuse(f"unknown address {address_name!r}") from None
        policy = address.config.full_policy
        if policy == "PAGE":
            return address.paging
        return policy in ("DROP", "FAIL") and address.full()

    def queue_address(self, queue_name: str) -> str:
        return self._queue(queue_name).config.address_name

    def unacked_ids(self, consumer_name: str) -> list[str]:
        """Ids the consumer has received and not yet acknowledged (tx-acked excluded)."""
        return list(self._consumer(consumer_name).received)

