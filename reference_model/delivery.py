"""Consumers and consumption: open, dispatch, receive, ack, commit, rollback, close, browse.

Implements DELIVERY-3..8 (round-robin dispatch of the pending head to consumers with window room),
DELIVERY-24 (which consumer is offered the next message: the profile's consumer_rotation; consumer
priorities and single active consumers, DELIVERY-25/26, through :mod:`.consumer_priority`),
DELIVERY-11 cumulative acks, DELIVERY-12 non-destructive queues (each consumer's iterator),
DELIVERY-15, REDELIVERY-1 (the delivery count is incremented at dispatch), the consumer-window rules
(REDELIVERY-11, DELIVERY-16..19 through the profile options) and PAGING-12 (browsers). What a rollback
or close returns goes through :mod:`.redelivery` (RING-8, REDELIVERY-2, 3, 8).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import AckResult, BrokerCore
from .config import ConsumerConfig
from .errors import ModelMisuse, Unsupported
from .pending import PendingList
from .selectors import compile_selector
from .state import ConsumerState, QueueState, Ref, ref_priority


class DeliveryMixin(BrokerCore):
    """Consumers, dispatch and acknowledgement."""

    if TYPE_CHECKING:
        def _pin_admits(self, queue: QueueState, consumer: ConsumerState,
                        ref: Ref | None) -> bool: ...  # priority_groups
        # DELIVERY-49 (message_groups)
        def _grouped_head(self, queue: QueueState) -> bool | None: ...
        def _group_taken(self, queue: QueueState, consumer: ConsumerState, ref: Ref) -> None: ...
        def _group_admits(self, queue: QueueState, consumer: ConsumerState, ref: Ref | None) -> bool: ...

    def open_consumer(self, config: ConsumerConfig) -> None:
        """Open a consumer; dispatch to it happens at once (DELIVERY window rules)."""
        if config.name in self.consumers:
            raise ModelMisuse(f"consumer {config.name!r} already exists")
        queue = self._queue(config.queue)
        if config.selector is not None:
            self._need("selectors", "selector")
        if config.window_bytes != 1024 * 1024 and config.window_bytes not in (-1, 0):
            self._need("window_bytes", "window_bytes")
        if config.backoff_ms is not None:
            self._check_backoff(queue, config)
        state = ConsumerState(config, compile_selector(config.selector))
        self._check_consumer(queue, state)  # DELIVERY-25/26
        lingering = self.sessions.pop(config.name, None)
        if lingering is not None:
            if lingering[0] != config.queue:
                self.sessions[config.name] = lingering
                raise ModelMisuse(f"consumer {config.name!r}: its session's open transaction holds "
                                  f"messages of queue {lingering[0]!r}")
            state.tx_acked = lingering[1]  # REDELIVERY-29: the session's transaction goes on
        self.consumers[config.name] = state
        if config.cumulative_ack:
            self._need("cumulative_ack", "cumulative_ack")
        if config.ack_wait_ms is not None or config.backoff_ms is not None:
            self._need("ack_wait", "ack_wait_ms")
            if config.ack_wait_ms is not None and config.ack_wait_ms <= 0:
                raise ModelMisuse("ack_wait_ms must be positive")
            if not state.no_buffering:
                raise Unsupported("ack_wait_ms with a pushing consumer (the wait starts at receive)")
        if not config.browser:
            if queue.non_destructive:
                state.unseen = self._iterator_over(queue)
            if not queue.had_consumer:
                self._first_consumer(queue)
            self._subscribe(queue, state)
        self._settle(queue)

    def _check_backoff(self, queue: QueueState, config: ConsumerConfig) -> None:
        """REDELIVERY-32/35: a BackOff list of positive waits, no longer than the queue's delivery
        limit, whose first value is the ack wait if one is given (consumer.go
        setConsumerConfigDefaults: AckWait = BackOff[0]; checkConsumerCfg:
        NewJSConsumerMaxDeliverBackoffError)."""
        self._need("backoff", "backoff_ms")
        backoff = config.backoff_ms or ()
        if not backoff or any(not isinstance(ms, int) or isinstance(ms, bool) or ms <= 0 for ms in backoff):
            raise ModelMisuse("backoff_ms must be a non-empty list of positive integers")
        if config.ack_wait_ms is not None and config.ack_wait_ms != backoff[0]:
            raise ModelMisuse("ack_wait_ms must be backoff_ms[0] (BackOff replaces AckWait)")
        if queue.delivery_limit is not None and len(backoff) > queue.delivery_limit:
            raise ModelMisuse("backoff_ms is longer than the queue's delivery limit (max_deliver)")

    def _iterator_over(self, queue: QueueState) -> PendingList[Ref]:
        """DELIVERY-12: a new consumer of a non-destructive queue starts at the head of the list."""
        unseen: PendingList[Ref] = PendingList(self.options.priority_levels, ref_priority)
        listed = list(queue.pending)
        for n, ref in enumerate(listed):
            unseen.add_tail(ref, n - len(listed), ref.size)
        opts = self.options
        if (opts.priority_removal_lowers_highest or opts.stale_priority_iterators
                or opts.non_destructive_same_level_keeps_iterators) and queue.pending.watch is not None:
            from .bugs.artemis_priority_removal import IteratorWalk  # a bug model's walk

            if isinstance(queue.pending.watch, IteratorWalk):  # the consumer's own iterator
                unseen.watch = queue.pending.watch.iterator(unseen)
        return unseen

    def _push(self, queue: QueueState, consumer: ConsumerState, ref: Ref) -> None:
        """Dispatch `ref` into the consumer's buffer, taking its size from the consumer's credit
        (REDELIVERY-11)."""
        if self._gives_copies:  # a bug model (reference_model.bugs): a copy in flight keeps its count
            for key, held in consumer.buffer.items():
                if held is ref and key not in consumer.copy_counts:
                    consumer.copy_counts[key] = ref.delivery_count
        self._dispatch(queue, consumer, ref)
        key = ref.id
        if key in consumer.buffer:  # a bug model gives it again: both copies are buffered, in order
            key = f"{key}#{len(consumer.buffer)}"
            while key in consumer.buffer:
                key += "'"
        consumer.buffer[key] = ref
        consumer.buffer_bytes += ref.size
        consumer.took(ref.size)

    def _dispatch(self, queue: QueueState, consumer: ConsumerState, ref: Ref) -> None:
        """REDELIVERY-1: the delivery count is incremented at dispatch. DELIVERY-23: the delivery's
        redelivered flag."""
        ref.delivery_count += 1
        queue.dispatches += 1
        if not ref.first_dseq:
            ref.first_dseq = queue.dispatches
        if ref.sequence > queue.delivered_seq:
            queue.delivered_seq = ref.sequence
        if self.options.redelivered_flag == "ever":
            ref.redelivered = ref.delivered_before
        else:
            ref.redelivered = ref.delivery_count > 1
        ref.delivered_before = True
        if ref.msg.group is not None:
            self._group_taken(queue, consumer, ref)  # DELIVERY-49
        if not queue.non_destructive:
            ref.place = "delivering"
        elif self.options.ring_eviction_keeps_delivered_pending:  # a bug model (reference_model.bugs)
            queue.in_delivery.add(ref.id)
        queue.delivering += 1
        queue.delivering_bytes += ref.size

    @property
    def _gives_copies(self) -> bool:
        """A bug model that gives a consumer a message it holds (a second copy, delivering until a
        close, rollback or restart cancels it; an ack settles one): artemis_linked_list_repeat,
        artemis_scheduled_resets_iterators."""
        opts = self.options
        return opts.repeat_after_removal_returns_twice or opts.scheduled_fire_resets_iterators

    def _first_match(self, queue: QueueState, consumer: ConsumerState) -> Ref | None:
        source = queue.pending if consumer.unseen is None else consumer.unseen
        if consumer.selector is None:
            if source.watch is not None:  # a bug model's walk of the list (reference_model.bugs)
                return source.watch.next_for(consumer, consumer.config.name)
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
            if self.options.repeat_after_removal_returns_twice:  # a bug model (reference_model.bugs)
                from .bugs.artemis_linked_list_repeat import took

                took(queue, consumer, ref)
            return
        queue.pending.remove(ref.id)
        if queue.lv_direct and ref.id in queue.lv_direct:
            queue.lv_direct.discard(ref.id)  # a bug model (bugs.artemis_last_value_direct): never listed
            return
        if queue.special:
            self._unlisted(queue, ref)

    def _deliver(self, queue: QueueState) -> bool:
        """Dispatch pending messages round-robin to consumers with room; True if anything moved.
        DELIVERY-34: nothing while the queue's consumers are paused."""
        if self.now_ms < queue.paused_until:
            return False
        moved = False
        consumers = queue.consumers
        pending = queue.pending
        listed = pending.level_of
        plain = not queue.special
        rotation = self.options.consumer_rotation
        leaves = rotation in ("active_queue", "service_queue")
        if leaves:
            self._rejoin_rotation(queue)
        ordered = queue.prioritised or queue.config.single_active_consumer
        while listed and consumers:
            # EXPIRY-4: each delivery may expose a head past its time, which leaves before the next
            # delivery (rabbit_amqqueue_process fetch -> drop_expired_msgs; rabbit_fifo checkout_one)
            if queue.expiring and self._expire_due(queue) and not listed:
                break
            if queue.groups:  # DELIVERY-49: a head whose group has a consumer goes to it, or waits
                grouped = self._grouped_head(queue)
                if grouped is not None:
                    if not grouped:
                        return moved
                    moved = True
                    continue
            n = len(consumers)
            order = self._dispatch_order(queue) if ordered else None  # DELIVERY-25/26
            for offset in range(n if order is None else len(order)):
                index = (queue.next_consumer + offset) % n if order is None else order[offset]
                consumer = consumers[index]
                if consumer.blocked:
                    continue
                if not consumer.has_room():
                    consumer.blocked = leaves
                    self._busy(consumer, pending if consumer.unseen is None else consumer.unseen)
                    continue
                if plain and consumer.selector is None:
                    if pending.returned_ids:
                        self._take_exhausted(queue)  # REDELIVERY-21
                    ref = pending.peek() if pending.watch is None else \
                        pending.watch.next_for(consumer, consumer.config.name)  # a bug model's walk
                    if ref is None:
                        continue
                    pending.remove(ref.id)
                else:
                    ref = self._first_match(queue, consumer)
                    if ref is None:
                        continue
                    self._take(queue, consumer, ref)
                self._push(queue, consumer, ref)
                self._served(queue, consumer)  # DELIVERY-26 "dispatch": it becomes the active one
                if rotation == "cursor":
                    queue.next_consumer = (index + 1) % n
                    if ordered:  # DELIVERY-25 cursor_per_priority: the level's own cursor
                        queue.level_served[consumer.config.priority] = consumer.registered
                else:  # DELIVERY-24: the consumer served goes to the end of the list
                    consumers.append(consumers.pop(index))
                    if rotation == "service_queue" and not consumer.has_room():
                        consumer.blocked = True  # rabbit_fifo: out of the service queue at once
                moved = True
                break
            else:
                return moved
        return moved

    def _busy(self, consumer: ConsumerState, source: PendingList[Ref]) -> None:
        """A consumer without room in a delivery pass: the bug models' iterators stop at the message
        it would get (reference_model.bugs: a walk of the list, a non-destructive queue's repeat)."""
        watch = source.watch if consumer.selector is None else None
        stopped = watch.touch(consumer, consumer.config.name) if watch is not None else None
        unseen = consumer.unseen
        if unseen is not None and self.options.repeat_after_removal_returns_twice:
            from .bugs.artemis_linked_list_repeat import busy  # a bug model

            busy(consumer, stopped if watch is not None else unseen.peek())

    @staticmethod
    def _rejoin_rotation(queue: QueueState) -> None:
        """DELIVERY-24 active_queue / service_queue: a blocked consumer with room again rejoins at
        the end."""
        back = [c for c in queue.consumers if c.blocked and c.has_room()]
        for consumer in back:
            consumer.blocked = False
            queue.consumers.remove(consumer)
            queue.consumers.append(consumer)

    def receive(self, consumer_name: str) -> str | None:
        """The consumer takes its next dispatched message; with no buffering it pulls one."""
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        ref: Ref | None = None
        shown: int | None = None
        if consumer.buffer:
            key, ref = consumer.buffer.popitem(last=False)
            if consumer.copy_counts:  # a bug model's copy (reference_model.bugs)
                shown = consumer.copy_counts.pop(key, None)
            consumer.buffer_bytes -= ref.size
            consumer.consumed(ref.size)
        elif (consumer.no_buffering and not consumer.config.browser
              and (self.now_ms >= queue.paused_until  # DELIVERY-34: a paused consumer pulls nothing
                   or self.options.paused_pull_waits_for_resume)):  # a bug model (bugs.nats_server_7457)
            self._take_exhausted(queue)  # REDELIVERY-21: before the ack-pending cap (getNextMsg)
            if consumer.under_unacked_limit(self._parked(queue)):
                ref = self._first_match(queue, consumer)
            if queue.priority_policy == "pinned_client" and not self._pin_admits(queue, consumer, ref):
                ref = None  # DELIVERY-45..47
            if queue.groups and not self._group_admits(queue, consumer, ref):
                ref = None  # DELIVERY-49
            if ref is not None:
                self._take(queue, consumer, ref)
                self._dispatch(queue, consumer, ref)
                consumer.get_tags[ref.id] = consumer.next_get_tag  # REDELIVERY-31
                consumer.next_get_tag += 1
        if ref is None:
            return None
        if self._gives_copies:  # a bug model (reference_model.bugs)
            if ref.id in consumer.received:
                consumer.copies.append(consumer.received[ref.id])  # it holds the message twice
            if shown is None:
                consumer.shown.pop(ref.id, None)
            else:  # an earlier delivery than the message's latest: it shows the count it had then
                consumer.shown[ref.id] = shown
        consumer.received[ref.id] = ref
        if self.options.invalid_ack == "by_sequence":
            consumer.tokens.add(ref.id)  # DELIVERY-22
        if consumer.times_out:
            self._start_ack_wait(consumer, ref.id)  # REDELIVERY-27, REDELIVERY-32
        self._settle(queue)
        return ref.id

    def ack(self, consumer_name: str, msg_id: str, tx: bool = False) -> AckResult:
        """Acknowledge a received message; in a transaction it stays delivering until commit (C3).

        DELIVERY-11: a consumer with `cumulative_ack` acknowledges every message it received before
        `msg_id` too. DELIVERY-12: on a non-destructive queue an ack only ends the delivery.
        DELIVERY-22: an ack of a message the consumer does not hold is the profile's ``invalid_ack``.
        """
        consumer = self._consumer(consumer_name)
        if tx:
            self._need("transactions", "transactional ack")
        received = consumer.received
        if msg_id not in received:
            if msg_id in consumer.evicted:
                consumer.evicted.discard(msg_id)
                return "ok"  # JetStream: acking a message discard=old removed succeeds
            return self._not_held(consumer, msg_id, "ack")  # DELIVERY-22
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
        if consumer.shown:  # a bug model's state (reference_model.bugs)
            for ref in refs:
                consumer.shown.pop(ref.id, None)
        for ref in refs:
            if tx:
                consumer.tx_acked.append(ref)
            elif queue.non_destructive:
                self._undeliver(queue, ref)
                queue.in_delivery.discard(ref.id)  # a bug model's state (reference_model.bugs)
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
            queue.in_delivery.discard(ref.id)  # a bug model's state (reference_model.bugs)
        consumer.tx_acked.clear()
        self._settle(queue)

    def _cancel_list(self, consumer: ConsumerState) -> tuple[list[Ref], list[Ref]]:
        acked = list(consumer.tx_acked)
        cancelled = list(consumer.received.values()) + list(consumer.buffer.values())
        if consumer.copies:  # a bug model (reference_model.bugs: _gives_copies)
            cancelled.extend(consumer.copies)
            consumer.copies.clear()
        consumer.copy_counts.clear()
        consumer.shown.clear()
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
        for ref in consumer.buffer.values():  # REDELIVERY-11: clear() returns the buffer's credit
            consumer.consumed(ref.size)
        self._return_all(consumer, delay=self.options.delay_on_rollback)
        self._settle(self._queue(consumer.config.queue))

    def close(self, consumer_name: str) -> None:
        """Close the consumer: what it holds unacknowledged returns at once (REDELIVERY-8).

        DELIVERY-26 (option single_active_handover_first): the next active consumer of a
        single_active_consumer queue is served before those returns.

        REDELIVERY-29 (option close_keeps_tx): what it acknowledged in its session's open transaction
        stays there, delivering, and a consumer opened again under the same name continues that
        session (commit or rollback it); see :meth:`close_session` for a session close.
        """
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        del self.consumers[consumer_name]
        if consumer in queue.consumers:  # first: what it returns never comes back to it
            handing_over = queue.active is consumer
            self._unsubscribe(queue, consumer)
            if handing_over and self.options.single_active_handover_first:
                self._settle(queue)  # DELIVERY-26: the next active consumer is served first
        if self.options.close_keeps_tx and consumer.tx_acked:
            self.sessions[consumer_name] = (queue.name, consumer.tx_acked)
            consumer.tx_acked = []
        if self.options.close_returns:
            self._return_all(consumer, delay=self.options.delay_on_close)
        else:
            acked, cancelled = self._cancel_list(consumer)
            for ref in acked + cancelled:
                queue.orphans[ref.id] = ref
        self._settle(queue)

    def close_session(self, consumer_name: str) -> None:
        """Close the consumer's session (REDELIVERY-30): the consumer closes first (its unacknowledged
        messages return at once, counts undone: ClientSessionImpl#close closes its children first),
        then the session's transaction rolls back with the redelivery delay (ServerSessionImpl#doClose):
        tx-acked messages keep their delivery count and return newest first."""
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        acked, consumer.tx_acked = consumer.tx_acked, []
        self.close(consumer_name)
        self.sessions.pop(consumer_name, None)
        placement = "head" if queue.last_value_key is not None else self.options.return_placement
        for ref in reversed(acked) if self.options.return_order == "newest_first" else acked:
            self._return(queue, ref, undo=False, delay=self.options.delay_on_rollback,
                         placement=placement, ring_check=True)
        self._settle(queue)

    def browse(self, queue_name: str) -> list[str]:
        """Ids a browser sees: pending in delivery order, then paged ones where visible (PAGING-12)."""
        self._need("browse", "browse")
        queue = self._queue(queue_name)
        ids = [ref.id for ref in queue.pending]
        if self.options.paged_visible_to_browsers and self.options.browse_held_paged:
            # the page walk: every unacknowledged message of a page not listed from memory, in order
            ids.extend(ref.id for ref in queue.refs.values()
                       if ref.page is not None and ref.place != "pending")
        elif self.options.paged_visible_to_browsers:
            ids.extend(ref.id for ref in queue.paged)
        return ids
