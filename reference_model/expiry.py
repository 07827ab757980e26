"""Message expiry (time-to-live) on the logical clock.

Implements EXPIRY-1 (a queue's message TTL), EXPIRY-2 (a message's own TTL, counted from the time it
enters the queue), EXPIRY-3 (the two together: the profile's ``ttl_combination``), EXPIRY-4 (which
messages past their time leave: the profile's ``expiry_scope``, at the exact time on the clock), EXPIRY-5
and EXPIRY-6 (where an expired message goes: ``expired_to``; a dead-lettered copy carries no TTL of its
own), EXPIRY-7 (the expired counter; a returned message keeps its original expiry time) and EXPIRY-8
(a message's duplicate id, feature ``duplicate_id``: a send whose id the address has routed is dropped,
routed nowhere; an expiry copy keeps the id and is routed to the expiry address whatever its cache
holds, adding the id when it is new there).
"""

from __future__ import annotations

import heapq
from itertools import count

import attrs

from .clock import ClockMixin
from .config import Message
from .errors import ModelMisuse
from .state import AddressState, QueueState, Ref

_ORDER = count()


class ExpiryMixin(ClockMixin):
    """EXPIRY-1..7: stamping, finding and removing expired messages."""

    def _check_ttl(self, value: int | None, feature: str, what: str) -> None:
        if value is not None:
            self._need(feature, what)
            if value <= 0:
                raise ModelMisuse(f"{what} must be a positive number of ms")

    def _stamp_expiry(self, queue: QueueState, ref: Ref) -> None:
        """EXPIRY-1..3: the time `ref` expires in `queue`, counted from now (its entry)."""
        queue_ttl, own = queue.config.message_ttl_ms, ref.msg.ttl_ms
        if own is None:
            ttl = queue_ttl
        elif queue_ttl is None or self.options.ttl_combination == "message_first":
            ttl = own
        else:
            ttl = min(own, queue_ttl)
        if ttl is None:
            return
        ref.expires_at = self.now_ms + ttl
        queue.expiring = True
        if self.options.expiry_scope != "head":
            heapq.heappush(queue.expiries, (ref.expires_at, next(_ORDER), ref))
        if self.options.ttl_store_postpones_age_check and queue_ttl is not None:  # a bug model
            from .bugs.nats_max_age_after_a_ttl_message import AgeCheck

            if queue.age_check is None:
                queue.age_check = AgeCheck()
            queue.age_check.stored(ref, self.now_ms, queue_ttl)

    def _arm_age_check(self, queue: QueueState) -> None:
        """A bug model's stream timer (reference_model.bugs.nats_max_age_after_a_ttl_message): a
        queue with a message TTL is created with its age check max_age ahead (newFileStore)."""
        from .bugs.nats_max_age_after_a_ttl_message import AgeCheck

        if queue.config.message_ttl_ms is not None:
            queue.age_check = AgeCheck(at=self.now_ms + queue.config.message_ttl_ms)
            queue.expiring = True

    def _removable(self, queue: QueueState, ref: Ref) -> bool:
        """EXPIRY-4: may an expired `ref` leave now? (ready: while pending; stored: delivered too)."""
        if ref.place == "pending":
            return True
        stored = self.options.expiry_scope == "stored"
        return ref.place in ("delivering", "exhausted") and stored and not queue.non_destructive

    def _expire_due(self, queue: QueueState) -> bool:
        """EXPIRY-4: remove what has expired by now; True when anything left."""
        now, moved = self.now_ms, False
        if self.options.expiry_scope == "head":
            while (head := queue.pending.peek()) is not None and head.expires_at is not None \
                    and head.expires_at <= now:
                self._expire(queue, head)
                moved = True
            return moved
        check = queue.age_check  # a bug model's timer (reference_model.bugs): only at its time
        if check is not None and not check.due(now):
            return False
        heap, overdue = queue.expiries, queue.overdue
        while heap and heap[0][0] <= now:
            ref = heapq.heappop(heap)[2]
            if ref.place != "done":
                overdue[ref.id] = ref
        for ref in [r for r in overdue.values() if r.place == "done" or self._removable(queue, r)]:
            del overdue[ref.id]
            if ref.place != "done":
                self._expire(queue, ref)
                moved = True
        if check is not None:
            check.checked(queue, now)
        return moved

    def _expire(self, queue: QueueState, ref: Ref) -> None:
        """EXPIRY-5/6/7: `ref` leaves the queue as expired, to where the profile sends it."""
        if ref.place == "pending":
            queue.pending.remove(ref.id)
            if queue.special:
                self._unlisted(queue, ref)
        elif ref.place == "exhausted":  # REDELIVERY-21: kept past max_deliver
            del queue.exhausted[ref.id]
            if self.options.removal_keeps_redelivered:  # a bug model (reference_model.bugs)
                from .bugs.nats_server_8102 import removed

                removed(queue, ref)
        elif queue.nak_waiting.pop(ref.id, None) is not None:
            self._undeliver(queue, ref)
        else:
            self._take_from_consumers(queue, ref)  # EXPIRY-4 stored: an ack of it changes nothing
        self._terminate(queue, ref, "expired")
        self._event("expired", queue.name, ref.id)
        target = self.options.expired_to
        if target == "dead_letter":
            self._dead_letter_copy(queue, ref.msg, "expired")
        elif target == "expiry_address":
            self._copy_to(queue.config.expiry_address, ref.msg)

    def _duplicate(self, address: AddressState, message: Message) -> bool:
        """EXPIRY-8: is a send of `message` (with a duplicate id) to `address` a duplicate? When it
        is not, its id enters the address's cache (PostOfficeImpl#checkNotBridgeDuplicateID with
        rejectDuplicates: the cache is the address's, kept across a restart: persist-id-cache)."""
        self._need("duplicate_id", "duplicate_id")
        if address.config.full_policy != "PAGE" or address.config.retention is not None:
            raise ModelMisuse("a duplicate id on an address whose policy is not PAGE, or a stream "
                              "address, is not modelled")
        assert message.duplicate_id is not None
        if message.duplicate_id in address.duplicate_ids:
            self._event("duplicate", address.name, message.id, message.duplicate_id)
            return True
        address.duplicate_ids.add(message.duplicate_id)
        return False

    def _copy_to(self, address_name: str | None, message: Message) -> None:
        """EXPIRY-6: route a copy (no TTL, no schedule of its own) to an existing address. EXPIRY-8: the
        copy keeps its duplicate id and is routed even when the address has routed that id already
        (QueueImpl#expire moves it with rejectDuplicates false, ARTEMIS-3529); a new id is cached."""
        if address_name is not None and address_name in self.addresses:
            self._event("expiry_address", address_name, message.id)
            if message.duplicate_id is not None:
                self.addresses[address_name].duplicate_ids.add(message.duplicate_id)
            self._route(self.addresses[address_name],
                        attrs.evolve(message, scheduled_at_ms=None, ttl_ms=None))

    def next_due_ms(self) -> int | None:
        """The earliest due scheduled message or expiry (EXPIRY-4: at its exact time)."""
        due = super().next_due_ms()
        for queue in self.queues.values():
            if not queue.expiring:
                continue
            if self.options.expiry_scope == "head":
                head = queue.pending.peek()
                at = None if head is None else head.expires_at
            elif queue.age_check is not None:  # a bug model's timer (reference_model.bugs)
                at = queue.age_check.at
            else:
                heap = queue.expiries
                while heap and heap[0][2].place == "done":
                    heapq.heappop(heap)
                at = heap[0][0] if heap else None
            if at is not None and (due is None or at < due):
                due = at
        return due
