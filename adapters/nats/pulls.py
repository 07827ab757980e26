"""The nats adapter's pull requests: a receive (one no_wait request, or at the ack-pending cap one with
an expiry and an idle heartbeat), a fetch of a batch within a byte budget (DELIVERY-38..40), and the
priority groups' fields of a request (DELIVERY-41..47)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from nats import errors as nats_errors
from nats.aio.msg import Msg

from .._base import Refused, Unsupported, operation
from .capabilities import nowait_ends_at_eos
from .observation import NatsObservation
from .queues import BYTE_UNIT, FETCH_MAX_BATCH, ID_HEADER, UNBOUNDED_ACK_PENDING, _Consumer, _Queue
from .retention import PRIORITY_GROUP

#: the idle heartbeat of a pull request at the ack-pending cap (see NatsAdapter._capped_receive); the
#: request expires after two of them, the shortest expiry nats-server accepts with that heartbeat
CAP_HEARTBEAT_NS = 5_000_000
#: DELIVERY-45: the header that carries a pinned client's pin id on each delivery
PIN_HEADER = "Nats-Pin-Id"


class NatsPulls(NatsObservation):
    """Receive and fetch for :class:`~.adapter.NatsAdapter`."""

    #: address -> retention of the stream addresses declared since open (NatsAdapter._reset)
    stream_addresses: dict[str, str]

    @operation
    async def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        if self._nc is None or self._sub is None:
            raise nats_errors.ConnectionClosedError
        request: dict[str, Any] = {"batch": 1, "no_wait": True, **self._group(queue, state)}
        if queue.max_ack_pending < UNBOUNDED_ACK_PENDING:
            info = await self._js().consumer_info(queue.stream, queue.durable_name)
            capped = info.num_ack_pending >= queue.max_ack_pending
            if capped and not await self._none_undelivered(queue, info):
                return await self._capped_receive(state, queue)
        await self._pull_request(queue, request)
        msg = await self._sub.next_msg(timeout=self.fetch_timeout + self.request_timeout)
        if _status(msg) == "404" and await self._lagged(queue):  # asked again once the count caught up
            await self._pull_request(queue, request)
            msg = await self._sub.next_msg(timeout=self.fetch_timeout + self.request_timeout)
        return self._took(state, queue, msg, "receive", ("404", "408"))

    async def _lagged(self, queue: _Queue) -> bool:
        """After a no_wait pull request answered "404 No Messages": was that the durable's count lagging
        behind a publish? The server answers so when the durable's running count of pending messages is
        0 (consumer.go processNextMsgRequest, numPending), and the stream raises that count after its
        PubAck, asynchronously: on a loaded machine a receive right after a send could find nothing
        that was there (the stale-pin replay's first receive, in a fresh-clone test run). So where a
        message was published since the last such look, wait for the count to catch up
        (:meth:`_settled_info`); true when it then counts a message pending (the request is sent
        again, once). An empty answer costs this look only after a send."""
        if not (queue.sent_since_look and queue.durable):
            return False
        queue.sent_since_look = False
        info = await self._settled_info(queue)
        return int(info.num_pending or 0) > 0

    async def _pull_request(self, queue: _Queue, request: dict[str, Any]) -> None:
        """Send one pull request to the queue's durable ($JS.API.CONSUMER.MSG.NEXT); its answers come
        on the adapter's inbox."""
        assert self._nc is not None
        await self._nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{queue.stream}.{queue.durable_name}",
                               json.dumps(request).encode(), reply=self._inbox)

    async def _capped_receive(self, state: _Consumer, queue: _Queue) -> str | None:
        """A receive at the ack-pending cap while messages never delivered are stored: only a
        redelivery may be served, and a no_wait request that finds none is kept waiting, never
        answered (consumer.go loopAndGatherMsgs: "Dont expire oneshots if we are here because of max
        ack pending limit"). So the request has an expiry and an idle heartbeat (CAP_HEARTBEAT_NS).
        The heartbeat is sent by processWaiting: from the consumer's delivery loop, right after it
        tried to deliver with the request waiting (getNextMsg serves a waiting redelivery first) or
        on a timer that loop set then, or from a consumer info (none is asked meanwhile). The adapter
        waits for each pull request's end before the next, so no timer set for another request can
        fire for this one: a heartbeat before the request's 408 says the server tried and had nothing
        for it.
        A 408 without a heartbeat before it (the server did not get to the request before its expiry)
        says nothing: the receive then asks again with an expiry of ``fetch_timeout`` and takes what
        that request gets."""
        assert self._nc is not None and self._sub is not None
        probe = {"batch": 1, "expires": 2 * CAP_HEARTBEAT_NS, "idle_heartbeat": CAP_HEARTBEAT_NS,
                 **self._group(queue, state)}
        await self._pull_request(queue, probe)
        beat = False
        while True:
            msg = await self._sub.next_msg(timeout=self.fetch_timeout + self.request_timeout)
            status = _status(msg)
            if status == "100":
                beat = True
                continue
            if status != "408" or beat:
                return self._took(state, queue, msg, "receive", ("404", "408"))
            break
        request = {"batch": 1, "expires": int(self.fetch_timeout * 1e9), **self._group(queue, state)}
        await self._pull_request(queue, request)
        msg = await self._sub.next_msg(timeout=self.fetch_timeout + self.request_timeout)
        return self._took(state, queue, msg, "receive", ("404", "408"))

    async def _none_undelivered(self, queue: _Queue, info: Any) -> bool:
        """Whether the durable has no message it never delivered (``num_pending`` 0 in `info`, and the
        stream stores nothing above its delivered sequence: a count that has caught up). Then a
        no_wait request at the ack-pending cap is exact and answered at once: the redelivery next in
        line, else "404 No Messages" (consumer.go processNextMsgRequest: a no_wait request without
        an expiry when ``num_pending`` plus the redelivery queue is 0)."""
        return int(info.num_pending or 0) == 0 and await self._stored_above(queue, info) == 0

    def _took(self, state: _Consumer, queue: _Queue, msg: Msg, op: str, ends: tuple[str, ...]) -> str | None:
        """The id of a delivered message, now held by the consumer; None for a status in `ends` (the
        request ended); Refused for any other status."""
        status = _status(msg)
        if status in ends:
            return None
        if status == "423":  # DELIVERY-47: a pin id that is not the current pin; forget it
            state.pin = None
            return None
        if status is not None:
            description = msg.headers.get("Description", "") if msg.headers else ""
            raise Refused(f"nats: {op}: {status} {description}".strip())
        msg_id = msg.headers.get(ID_HEADER) if msg.headers else None
        if msg_id is None:
            raise Refused(f"nats: {op}: a message without an {ID_HEADER} header")
        queue.delivered[msg_id] = msg.metadata.num_delivered
        if queue.priority_policy == "pinned_client":  # DELIVERY-45: the client's pin from now on
            state.pin = msg.headers.get(PIN_HEADER) if msg.headers else None
        state.held[msg_id] = msg
        state.tokens[msg_id] = msg
        return str(msg_id)

    def _group(self, queue: _Queue, state: _Consumer) -> dict[str, Any]:
        """DELIVERY-41..47: a pull request of a priority consumer names its group (else 400), a pinned
        client its pin id. A request without an id while another client's pin holds is queued and
        never served: from 2.11.11 and 2.12.2 the no_wait request is then answered 404 at once
        (nowait_ends_at_eos); before them it only ends at an expiry, so on those releases it expires
        after ``fetch_timeout`` (:meth:`_queued_expiry`)."""
        if queue.priority_policy is None:
            return {}
        fields: dict[str, Any] = {"group": PRIORITY_GROUP}
        if queue.priority_policy == "pinned_client":
            fields.update(self._queued_expiry())
            if state.pin is not None:
                fields["id"] = state.pin
        return fields

    def _queued_expiry(self) -> dict[str, int]:
        """The expiry a no_wait pull request the server may queue without serving it needs on this
        server: none where a queued no_wait request ends with a 404 when nothing is for it
        (nowait_ends_at_eos), else ``fetch_timeout``."""
        if nowait_ends_at_eos(self.server_version):
            return {}
        return {"expires": int(self.fetch_timeout * 1e9)}

    @operation(name="fetch")
    async def _fetch(self, consumer: str, batch: int, max_bytes: int, min_pending: int = 0,
                     min_ack_pending: int = 0) -> list[str]:
        """DELIVERY-38..40 (capability ``pull_batch``): one no_wait pull request for `batch` messages
        within `max_bytes` x BYTE_UNIT bytes (0: no budget; only on a stream address, whose messages
        are padded to just within their size in units: :meth:`_stream_payload`); the messages until
        `batch` of them came or a 404/408/409 status ended the request (or nothing more came within
        the fetch and request timeouts: the budget was spent to the byte). DELIVERY-41..44
        (``priority_overflow``): an overflow queue's thresholds, the request expiring after
        ``fetch_timeout`` only before 2.11.11 and 2.12.2, where a no_wait request the thresholds
        decline waits until it expires (:meth:`_queued_expiry`); from them the server answers it 404
        at once."""
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        if max_bytes and queue.address not in self.stream_addresses:
            raise Unsupported("fetch max_bytes outside a stream address (messages are not padded)")
        if max_bytes and batch > FETCH_MAX_BATCH:
            raise Unsupported(f"fetch max_bytes with a batch over {FETCH_MAX_BATCH} (not exact)")
        if self._nc is None or self._sub is None:
            raise nats_errors.ConnectionClosedError
        request: dict[str, Any] = {"batch": batch, "no_wait": True, **self._group(queue, state)}
        if max_bytes:
            request["max_bytes"] = max_bytes * BYTE_UNIT
        if min_pending or min_ack_pending:
            if queue.priority_policy != "overflow":
                raise Unsupported("min_pending or min_ack_pending on a queue without the overflow policy")
            request.update({key: value for key, value in (("min_pending", min_pending),
                                                          ("min_ack_pending", min_ack_pending)) if value})
            request.update(self._queued_expiry())
        await self._pull_request(queue, request)
        got: list[str] = []
        wait = self.fetch_timeout + self.request_timeout
        while len(got) < batch:
            try:
                msg = await self._sub.next_msg(timeout=wait)
            except nats_errors.TimeoutError:
                break
            if not got and _status(msg) == "404" and await self._lagged(queue):  # see _lagged
                await self._pull_request(queue, request)
                continue
            msg_id = self._took(state, queue, msg, "fetch", ("404", "408", "409"))
            if msg_id is None:
                break
            got.append(msg_id)
        if max_bytes and len(got) == batch:
            # a batch fulfilled with bytes left is followed by "409 Batch Completed" (consumer.go
            # loopAndGatherMsgs, JsPullRequestRemainingBytesT): read it, so that the next request's
            # answer is its own (none comes when the budget was spent to the byte)
            with contextlib.suppress(nats_errors.TimeoutError):
                msg = await self._sub.next_msg(timeout=wait)
                if self._took(state, queue, msg, "fetch", ("409",)) is not None:
                    raise Refused("nats: fetch: a message beyond the batch")
        return got


def _status(msg: Msg) -> str | None:
    """The status header of a pull request's answer (None: a message)."""
    return msg.headers.get("Status") if msg.headers else None
