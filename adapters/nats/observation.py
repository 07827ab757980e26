"""The nats adapter's observations: the stream's and its durable consumer's state, settled against
the stream (RESTART-5, DELIVERY-27..30), the counters, a held message's redelivered flag and a
message's delivery count."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from nats.js import errors as js_errors

from .._base import Unsupported, operation
from .client import NatsClient
from .queues import _Queue

#: DELIVERY-27: how long consumer_state waits for the durable's num_pending to catch up with the stream
SETTLE_S = 0.5


class NatsObservation(NatsClient):
    """Observations of the nats adapter's queues."""

    async def _settled_info(self, state: _Queue) -> Any:
        """The durable's info once its ``num_pending`` has caught up with the stream: the stream
        signals its consumers asynchronously, so right after a publish the consumer's running count
        (consumer.go checkNumPending, o.npc) can lag. Settled = the stored messages above the
        delivered stream sequence: the sequences from there to the last one, less the interior gaps
        (the stream info's deleted details: an expiry, a delete or an ack above it); asked again for
        up to SETTLE_S, then taken as it is."""
        deadline = self._settle_deadline(SETTLE_S)
        while True:
            c = await self._js().consumer_info(state.stream, state.durable_name)
            if int(c.num_pending or 0) == await self._stored_above(state, c) or time.monotonic() > deadline:
                return c
            await asyncio.sleep(0.01)

    async def _stored_above(self, state: _Queue, c: Any) -> int:
        """The stream's stored messages above the durable's delivered stream sequence (in consumer
        info `c`): the sequences from there to the last one, less the interior gaps (the stream info's
        deleted details: an expiry, a delete or an ack above it); what a settled ``num_pending`` is."""
        s = await self._stream_info_state(state.stream)
        if not int(s.get("messages", 0)):
            return 0
        delivered = int(c.delivered.stream_seq or 0) if c.delivered else 0
        floor = max(delivered, int(s.get("first_seq", 0)) - 1, state.start_seq - 1)
        gaps = sum(1 for seq in s.get("deleted") or () if seq > floor)
        return max(int(s.get("last_seq", 0)) - floor - gaps, 0)

    async def _stream_info_state(self, stream: str) -> dict[str, Any]:
        """The stream's state with its deleted details (the interior sequences no longer stored),
        which nats-py's stream_info does not ask for: $JS.API.STREAM.INFO with deleted_details."""
        answer = await self._api(f"$JS.API.STREAM.INFO.{stream}", {"deleted_details": True}, "stream info")
        state: dict[str, Any] = answer.get("state", {})
        return state

    async def _durable_state(self, state: _Queue, messages: int) -> dict[str, int]:
        """DELIVERY-27..29: the durable consumer's info (consumer.go info()); before the durable
        exists, the counters of a fresh one (everything stored pending)."""
        if not state.durable:
            return {"num_pending": messages, "num_ack_pending": 0, "num_redelivered": 0,
                    "delivered_consumer_seq": 0, "delivered_stream_seq": 0,
                    "ack_floor_consumer_seq": 0, "ack_floor_stream_seq": 0}
        c = await self._settled_info(state)
        delivered, floor = c.delivered, c.ack_floor
        return {"num_pending": int(c.num_pending or 0), "num_ack_pending": int(c.num_ack_pending or 0),
                "num_redelivered": int(c.num_redelivered or 0),
                "delivered_consumer_seq": int(delivered.consumer_seq or 0) if delivered else 0,
                "delivered_stream_seq": int(delivered.stream_seq or 0) if delivered else 0,
                "ack_floor_consumer_seq": int(floor.consumer_seq or 0) if floor else 0,
                "ack_floor_stream_seq": int(floor.stream_seq or 0) if floor else 0}

    @operation(name="stream_state")
    async def _stream_state(self, queue: str) -> dict[str, int]:
        """RESTART-5, DELIVERY-30 (capability ``stream_state``): the stream's state and its durable
        consumer's counters."""
        state = self._queue(queue)
        s = (await self._js().stream_info(state.stream)).state
        c = await self._durable_state(state, int(s.messages))
        return {"msgs": int(s.messages), "first_seq": int(s.first_seq), "last_seq": int(s.last_seq),
                "num_deleted": int(s.num_deleted or 0), "num_pending": c["num_pending"],
                "num_ack_pending": c["num_ack_pending"], "num_redelivered": c["num_redelivered"],
                "delivered_seq": c["delivered_stream_seq"], "ack_floor_seq": c["ack_floor_stream_seq"]}

    @operation(name="consumer_state")
    async def _consumer_state(self, queue: str) -> dict[str, int]:
        """DELIVERY-27..29 (capability ``consumer_state``): the queue's durable consumer."""
        state = self._queue(queue)
        messages = 0
        if not state.durable:
            messages = int((await self._js().stream_info(state.stream)).state.messages)
        return await self._durable_state(state, messages)

    @operation
    async def counters(self, queue: str) -> dict[str, int]:
        info = await self._js().stream_info(self._queue(queue).stream)
        return {"message_count": int(info.state.messages), "added": int(info.state.last_seq)}

    @operation
    async def message_info(self, queue: str, msg_id: str) -> dict[str, object]:
        """DELIVERY-23: a held message's redelivered flag (num_delivered > 1); no dead letters."""
        self._queue(queue)
        # the latest delivery: after an ack wait (REDELIVERY-27) the consumer that had it still
        # keeps its earlier delivery, which the server no longer counts as held
        held = [c.held[msg_id] for c in self.consumers.values() if c.queue == queue and msg_id in c.held]
        if held:
            latest = max(msg.metadata.num_delivered for msg in held)
            return {"redelivered": latest > 1, "dead_letter_reason": None}
        raise Unsupported(f"the delivery of {msg_id!r}, which the adapter does not hold")

    @operation
    async def delivery_count(self, queue: str, msg_id: str) -> int | None:
        state = self._queue(queue)
        seq = state.seqs.get(msg_id)
        if seq is None:
            return None
        try:
            await self._js().get_msg(state.stream, seq)
        except js_errors.NotFoundError:
            return None
        return state.delivered.get(msg_id, 0)

