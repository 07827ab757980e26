"""Addresses: routing a send under the address-full policies, page files, depaging, unblocking.

Implements PAGING-1..3 and 6..7 (routing, one copy per address, FAIL/DROP/BLOCK/PAGE, page mode),
PAGING-8..11 and 30 (page cleanup, per-queue depage under the read budget), PAGING-29 (HornetQ 2.4's
budget), PAGING-13..16 page limits,
PAGING-17..20 and 26..27 (HornetQ whole-page depage, BLOCK never pages) and RING-16 (the address keeps
its retained messages). Static configuration advice (PAGING-21) is the separate :mod:`.paging_advice`.
"""

from __future__ import annotations

from ._core import BrokerCore, SendResult
from .config import Message
from .errors import ModelMisuse
from .state import AddressState, QueueState, Ref


class PagingMixin(BrokerCore):
    """Routing under the address-full policies, page files and depaging."""

    def send(self, to: str, message: Message) -> SendResult:
        """Route a message to every queue of address `to` whose filter matches (PAGING-2, 3, 6, 7)."""
        address = self.addresses.get(to)
        if address is None:
            raise ModelMisuse(f"unknown address {to!r}")
        if message.size < 0:
            raise ModelMisuse("message size must be >= 0")
        if message.scheduled_at_ms is not None and message.scheduled_at_ms > 0:
            self._need("scheduling", "scheduled_at_ms")
        self._check_ttl(message.ttl_ms, "per_message_ttl", "ttl_ms")  # EXPIRY-2
        if message.group is not None:
            self._check_group_send(address.queue_states)  # DELIVERY-49
        if message.duplicate_id is not None and self._duplicate(address, message):
            return "dropped"  # EXPIRY-8: a duplicate is discarded (the broker's Accepted, routed nowhere)
        if address.config.retention is not None:
            self._stream_send(address)  # RETENTION-1: a stream address (reference_model/retention.py)
        result = self._route(address, message)
        # SCHED-2: a message scheduled for later is in no queue's list yet and starts no delivery pass
        scheduled = message.scheduled_at_ms is not None and message.scheduled_at_ms > 0 \
            and self.options.has("scheduling")
        self._settle(dispatch=not scheduled)
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
                self._stamp_expiry(queue, ref)
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
                outcome = "accepted" if self.options.silent_overflow else self._overflow_result(queue)
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

    def _clean_pages(self, address: AddressState) -> None:
        """PAGING-9 / PAGING-30: page cleanup once a page file is complete: every complete page file
        goes except the one being written while an earlier one still holds an unacknowledged message."""
        complete = [page for page, left in address.page_outstanding.items() if left == 0]
        if len(complete) < len(address.page_outstanding):
            complete = [page for page in complete if page != address.page_number]
        for page in complete:
            self._drop_page(address, page)

    def _drop_page(self, address: AddressState, page: int) -> None:
        del address.pages[page]
        del address.page_outstanding[page]
        if not address.pages:
            address.paging = False  # PAGING-8: leave page mode when no page is left
            self._event("paging_stopped", address.name, "")
        self._check_page_release(address)  # PAGING-16: page cleanup

    def _depage(self, queue: QueueState, address: AddressState) -> bool:
        """PAGING-10/11: move paged refs to the queue tail while the read budget allows; PAGING-29
        (depage_rule pending_budget): while the queue's pending bytes are below max-size-bytes."""
        rule = self.options.depage_rule
        if not queue.paged or rule == "address_memory":
            return False
        cfg = address.config
        budget_bytes, budget_msgs = cfg.read_budget_bytes, cfg.max_read_page_messages
        # PAGING-29: delivering messages left the queue's memory count (QueueImpl#refRemoved)
        held = rule == "read_budget"
        if rule == "pending_budget":
            budget_bytes, budget_msgs = cfg.max_size_bytes, -1
        moved = False
        while queue.paged:
            held_bytes, held_msgs = (queue.delivering_bytes, queue.delivering) if held else (0, 0)
            if budget_bytes > 0 and queue.pending.bytes + held_bytes >= budget_bytes:
                break
            if budget_msgs > 0 and len(queue.pending) + held_msgs >= budget_msgs:
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
