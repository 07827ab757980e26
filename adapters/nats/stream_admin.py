"""The nats adapter's operations that change a stream or its durable consumer through the JetStream
API: pause and unpin a durable (DELIVERY-34, DELIVERY-45), a new ring size or subject limit (RING-30,
RING-34), purge (RING-29) and the delete of one message (DELIVERY-31..33)."""

from __future__ import annotations

import datetime
import json
import time

from .._base import Refused, Unsupported, operation
from .client import NatsClient
from .queues import _limits, _Queue
from .retention import PRIORITY_GROUP

#: DELIVERY-33: JetStream's answers to a STREAM.MSG.DELETE of a sequence it does not store, observed on
#: 2.15.1: err_code 10057 (code 500) "no message found" below the first sequence, 10043 (code 400)
#: "sequence N not found" for an interior gap (both codes name any failed delete with the store's error
#: as description, so the description is read too)
MSG_NOT_FOUND = (10043, 10057)


class NatsStreamAdmin(NatsClient):
    """Stream and durable updates for :class:`~.adapter.NatsAdapter`."""

    @operation(name="pause")
    async def _pause(self, queue: str, until_ms: int) -> None:
        """DELIVERY-34: ``$JS.API.CONSUMER.PAUSE`` of the queue's durable until the wall time at which
        the example's logical clock reaches `until_ms` (the clock ``advance`` keeps: open() plus the
        logical time); a queue without a durable yet gets it when its first consumer opens."""
        state = self._queue(queue)
        deadline = time.time() + self._clock_origin + until_ms / 1000 - time.monotonic()
        moment = datetime.datetime.fromtimestamp(deadline, tz=datetime.UTC)
        state.pause_until = moment.isoformat().replace("+00:00", "Z")
        if state.durable:
            await self._send_pause(state)

    @operation(name="unpin")
    async def _unpin(self, queue: str) -> None:
        """DELIVERY-45: ``$JS.API.CONSUMER.UNPIN`` of the queue's durable and its group."""
        state = self._queue(queue)
        if state.priority_policy != "pinned_client":
            raise Unsupported("unpin of a queue without the pinned_client policy")
        await self._api(f"$JS.API.CONSUMER.UNPIN.{state.stream}.{state.durable_name}",
                        {"group": PRIORITY_GROUP}, "unpin")

    async def _send_pause(self, state: _Queue) -> None:
        await self._api(f"$JS.API.CONSUMER.PAUSE.{state.stream}.{state.durable_name}",
                        {"pause_until": state.pause_until}, "pause")

    @operation
    async def set_ring_size(self, queue: str, size: int) -> None:
        """RING-30: a stream update with the new max_msgs (the rest of the stream's config as it is);
        the server enforces it at once (discard old trims the oldest stored messages)."""
        state = self._queue(queue)
        info = await self._js().stream_info(state.stream)
        await self._js().update_stream(info.config, **_limits(size, state.max_length_bytes))

    @operation
    async def set_subject_limit(self, queue: str, limit: int) -> None:
        """RING-34: a stream update with the new max_msgs_per_subject (the rest as it is); a lower
        one trims every subject at once."""
        state = self._queue(queue)
        info = await self._js().stream_info(state.stream)
        await self._js().update_stream(info.config, max_msgs_per_subject=limit)

    @operation
    async def purge(self, queue: str) -> int:
        """$JS.API.STREAM.PURGE (RING-29): removes every stored message; answers their number."""
        state = self._queue(queue)
        assert self._nc is not None
        reply = await self._nc.request(f"$JS.API.STREAM.PURGE.{state.stream}", b"",
                                       timeout=self.request_timeout)
        answer = json.loads(reply.data)
        if "error" in answer:
            raise Refused(f"nats: purge: {answer['error'].get('description', answer['error'])}")
        return int(answer.get("purged", 0))

    @operation(name="delete")
    async def delete_message(self, queue: str, msg_id: str) -> bool:
        """$JS.API.STREAM.MSG.DELETE by the message's stream sequence (DELIVERY-31..33): True when the
        server deleted it, False when it answers the sequence is not stored (MSG_NOT_FOUND); an id
        the adapter never had accepted has no sequence and is False without a request."""
        state = self._queue(queue)
        seq = state.seqs.get(msg_id)
        if seq is None:
            return False
        assert self._nc is not None
        reply = await self._nc.request(f"$JS.API.STREAM.MSG.DELETE.{state.stream}",
                                       json.dumps({"seq": seq, "no_erase": True}).encode(),
                                       timeout=self.request_timeout)
        answer = json.loads(reply.data)
        error = answer.get("error")
        if error is None:
            return bool(answer.get("success"))
        if error.get("err_code") in MSG_NOT_FOUND and "found" in str(error.get("description")):
            return False
        raise Refused(f"nats: delete: {error.get('description', error)}")

