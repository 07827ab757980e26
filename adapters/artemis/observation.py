"""The artemis adapter's observations: counters, pending order and browsing through management, the
paging flag, a message's delivery count and redelivered flag; delete by id, delivering a scheduled message
now, and a new ring size."""

from __future__ import annotations

import json
import time
from typing import Any

from .._base import (
    NotObservable,
    Refused,
    Unsupported,
    operation,
)
from .records import DUE_PROPERTY, ID_PROPERTY, QUEUE_COUNTS, _Queue
from .sends import ArtemisSends

#: the default managementBrowsePageSize: what listMessages shows at most where the adapter cannot set it
DEFAULT_BROWSE_PAGE = 200


class ArtemisObservation(ArtemisSends):
    """Observations, delete by id and a new ring size."""

    def _paging_and(self, q: _Queue, look: dict[str, Any]) -> tuple[bool, Any]:
        """Whether the queue's address is in page mode (AddressControl Paging, as `_paging_now`) and
        the answer of `look` (a raw request on the queue's MBean), after QueueControl#flushExecutor: one
        request where two were, in the same order (a bulk request runs its parts in turn). Only an
        address with the PAGE policy can be in page mode; for the others nothing is read first."""
        mgmt = self._mgmt()
        mbean = self._queue_mbean(q)
        address = self.addresses_[q.address]
        paging_read = address.config is not None and address.config.full_policy == "PAGE"
        first = [{"type": "read", "mbean": mgmt.address_mbean(address.physical), "attribute": "Paging"}] \
            if paging_read else []
        answers = mgmt.bulk([*first, mgmt.flush_request(mbean), look])
        return bool(answers[0]) if paging_read else False, answers[-1]

    @operation
    def counters(self, queue: str) -> dict[str, int]:
        q = self._queue(queue)
        counts_request = {"type": "read", "mbean": self._queue_mbean(q), "attribute": list(QUEUE_COUNTS)}
        paging, counts = self._paging_and(q, counts_request)
        if paging:
            raise NotObservable("management shows no split between pending and paged messages "
                                "(QueueImpl#getMessageCount adds the page subscription's count)")
        state = {name: counts[name] for name in QUEUE_COUNTS}
        pending = q.pending(state)
        return {"message_count": state["MessageCount"], "pending_count": pending,
                "delivering_count": state["DeliveringCount"], "scheduled_count": state["ScheduledCount"],
                "paged_count": 0, "added": state["MessagesAdded"],
                "acknowledged": state["MessagesAcknowledged"], "killed": state["MessagesKilled"],
                "expired": state["MessagesExpired"]}

    @operation
    def pending_ids(self, queue: str) -> list[str]:
        q = self._queue(queue)
        paging, listed = self._paging_and(q, self._listing_request(q))
        if paging:
            raise NotObservable("listMessages walks the memory then the page cursor: paged messages "
                                "cannot be told from pending ones")
        if q.superseded_shown(listed, self._received(queue)):
            return self._whole(self._listed(q))
        return self._whole(self._ids(listed))

    def _whole_listing(self, q: _Queue) -> list[str]:
        """listMessages, when it shows the whole list: before 2.32 the positional addAddressSettings
        cannot raise managementBrowsePageSize, so a queue of more than its default 200 messages (a
        non-destructive queue keeps every keyless message it delivered) is shown cut."""
        return self._whole(self._listed(q))

    def _whole(self, listed: list[str]) -> list[str]:
        """`listed` (listMessages' ids), or NotObservable where it may be cut (see `_whole_listing`)."""
        if not self.features.json_settings and len(listed) >= DEFAULT_BROWSE_PAGE:
            raise NotObservable(f"listMessages shows at most {DEFAULT_BROWSE_PAGE} messages before 2.32 "
                                "(managementBrowsePageSize is not settable live)")
        return listed

    def _listed(self, q: _Queue) -> list[str]:
        """QueueControl#listMessages: pending in delivery order, then the page cursor (browserIterator),
        after QueueControl#flushExecutor (messages still in the queue's intermediate list are not
        listed: see Jolokia.read)."""
        mgmt = self._mgmt()
        mbean = self._queue_mbean(q)
        requests = [*self._listing_requests(q),
                    *({"type": "read", "mbean": mbean, "attribute": a} for a in QUEUE_COUNTS)]
        deadline: float | None = None
        while True:
            _, listed, *values = mgmt.bulk(requests)
            ids = self._ids(listed)
            # fewer listed than the queue counts pending: flushExecutor returned while the delivery pass
            # that moves the intermediate list was still running (ProcessorBase#flush returns once
            # nothing is queued); seen once under a loaded 2.40.0 ci run: a sent message listed as [].
            # Or a last-value queue lists an older message of a value without the send that superseded
            # it (the same pass prunes the one and moves the other: _Queue.superseded_shown)
            if len(ids) >= q.pending(dict(zip(QUEUE_COUNTS, values, strict=True))) \
                    and not q.superseded_shown(listed, self._received(q.name)):
                return ids
            if deadline is None:
                if self._paging_now(q):  # the pending count holds paged messages
                    return ids
                deadline = self._settle_deadline(self.settle_timeout)
            elif time.monotonic() > deadline:
                return ids
            time.sleep(0.002)

    def _listing_requests(self, q: _Queue) -> list[dict[str, Any]]:
        """QueueControl#flushExecutor, then listMessages: two raw requests for one bulk request."""
        return [self._mgmt().flush_request(self._queue_mbean(q)), self._listing_request(q)]

    def _listing_request(self, q: _Queue) -> dict[str, Any]:
        return {"type": "exec", "mbean": self._queue_mbean(q), "operation": "listMessages(java.lang.String)",
                "arguments": [""]}

    @staticmethod
    def _ids(listed: list[dict[str, Any]]) -> list[str]:
        return [str(m.get(ID_PROPERTY)) for m in listed]

    @operation
    def browse(self, queue: str) -> list[str]:
        """What a browser sees: QueueControl#listMessages (QueueImpl#browserIterator), paged ones too
        (PAGING-12)."""
        return self._whole_listing(self._queue(queue))

    @operation
    def paging(self, address: str) -> bool:
        """PAGING-28: AddressControl Paging (PagingStoreImpl#isPaging: page mode under PAGE, full under
        DROP and FAIL)."""
        if address not in self.addresses_:
            raise Refused(f"unknown address {address!r}")
        mgmt = self._mgmt()
        return bool(mgmt.read(mgmt.address_mbean(self.addresses_[address].physical), "Paging")["Paging"])

    @operation
    def message_info(self, queue: str, msg_id: str) -> dict[str, Any] | None:
        """DELIVERY-23: the redelivered flag of a held message's delivery (AMQP header delivery-count
        > 0); Artemis gives no dead-letter reason. None when no consumer of the adapter holds it."""
        count = self._held_count(queue, msg_id)
        return None if count is None else {"redelivered": count > 1, "dead_letter_reason": None}

    def _held_count(self, queue: str, msg_id: str) -> int | None:
        """The delivery count of `msg_id` as its latest delivery to a consumer of `queue` showed it
        (AMQP header delivery-count + 1), None when none holds it. Several consumers hold the same
        message of a non-destructive queue, each with the count of its own delivery; the broker keeps
        one count per message reference (ServerConsumerImpl#handle increments the reference's count
        at each delivery, AMQPMessageWriter writes it into that delivery's header), so the latest
        delivery, the highest count, shows the message's count now. The first holder's count (the
        adapter's order of consumers) was an earlier delivery's: a false delivery_count and
        redelivered finding on a non-destructive ring (two consumers each holding m1, fresh seed
        989465)."""
        counts = [consumer.held[msg_id][1] for consumer in self.consumers.values()
                  if consumer.queue == queue and msg_id in consumer.held]
        return max(counts) if counts else None

    @operation
    def delivery_count(self, queue: str, msg_id: str) -> int:
        count = self._held_count(queue, msg_id)
        if count is not None:
            return count
        raise NotObservable("Artemis shows a delivery count only with a delivery (AMQP header "
                            "delivery-count); management lists no counts")

    def _broker_id(self, q: _Queue, msg_id: str) -> int | None:
        """The broker's message id of logical `msg_id` stored in queue `q` (pending, scheduled or
        delivering), or None."""
        found = self._stored(q, msg_id)
        return None if found is None else int(found[0]["messageID"])

    def _stored(self, q: _Queue, msg_id: str) -> tuple[dict[str, Any], bool] | None:
        """Logical `msg_id` as queue `q` lists it (pending, scheduled or delivering: its management
        map) and whether it is scheduled, or None."""
        mgmt = self._mgmt()
        mbean = self._queue_mbean(q)
        listed, scheduled, delivering = mgmt.bulk([
            {"type": "exec", "mbean": mbean, "operation": op, "arguments": args}
            for op, args in (("listMessages(java.lang.String)", [""]), ("listScheduledMessages()", []),
                             ("listDeliveringMessages()", []))])
        for message in scheduled:
            if str(message.get(ID_PROPERTY)) == msg_id:
                return message, True
        for message in [*listed, *(m for ms in delivering.values() for m in ms)]:
            if str(message.get(ID_PROPERTY)) == msg_id:
                return message, False
        return None

    @operation
    def deliver_scheduled(self, queue: str, msg_id: str) -> bool:
        """SCHED-16: QueueControl#deliverScheduledMessage(id) (2.25.0+, ARTEMIS-3872): the broker moves the
        message to the head if its scheduler holds it (QueueImpl#deliverScheduledMessage, addHead(list,
        scheduling=true)) and does nothing otherwise; the operation is void, so the answer is whether
        listScheduledMessages held it. A pending or delivering message is asked for too (the broker must
        leave it alone); an id the queue does not list reaches no broker id and is not asked for."""
        if "deliver_scheduled" not in self.capabilities:
            raise Unsupported(self._why("deliver_scheduled"))
        q = self._queue(queue)
        found = self._stored(q, msg_id)
        if found is None:
            return False
        message, scheduled = found
        self._mgmt().exec(self._queue_mbean(q), "deliverScheduledMessage(long)", int(message["messageID"]))
        if scheduled:
            q.fired(message)  # a last-value queue's current message from now on
            self._settle_fired(queue, q)
        else:
            self._settle_queue(queue)
        return scheduled

    @operation(name="delete")
    def delete_message(self, queue: str, msg_id: str) -> bool:
        """DELIVERY-31..33: QueueControl#removeMessage(id) (QueueImpl#deleteReference: the pending list,
        then the scheduled ones; a delivering message is not found); False when the queue stores no
        message with that id."""
        q = self._queue(queue)
        broker_id = self._broker_id(q, msg_id)
        if broker_id is None:
            return False
        mgmt = self._mgmt()
        deleted = bool(mgmt.exec(self._queue_mbean(q),
                                 "removeMessage(long)", broker_id))
        if deleted:
            q.forget(msg_id)
        self._settle_queue(queue)
        return deleted

    @operation(name="move")
    def move_message(self, queue: str, msg_id: str, to: str) -> bool:
        """DELIVERY-48: QueueControl#moveMessage(id, otherQueueName) (QueueImpl#moveReference: before
        2.53.0 the pending list only, from 2.53.0 the scheduled and paged messages too; a delivering one
        is not found): the original acknowledged (NORMAL), a copy with a new broker id and the same
        properties and annotations routed to the target queue's binding only. A message the queue lists
        is asked for (delivering ones too: the broker must answer false); an id it does not list reaches
        no broker id and answers False. The target's MessagesAdded is awaited (QueueImpl#doInternalPoll,
        or #scheduleIfPossible for a copy with a delivery time).

        The copy keeps the x-opt-delivery-time of a message sent scheduled, so it enters the target's
        scheduler (PostOfficeImpl#processRoute): one whose logical due time is still ahead fires with the
        others at that time (:meth:`_fire` reads every queue's scheduled messages); one whose time has
        passed (it fired in its queue before the move) would fire at once on the broker's own timer, and
        the adapter's timer is a day ahead (FAR_MS), so the adapter fires it now."""
        q, target = self._queue(queue), self._queue(to)
        found = self._stored(q, msg_id)
        if found is None:
            return False
        message, _ = found
        added = int(self._queue_state(target)["MessagesAdded"])
        moved = bool(self._mgmt().exec(self._queue_mbean(q), "moveMessage(long,java.lang.String)",
                                       int(message["messageID"]), target.physical))
        if moved:
            q.forget(msg_id)
        self._settle_queue(queue)
        self._settle_queue(to, added=added + 1 if moved else None)
        due = message.get(DUE_PROPERTY)
        if moved and due is not None and int(due) <= self._clock_ms:
            self._fire(self._clock_ms)
        return moved

    @operation
    def set_ring_size(self, queue: str, size: int) -> None:
        q = self._queue(queue)
        if size < -1:
            raise Refused("ring_size must be -1 or >= 0")
        body = {"name": q.physical, "address": q.physical_address, "routing-type": q.routing.upper(),
                "ring-size": size}
        mgmt = self._mgmt()
        mgmt.exec(mgmt.broker, "updateQueue(java.lang.String)", json.dumps(body))
        self._settle_queue(queue)
