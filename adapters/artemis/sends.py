"""The artemis adapter's sends: bodies sized for the broker's estimate, scheduled messages, and the
BLOCK policy's sends without credit, settled as the address makes room."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from proton import Message as AmqpMessage
from proton import Timeout, symbol
from proton.utils import BlockingConnection, SendException

from mqconform.reference_model.config import Message

from .._base import (
    Refused,
    Unsupported,
    operation,
)
from .declarations import ArtemisDeclarations
from .records import DUE_PROPERTY, DUPLICATE_ID_PROPERTY, ID_PROPERTY, QUEUE_COUNTS, _Address
from .sizing import GRAIN, threshold


class ArtemisSends(ArtemisDeclarations):
    """Sends, scheduled sends and the BLOCK policy's sends."""

    def _sender(self, address: _Address) -> Any:
        link = self.sender_links.get(address.physical)
        if link is None:
            link = self._block_conn().create_sender(address.physical) if self._blocks(address) \
                else self.conn.create_sender(address.physical)
            self.sender_links[address.physical] = link
        return link

    @staticmethod
    def _blocks(address: _Address) -> bool:
        return address.config is not None and address.config.full_policy == "BLOCK"

    def _block_conn(self) -> Any:
        """The connection to the acceptor that grants one credit at a time (opened per open())."""
        if self.block_conn is None:
            url = self.block_url or (self.broker.block_url if self.broker is not None else None)
            if url is None:
                raise Unsupported(self._why("block_policy"))
            self.block_conn = BlockingConnection(url, timeout=self.timeout, user=self.user,
                                                 password=self.password)
        return self.block_conn

    def _pump_block(self, seconds: float) -> None:
        with contextlib.suppress(Timeout):
            self.block_conn.wait(lambda: False, timeout=seconds)

    def _full(self, address: _Address) -> bool:
        """PAGING-1: the address is at or over its byte limit (AddressSize against the threshold)."""
        assert address.config is not None
        size = self._address_size(address)
        return size is not None and size >= threshold(address.config.max_size_bytes)

    def _send_blocking(self, address: _Address, amqp: AmqpMessage) -> str:
        """PAGING-3 BLOCK: with credit (the broker granted it because the address was not full after
        the previous message) a plain send; without it and the address full, the transfer is written
        anyway and proton sends it when the broker grants the next credit (memory freed): `blocked`."""
        link = self._sender(address)
        if not address.blocked:
            deadline = time.monotonic() + self.timeout
            while link.link.credit <= 0 and not self._full(address):
                if time.monotonic() > deadline:
                    raise TimeoutError("no credit on a BLOCK address that is not full")
                self._pump_block(0.005)
            if link.link.credit > 0:
                link.send(amqp, timeout=self.timeout)
                return "accepted"
        address.blocked.append(link.link.send(amqp))
        return "blocked"

    def _settle_blocked(self, address: _Address) -> None:
        """Wait until the broker took the blocked transfers it grants credit for (memory freed), in
        order: each is settled by the broker once routed; stop at one still held while the address is
        full and the link has no credit."""
        link = self._sender(address).link
        deadline = time.monotonic() + self.timeout
        while address.blocked:
            self._pump_block(0)
            head = address.blocked[0]
            if head.remote_state or head.settled:
                address.blocked.popleft()
                head.settle()
                continue
            if link.credit <= 0 and self._full(address):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("a blocked transfer was neither taken nor held")
            self._pump_block(0.005)

    @operation
    def send(self, to: str, message: Message) -> str:
        if to not in self.addresses:
            raise Refused(f"unknown address {to!r}")
        address = self.addresses_[to]
        fields: dict[str, Any] = {"durable": True, "priority": message.priority,
                                  "properties": {ID_PROPERTY: message.id, **dict(message.properties)}}
        due = message.scheduled_at_ms if message.scheduled_at_ms and message.scheduled_at_ms > 0 else None
        if due is not None:
            if "scheduling" not in self.capabilities:
                raise Unsupported(self._why("scheduling"))
            fields["properties"][DUE_PROPERTY] = due
            fields["annotations"] = {symbol("x-opt-delivery-time"): self._far_origin + due}
        if message.ttl_ms is not None:
            fields["ttl"] = message.ttl_ms / 1000  # proton: seconds; the header carries ms
        if message.group is not None:
            fields["group_id"] = message.group  # DELIVERY-49: AMQPMessage#getGroupID, properties group-id
        cached = None
        if message.duplicate_id is not None:  # EXPIRY-8: the application property _AMQ_DUPL_ID
            if "duplicate_id" not in self.capabilities or self._blocks(address):
                raise Unsupported(self._why("duplicate_id"))
            fields["properties"][DUPLICATE_ID_PROPERTY] = message.duplicate_id
            cached = self._duplicate_ids(address)
        amqp = AmqpMessage(body=self._body(address, message.size, fields), **fields)
        # EXPIRY-3 (ttl_combination message_first): the message's own TTL, else expiry-delay
        self._note_ttl(message.ttl_ms if message.ttl_ms is not None else address.expiry_delay)
        if self._blocks(address):
            outcome = self._send_blocking(address, amqp)
            if outcome == "accepted":
                self._took(address, message, at_once=due is None)
            self._settle_address(address)
            return outcome
        # AddressSize and Paging, then each queue's counts after flushExecutor: one request
        before, paging_before, counts = self._address_look(address)
        added = int(counts[0]["MessagesAdded"]) if counts else None
        try:
            self._sender(address).send(amqp, timeout=self.timeout)
        except SendException as exc:
            config = address.config
            if config is not None and "FAIL" in (config.full_policy, config.page_full_policy):
                return "failed"  # PAGING-3, 14: FAIL (or page-full FAIL) refuses the send
            raise Refused(f"artemis: send refused: {exc}") from None
        outcome = "accepted"
        if cached is not None and self._duplicate_ids(address) == cached:
            # EXPIRY-8: the address's cache held the id: the broker answered Accepted and routed nothing
            self._settle_address(address)
            return "dropped"
        after = self._address_look(address) if before is not None and address.queues else None
        if after is not None and (paging_before or after[0] == before):
            # PAGING-3, 6, 7, 14: not held in memory: written to a page file (PAGE: the queues count
            # it added) or discarded (DROP, or a page-full address under PAGE). An address already
            # paging takes nothing into memory (PagingStoreImpl#page); its AddressSize may still fall:
            # a ring queue replaces a message held in memory by the paged one (RING-10)
            paging = address.config is not None and address.config.full_policy == "PAGE"
            paged = paging and bool(after[2]) and int(after[2][0]["MessagesAdded"]) != added
            outcome = "paged" if paged else "dropped"
        if outcome != "dropped":
            self._took(address, message, at_once=due is None)
        if due is not None:
            self._dues.append(due)
            if due <= self._clock_ms:  # SCHED-2: due already: it enters the scheduler and fires
                self._fire(self._clock_ms)
        # every queue of the address takes an accepted message (no filters): its MessagesAdded rises by
        # one when the message leaves the queue's intermediate list (QueueImpl#doInternalPoll), in the
        # delivery pass that flushExecutor may return before; until then neither its counts nor
        # listMessages show it (seen under load on 2.40.0: a non-destructive last-value queue listed
        # [m1] after m2, of another value, was sent)
        arrivals = {name: int(c["MessagesAdded"]) + 1
                    for name, c in zip(address.queues, counts, strict=True)} if outcome == "accepted" else {}
        # the look after the send stands for its first queue's first settle look (nothing sent since)
        self._settle_address(address, after[2][0] if after is not None and after[2] and due is None else None,
                             arrivals)
        return outcome

    def _duplicate_ids(self, address: _Address) -> int:
        """EXPIRY-8: AddressControl CurrentDuplicateIdCacheSize: it grows by one when a send's duplicate
        id is new to the address (PostOfficeImpl#checkNotBridgeDuplicateID caches it), not for a duplicate."""
        mgmt = self._mgmt()
        mbean = mgmt.address_mbean(address.physical)
        return int(mgmt.read(mbean, "CurrentDuplicateIdCacheSize")["CurrentDuplicateIdCacheSize"])

    def _took(self, address: _Address, message: Message, at_once: bool) -> None:
        """Record a send the broker took on the address's last-value queues (_Queue.took)."""
        for name in address.queues:
            queue = self.queues[name]
            if queue.last_value:
                queue.took(message.id, dict(message.properties), at_once)

    def _body(self, address: _Address, size: int, fields: dict[str, Any]) -> str:
        """The body of a message of logical size `size`: that many bytes, or on a limited address one
        that weighs ``size * UNIT`` broker bytes (.sizing)."""
        if address.config is None:
            return "x" * max(size, 0)
        assert self.sizing is not None
        if size % GRAIN:
            raise Unsupported(f"a logical size that is not a multiple of {GRAIN} on a limited address "
                              "(thresholds are exact only on the grain, adapters/artemis/sizing.py)")
        try:
            return self.sizing.body_for(size, len(address.queues), **fields)
        except ValueError as exc:
            raise Unsupported(str(exc)) from None

    def _address_look(self, address: _Address) -> tuple[int | None, bool, list[dict[str, Any]]]:
        """A limited address's AddressSize and Paging (page mode under PAGE, full under DROP; None and
        False for the others: nothing to measure), then the counts of each of its queues after
        flushExecutor (MessagesAdded: paged messages count, page-full drops do not), in one request."""
        mgmt = self._mgmt()
        looks: list[tuple[str, tuple[str, ...], bool]] = [
            (self._queue_mbean(self.queues[name]), QUEUE_COUNTS, True) for name in address.queues]
        if address.config is None:
            return None, False, mgmt.reads(*looks) if looks else []
        size, *answers = mgmt.reads((mgmt.address_mbean(address.physical), ("AddressSize", "Paging"), False),
                                    *looks)
        return int(size["AddressSize"]), bool(size["Paging"]), answers

    def _address_memory(self, address: _Address) -> tuple[int | None, bool]:
        """AddressSize and Paging (page mode under PAGE, full under DROP) of a limited address, in one
        request; (None, False) for the others: nothing to measure."""
        if address.config is None:
            return None, False
        mgmt = self._mgmt()
        state = mgmt.read(mgmt.address_mbean(address.physical), "AddressSize", "Paging")
        return int(state["AddressSize"]), bool(state["Paging"])

    def _address_size(self, address: _Address) -> int | None:
        """AddressSize of a limited address (None for the others: nothing to measure)."""
        if address.config is None:
            return None
        mgmt = self._mgmt()
        return int(mgmt.read(mgmt.address_mbean(address.physical), "AddressSize")["AddressSize"])

    def _settle_address(self, address: _Address, first: dict[str, Any] | None = None,
                        arrivals: dict[str, int] | None = None) -> None:
        """Settle every queue of `address`; `first`: the first queue's counts just read; `arrivals`: per
        queue, the MessagesAdded its settle waits for (a message accepted for it)."""
        for i, queue in enumerate(address.queues):
            self._settle_queue(queue, None if i else first, added=(arrivals or {}).get(queue))
            if queue in (arrivals or {}) and self.queues[queue].last_value:
                self._await_pruned(self.queues[queue])

