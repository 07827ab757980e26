"""Bounded queues: the ring bound, eviction, reject/drop overflow, last-value and retroactive queues.

Implements RING-1..7 (RING-2 set_ring_size purges nothing, RING-3 evict one head after a tail add,
RING-4 the bound counts pending only), RING-12, RING-15 last-value queues, RING-16 retroactive
addresses, and the profile variants RING-17..25 (RING-18/20 JetStream discard=old and stored counting,
RING-21 drop newest, RING-22/23 reject-publish before/after the enqueue), RING-24 reject-publish-dlx,
RING-26 dead-lettering what the length limit drops, RING-27 byte bounds, RING-28 the overflow policy
of a queue declaration, RING-30 a live bound update that trims. Also the list bookkeeping of
non-destructive queues (DELIVERY-12) that eviction and last-value pruning share; the last-value
queue's own rules are in :mod:`.last_value` (LASTVALUE-1..10).
"""

from __future__ import annotations

from ._core import BrokerCore, SendResult
from .config import Message
from .errors import ModelMisuse
from .last_value import LastValueMixin
from .state import AddressState, QueueState, Ref


class RingMixin(LastValueMixin, BrokerCore):
    """The ring bound, eviction, last-value and retroactive queues."""

    def set_ring_size(self, queue_name: str, size: int) -> None:
        """RING-2: change the ring size; nothing is purged. RING-30 (ring_update_trims): a queue that
        drops its oldest messages (drop_head) is trimmed at once, oldest stored first, until the bound
        holds; a queue that refuses new messages keeps what it holds."""
        self._need("set_ring_size", "set_ring_size")
        if size < -1:
            raise ModelMisuse("ring size must be -1 or >= 0")
        queue = self._queue(queue_name)
        queue.ring_size = size
        if self.options.ring_update_trims and queue.overflow == "drop_head":
            while queue.over_bound(self.options.bound_counts) and self._evict_one(queue):
                pass

    def set_subject_limit(self, queue_name: str, limit: int) -> None:
        """RING-34: change a queue's per-subject limit (a JetStream stream update of
        max_msgs_per_subject); a lower one trims every subject at once, oldest first, whatever the
        overflow policy."""
        self._need("max_per_subject", "set_subject_limit")
        if limit < 1:
            raise ModelMisuse("a per-subject limit must be >= 1")
        queue = self._queue(queue_name)
        lower = queue.max_per_subject <= 0 or limit < queue.max_per_subject
        if self.options.first_subject_limit_not_enforced:  # a bug model (bugs.nats_server_3836d96)
            lower = queue.max_per_subject == 0 or limit < queue.max_per_subject
        queue.max_per_subject = limit
        if lower:
            for subject in dict.fromkeys(ref.msg.subject for ref in queue.live.values()):
                self._enforce_subject_limit(queue, subject)

    def _copy_retroactive(self, address: AddressState, queue: QueueState) -> None:
        """RING-16: a new queue gets copies of the address's retained messages its filter matches,
        oldest first, through its tail (its ring applies); the retained messages stay."""
        for message in list(address.retro or ()):
            if queue.filter is None or queue.filter(message.properties):
                self._admit_to_queue(queue, address, message)
        self._settle(queue)

    def _overflow_result(self, queue: QueueState) -> SendResult:
        return "failed" if queue.overflow in ("reject_new", "reject_new_dlx") else "dropped"

    def _admit_to_queue(self, queue: QueueState, address: AddressState, message: Message) -> bool:
        """Put a new message on one queue; False when the queue's bound refused it (RING-3 options).
        RING-24 (classic reject-publish-dlx): the refused message is dead-lettered (reason maxlen)."""
        refused = (queue.bounded or queue.discard_new_per_subject) and not self._bound_accepts(
            queue, message.size, message.subject)
        if refused:
            self._event("rejected", queue.name, message.id, queue.overflow)
            queue.counters.refused += 1  # DELIVERY-21
            if queue.overflow == "reject_new_dlx":
                self._dead_letter_copy(queue, message, "maxlen")
            return False
        ref = Ref(message, queue.name)
        self._stamp_expiry(queue, ref)
        queue.refs[ref.id] = ref
        queue.counters.added += 1
        address.hold(message)
        ref.in_memory = True
        if self.options.last_value_direct_stays_current:  # a bug model (reference_model.bugs)
            from .bugs.artemis_last_value_direct import sent

            sent(queue, ref, self.now_ms)
        self._enqueue_new(queue, ref)
        return True

    def _bound_accepts(self, queue: QueueState, size: int, subject: str | None = None) -> bool:
        """reject_new / drop_newest: may one more message of `size` bytes enter? (drop_head always
        admits.) RING-27: the byte bound is checked as the count bound is. RING-32/33: a subject at
        its max_per_subject is refused under discard_new_per_subject, else the count bound lets it
        in (it replaces the subject's oldest), and so does the byte bound when that oldest message is
        at least as large."""
        overflow, opts = queue.overflow, self.options
        if overflow == "drop_head":
            return True
        at_limit = queue.subject_at_limit(subject)
        if at_limit and overflow == "reject_new" and queue.discard_new_per_subject:
            return False
        bound, max_bytes = queue.ring_size, queue.max_bytes
        count = queue.bound_count(opts.bound_counts)
        if overflow == "drop_newest":
            return bound < 0 or count < bound
        volume = queue.bound_bytes(opts.bound_counts) if max_bytes >= 0 else 0
        over = (0 <= bound < count + 1) or (0 <= max_bytes < volume + size)
        if at_limit and overflow == "reject_new":
            oldest = queue.subject_refs(subject)[0]
            over = 0 <= max_bytes < volume + size and oldest.size < size
        if opts.discard_new_refuses_at_max_bytes and overflow == "reject_new":
            # a bug model (reference_model.bugs.nats_server_7608): storeRawMsg's >= and <=
            reached = 0 < max_bytes <= volume + size
            over = reached and queue.subject_refs(subject)[0].size <= size if at_limit \
                else (0 <= bound < count + 1) or reached
        if not queue.hysteresis:  # RING-22: refused before the enqueue
            if over:
                queue.rejecting = True
                return False
            return True
        # RING-23 (quorum): the limit is evaluated after the enqueue: the message that goes over is
        # accepted and the queue rejects from then on, until count <= trunc(ratio x bound)
        self._reject_state(queue)
        if queue.rejecting:
            return False
        queue.rejecting = over
        return True

    def _reject_state(self, queue: QueueState) -> None:
        """RING-23: the quorum reject-publish state follows the count whenever it changes (enqueue,
        return, checkout, settle), as rabbit_fifo evaluates the limit: over the bound -> rejecting,
        at or below trunc(ratio x bound) (for each bound set: is_below_soft_limit) -> accepting
        again, in between -> unchanged."""
        opts = self.options
        if queue.over_bound(opts.bound_counts):
            queue.rejecting = True
            return
        ratio = opts.unblock_ratio
        count_low = queue.ring_size < 0 or queue.bound_count(opts.bound_counts) <= ratio * queue.ring_size
        bytes_low = queue.max_bytes < 0 or queue.bound_bytes(opts.bound_counts) <= ratio * queue.max_bytes
        if count_low and bytes_low:
            queue.rejecting = False

    def _add_tail(self, queue: QueueState, ref: Ref) -> None:
        """RING-3: insert at the tail, then evict exactly one head when over the bound (RING-27:
        heads until under a byte bound)."""
        ref.place = "pending"
        queue.sequence += 1
        ref.sequence = sequence = queue.sequence
        queue.pending.add_tail(ref, sequence, ref.size)
        if queue.special:
            if queue.non_destructive:
                self._listed(queue, ref, head=False)
            self._lv_put(queue, ref)
        if queue.max_per_subject > 0:
            self._enforce_subject_limit(queue, ref.msg.subject)
        if queue.bounded:
            opts = self.options
            if opts.dispatch_before_bound and queue.consumers:
                self._deliver(queue)
            if queue.overflow == "drop_head" and queue.over_bound(opts.bound_counts):
                evicted = self._evict_one(queue)
                while evicted and queue.max_bytes >= 0 and queue.over_bound(opts.bound_counts):
                    evicted = self._evict_one(queue)

    def _enforce_subject_limit(self, queue: QueueState, subject: str | None) -> None:
        """RING-31: after a store, remove the subject's oldest stored messages (with evict_unacked
        whatever their state, else pending ones only) until it has max_per_subject; before the
        queue's own bounds are enforced (nats-server storeRawMsg, enforcePerSubjectLimit)."""
        refs = queue.subject_refs(subject)
        if not self.options.evict_unacked:
            refs = [ref for ref in refs if ref.place == "pending"]
        for ref in refs[:max(len(queue.subject_refs(subject)) - queue.max_per_subject, 0)]:
            self._evict(queue, ref)

    def _evict_one(self, queue: QueueState) -> bool:
        """Remove one message to keep the bound: the pending head (RING-4/5/6), or with evict_unacked
        the oldest stored message whatever its state (JetStream discard=old; RING-27: under a byte
        bound as often as it takes, delivered messages too). RING-26: with dead_letter_dropped the
        head is dead-lettered (reason maxlen). True when a message was removed."""
        if self.options.evict_unacked:
            for ref in queue.live.values():
                if ref.place in ("pending", "delivering", "exhausted"):
                    self._evict(queue, ref)
                    return True
            return False
        victim = queue.pending.poll()
        if victim is not None:
            if self.options.ring_eviction_keeps_delivered_pending and victim.id in queue.in_delivery:
                queue.in_delivery.discard(victim.id)  # a bug model (bugs.artemis_enforce_ring_in_delivery)
                queue.pending_kept += 1
            if queue.special:
                self._unlisted(queue, victim)
            self._terminate(queue, victim, "replaced")
            self._event("replaced", queue.name, victim.id, "ring")
            if self.options.dead_letter_dropped:
                self._dead_letter_copy(queue, victim.msg, "maxlen")
            return True
        return False

    def _evict(self, queue: QueueState, ref: Ref) -> None:
        if ref.place == "exhausted":  # REDELIVERY-21: kept past max_deliver, still stored
            del queue.exhausted[ref.id]
            if self.options.removal_keeps_redelivered:  # a bug model (reference_model.bugs)
                from .bugs.nats_server_8102 import removed

                removed(queue, ref)
        elif ref.place == "pending":
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
            # REDELIVERY-28 / RING-18: a message waiting out a NAK delay is pending acknowledgement of
            # no consumer; evicted, it no longer counts toward max_ack_pending (RESTART-3 _parked)
            queue.nak_waiting.pop(ref.id, None)
        self._undeliver(queue, ref)

    def _listed(self, queue: QueueState, ref: Ref, *, head: bool) -> None:
        """DELIVERY-12: a ref entered the list of a non-destructive queue: every consumer's iterator
        will still reach it."""
        for consumer in queue.consumers:
            if consumer.unseen is not None:
                if head:
                    consumer.unseen.add_head(ref, ref.size)
                else:
                    consumer.unseen.add_tail(ref, ref.sequence, ref.size)

    def _unlisted(self, queue: QueueState, ref: Ref) -> None:
        """A ref left the pending list (dispatch, eviction, prune): consumers' iterators skip it,
        and it stops being its key's current value (LastValueQueue#refRemoved)."""
        if queue.non_destructive:
            for consumer in queue.consumers:
                if consumer.unseen is not None and ref.id in consumer.unseen:
                    consumer.unseen.remove(ref.id)
            if self.options.repeat_after_removal_returns_twice:  # a bug model (reference_model.bugs)
                from .bugs.artemis_linked_list_repeat import removed

                removed(queue, ref)
        self._forget_value(queue, ref)
