"""Messages coming back: nack, rollback/close returns, redelivery delay, dead letters.

Implements REDELIVERY-2..10 (REDELIVERY-5 max-delivery-attempts, REDELIVERY-6 dead-letter address,
REDELIVERY-7 and 9 the redelivery delay, REDELIVERY-10 re-insertion by sequence) and the profile
variants REDELIVERY-12..23, the nack forms REDELIVERY-24 (requeue=false) and REDELIVERY-25
(multiple), the delivery limits of REDELIVERY-26, the order of a pull consumer's returns
(REDELIVERY-31), with the ring checks on return: RING-7, RING-8
(newest first), RING-9 (individual cancel), RING-13, RING-14 and RING-22, and RING-15 /
DELIVERY-12 for last-value and non-destructive queues.
"""

from __future__ import annotations

import attrs

from ._core import AckResult, BrokerCore
from .config import Message
from .errors import ModelMisuse, Unsupported
from .options import ReturnPlacement
from .state import ConsumerState, QueueState, Ref

#: REDELIVERY-31: up to this many consumers, an Erlang map is a flat map whose keys are sorted;
#: beyond it, maps:keys follows the keys' hashes, an order the model does not predict.
PULL_TAG_ORDER_LIMIT = 32


class RedeliveryMixin(BrokerCore):
    """Returns, redelivery delay and dead letters."""

    def _return_all(self, consumer: ConsumerState, delay: bool) -> None:
        queue = self._queue(consumer.config.queue)
        acked, cancelled = self._cancel_list(consumer)
        undo = self.options.cancel_undoes_delivery_count
        # RING-13: a last-value queue's addSorted is addHead
        placement = "head" if queue.last_value_key is not None else self.options.return_placement
        if self.options.pull_return_order == "tag_text" and consumer.get_tags:
            # REDELIVERY-31: one rabbit_fifo consumer per basic.get, cancelled in tag-text order
            tags = consumer.get_tags
            cancelled = sorted(cancelled, key=lambda ref: str(tags.get(ref.id, 0)))
        held = acked + cancelled
        # RING-8 step 2: newest first (Artemis); a RabbitMQ quorum queue returns in delivery order
        for ref in reversed(held) if self.options.return_order == "newest_first" else held:
            keep = ref in acked
            self._return(queue, ref, undo=undo and not keep, delay=delay,
                         placement=placement, ring_check=True)

    def nack(self, consumer_name: str, msg_id: str, requeue: bool = True,
             multiple: bool = False, delay_ms: int = 0) -> AckResult:
        """Individual cancel of a received message (REDELIVERY-2 Modified-failed, RING-9).

        REDELIVERY-24: ``requeue=False`` rejects it: it leaves the queue, dead-lettered (reason
        rejected) to the queue's dead-letter address when it has one. REDELIVERY-25:
        ``multiple=True`` settles every message the consumer received up to and including `msg_id`
        (AMQP basic.nack multiple), oldest first. DELIVERY-22: a nack of a message the consumer
        does not hold is the profile's ``invalid_ack``. REDELIVERY-28: ``delay_ms > 0`` (JetStream
        ``-NAK {"delay": ns}``) returns it only once the delay has passed on the logical clock.
        """
        self._need("nack", "nack")
        if not requeue:
            self._need("nack_reject", "nack requeue=false")
        if multiple:
            self._need("nack_multiple", "nack multiple")
        if delay_ms:
            self._need("nack_delay", "nack delay_ms")
            if delay_ms < 0 or not requeue:
                raise ModelMisuse("nack delay_ms must be positive, with requeue")
        consumer = self._consumer(consumer_name)
        queue = self._queue(consumer.config.queue)
        if queue.non_destructive:
            # QueueImpl#cancel re-adds the still-listed ref and resets every iterator: not modelled
            raise Unsupported("nack on a non-destructive queue is not modelled")
        received = consumer.received
        if msg_id not in received:
            return self._not_held(consumer, msg_id, "nack" if requeue else "reject",  # DELIVERY-22
                                  delay_ms)
        refs: list[Ref] = []
        if multiple:
            for ref in received.values():
                refs.append(ref)
                if ref.id == msg_id:
                    break
        else:
            refs.append(received[msg_id])
        opts = self.options
        for ref in refs:
            del received[ref.id]
            if not requeue:
                self._undeliver(queue, ref)
                self._dead_letter(queue, ref, "rejected")
            elif delay_ms and opts.nack_delay_wait == "scheduled":
                self._nack_delayed(queue, ref, delay_ms)
            elif delay_ms:
                self._nak_later(queue, ref, delay_ms + self._backoff_offset(consumer, ref))
            elif opts.nack_action == "dead_letter":
                self._undeliver(queue, ref)
                self._dead_letter(queue, ref)
            else:
                killed = queue.counters.killed
                self._return(queue, ref, undo=not opts.nack_keeps_delivery_count,
                             delay=opts.delay_on_nack, placement=opts.nack_placement,
                             ring_check=not opts.nack_bypasses_ring,
                             track=not opts.nack_pass_before_credit)
                if queue.counters.killed > killed:  # dead-lettered or dropped at its delivery limit
                    self._rabbitmq_5609_credit_twice(consumer)
                    self._artemis_cancel_drop_delivering_twice(queue, ref)
        if opts.nack_pass_before_credit and queue.lv_candidates and requeue and not delay_ms:
            self._pass_before_credit(queue, consumer, len(refs))  # a bug model (reference_model.bugs)
        self._settle(queue)
        return "ok"

    def _pass_before_credit(self, queue: QueueState, consumer: ConsumerState, returned: int) -> None:
        """Bug model artemis-last-value-nack-pruned-before-credit (reference_model.bugs.
        artemis_last_value_nack; LASTVALUE-6): the delivery pass a nack forces on a last-value queue,
        and the pruning that ends it, run while the nacking consumer still counts the `returned`
        messages against its room (AMQPSessionCallback#cancel -> ServerConsumerImpl#individualCancel ->
        QueueImpl#cancel, then QueueImpl#forceDelivery; the AMQP receiver's flow that restores the
        credit comes after its disposition): a nacked message the nack left untracked, not current, and
        that no consumer with room before the nack takes is pruned (LastValueQueue#pruneLastValues)
        before its nacker could take it again."""
        limit = consumer.max_unacked
        if limit is None:
            return
        consumer.max_unacked = max(limit - returned, 0)
        try:
            if queue.consumers and queue.pending.level_of:
                self._deliver(queue)
            self._prune_last_values(queue)
        finally:
            consumer.max_unacked = limit

    def _rabbitmq_5609_credit_twice(self, consumer: ConsumerState) -> None:
        """Bug model rabbitmq-server#5609 (reference_model.bugs.rabbitmq_server_5609): a nack (a Ra
        #return) whose message reached the delivery limit grants the consumer credit twice, once in
        return_one's complete and once more in return (rabbit_fifo.erl v3.10.8 L1582-1597,
        L1756-1779), so the prefetch consumer keeps one more credit than its prefetch for as long as
        it lives. Fixed in 3.11.0 (commit 48f9334cdc: return grants no credit from machine version 3)."""
        if self.options.nack_at_limit_grants_credit_twice and consumer.max_unacked is not None:
            consumer.max_unacked += 1

    def _artemis_cancel_drop_delivering_twice(self, queue: QueueState, ref: Ref) -> None:
        """Bug model artemis-drop-at-limit-delivering-negative
        (reference_model.bugs.artemis_cancel_drop_delivering): an individual cancel at
        max-delivery-attempts with no dead-letter address, or one without bindings, acks the message
        KILLED (postAcknowledge: decDelivering) and QueueImpl#cancel decrements the delivering count
        once more (2.40.0 QueueImpl.java L1786-1797, sendToDeadLetterAddress L3642-3670 returns
        false): count and bytes, as deliveringMetrics#decrementMetrics does."""
        if not self.options.cancel_drop_decrements_delivering_twice:
            return
        target = queue.config.dead_letter
        if target is None or target not in self.addresses or not self.addresses[target].queues:
            self._undeliver(queue, ref)

    def _nack_delayed(self, queue: QueueState, ref: Ref, delay_ms: int) -> None:
        """REDELIVERY-37 (nack_delay_wait scheduled): the message is no longer delivering; it waits
        `delay_ms` in the scheduler (scheduledCount), its delivery count kept, and is then placed as
        scheduled_placement says (beanstalkd release with a delay: the delayed state)."""
        self._undeliver(queue, ref)
        if not self.options.nack_keeps_delivery_count:
            ref.delivery_count -= 1
        ref.place = "scheduled"
        queue.scheduler.add(self.now_ms + delay_ms, ref, head=True)

    @staticmethod
    def _backoff_offset(consumer: ConsumerState, ref: Ref) -> int:
        """REDELIVERY-34: a delayed -NAK to a consumer with a BackOff waits delay + BackOff[n] -
        BackOff[0] (consumer.go processNak sets p.Timestamp = now - AckWait + delay, AckWait =
        BackOff[0]; checkPending then waits BackOff[min(rdc, len - 1)] from it)."""
        if not consumer.config.backoff_ms:
            return 0
        return consumer.ack_wait_for(ref.delivery_count) - consumer.ack_wait_for(1)

    def _return(self, queue: QueueState, ref: Ref, *, undo: bool, delay: bool,
                placement: ReturnPlacement, ring_check: bool, expired: bool = False,
                track: bool = False) -> None:
        """A delivering message goes back: DLA check (REDELIVERY-5), ring check before insertion
        (RING-7), then redelivery delay (REDELIVERY-7, 9) or re-insertion (REDELIVERY-10).

        REDELIVERY-21 (delivery_limit_action keep): a message at the limit whose ack wait or NAK
        delay ran out (`expired`) is kept stored at once; one returned otherwise joins the
        redelivery queue and is kept when a dispatch comes to it (:meth:`_take_exhausted`).

        DELIVERY-12: on a non-destructive queue the message never left the list: only the delivery
        ends. RING-15, LASTVALUE-6: on a last-value queue a rolled-back or closed message, and a nacked
        one (`track`), is tracked if absent (before the ring check and the delay), as
        LastValueQueue#addHead does (trackLastValueIfAbsent).
        """
        self._undeliver(queue, ref)
        if undo:
            ref.delivery_count -= 1
        if queue.non_destructive:
            return
        if expired and self._exhaust_due(queue, ref):
            self._exhaust(queue, ref)
            return
        if self._dla_due(queue, ref):
            self._dead_letter(queue, ref)
            return
        lvq = queue.last_value_key is not None
        if lvq and (placement == "head" or track):
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
                                        and queue.delivery_limit is not None):
            queue.pending.add_returned(ref, ref.size)
        else:
            ref.sequence = queue.next_sequence()
            queue.pending.add_tail(ref, ref.sequence, ref.size)
        if lvq:
            self._lv_check(queue, ref)
        # RING-14/RING-22: drop-head trims after a requeue; reject-publish never refuses a requeue
        trims = opts.return_over_bound == "drop_head" and queue.overflow == "drop_head"
        if ring_check and queue.bounded and trims:
            if opts.dispatch_before_bound and queue.consumers and not opts.requeue_trims_first:
                self._deliver(queue)  # quorum: a consumer with room takes it before the limit check
            while queue.over_bound(opts.bound_counts) and len(queue.pending):
                self._evict_one(queue)  # RING-26: dead-lettered (maxlen) where the profile says

    def _limit_reached(self, queue: QueueState, ref: Ref) -> bool:
        """REDELIVERY-5 / 13 / 21 / 26: the message has used up the queue's delivery limit."""
        limit = queue.delivery_limit
        if limit is None:
            return False
        if self.options.dla_threshold == "ge":
            return ref.delivery_count >= limit
        return ref.delivery_count > limit

    def _dla_due(self, queue: QueueState, ref: Ref) -> bool:
        opts = self.options
        if not opts.has("dead_letter") or not opts.dead_letter_on_return:
            return False
        return opts.delivery_limit_action == "dead_letter" and self._limit_reached(queue, ref)

    def _exhaust_due(self, queue: QueueState, ref: Ref) -> bool:
        """REDELIVERY-21: the message is at the limit and the profile keeps such messages."""
        return self.options.delivery_limit_action == "keep" and self._limit_reached(queue, ref)

    def _exhaust(self, queue: QueueState, ref: Ref) -> None:
        """REDELIVERY-21: `ref` (listed nowhere, delivering count already undone) stays stored and
        is never delivered again (JetStream's MAX_DELIVERIES advisory: event ``exhausted``)."""
        ref.place = "exhausted"
        queue.exhausted[ref.id] = ref
        self._event("exhausted", queue.name, ref.id, str(ref.delivery_count))

    def _take_exhausted(self, queue: QueueState) -> None:
        """REDELIVERY-21: a dispatch first takes every message at the limit off the head of the
        redelivery queue (consumer.go getNextMsg: dc > maxdc, continue), before any cap applies."""
        pending = queue.pending
        if self.options.delivery_limit_action != "keep" or not pending.returned_ids:
            return
        while (head := pending.peek()) is not None and head.id in pending.returned_ids \
                and self._limit_reached(queue, head):
            pending.remove(head.id)
            if queue.special:
                self._unlisted(queue, head)
            self._exhaust(queue, head)

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

    def _dead_letter(self, queue: QueueState, ref: Ref, reason: str = "delivery_limit") -> None:
        """REDELIVERY-6: KILLED; moved to the dead-letter address if it exists, else dropped."""
        self._terminate(queue, ref, "killed")
        self._event("killed", queue.name, ref.id, queue.config.dead_letter or "")
        self._dead_letter_copy(queue, ref.msg, reason)

    def _dead_letter_copy(self, queue: QueueState, message: Message, reason: str) -> None:
        """REDELIVERY-6, RING-24, RING-26, REDELIVERY-24, EXPIRY-5: route a copy of `message` to the
        queue's dead-letter address when it exists (`reason` as RabbitMQ's x-death reason:
        delivery_limit, maxlen, rejected, expired)."""
        target = queue.config.dead_letter
        if target is not None and target in self.addresses:
            self._event("dead_lettered", queue.name, message.id, reason)
            # DELIVERY-23: the copy carries the first reason it was dead-lettered for (x-death);
            # EXPIRY-5: not its own TTL (RabbitMQ moves expiration to x-death original-expiration)
            properties = {"dead_letter_reason": reason, **message.properties}
            copy = attrs.evolve(message, scheduled_at_ms=None, properties=properties, ttl_ms=None)
            self._route(self.addresses[target], copy)
