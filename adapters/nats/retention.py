"""The nats adapter's stream addresses (RETENTION-1..11, capability ``retention``).

An address declared with ``retention`` is one stream ``<prefix>_<address>`` on the subject
``<prefix>.<address>`` with that retention policy (``limits``, ``interest``, ``workqueue``); ``join``
makes a queue of it, a durable pull consumer named after the queue (explicit ack, DeliverPolicy New,
or All on a WorkQueue stream, which requires it; JetStream refuses a second unfiltered consumer of a
WorkQueue stream, err_code 10099, answered ``refused``); ``leave`` deletes that durable; a send to the
address is one publish on its subject; ``retention_state`` is the stream's ``state.messages``. The
queue's consumers, receives, acks and ``consumer_state`` are the adapter's usual ones on that durable.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from nats.js import errors as js_errors
from nats.js.api import AckPolicy, ConsumerInfo, DeliverPolicy, RetentionPolicy, StreamConfig
from nats.js.api import ConsumerConfig as JsConsumerConfig

from mqconform.reference_model.config import AddressConfig

from .._base import Refused
from ..contract import Result
from .queues import UNBOUNDED_ACK_PENDING, _Queue, _token

#: the address's retention -> the stream's retention policy
RETENTION = {"limits": RetentionPolicy.LIMITS, "interest": RetentionPolicy.INTEREST,
             "workqueue": RetentionPolicy.WORK_QUEUE}
#: DELIVERY-41..44: the one priority group of a durable with a priority policy (ADR-42: one per consumer)
PRIORITY_GROUP = "g"
#: DELIVERY-45: a pinned_client durable's priority_timeout (10 min: longer than any example)
PIN_TIMEOUT_NS = 600 * 10**9
#: RETENTION-9: JSConsumerWQMultipleUnfilteredErr, JSConsumerWQConsumerNotUniqueErr
WORKQUEUE_REFUSED = (10099, 10100)


class NatsRetention:
    """Stream addresses for :class:`~.nats.NatsAdapter` (which provides the attributes used here)."""

    #: address -> retention of the stream addresses declared since open (NatsAdapter._reset)
    stream_addresses: dict[str, str]
    if TYPE_CHECKING:  # provided by NatsAdapter and the adapters' base
        prefix: str
        streams: list[str]
        addresses: dict[str, list[str]]
        queues: dict[str, Any]
        consumers: dict[str, Any]
        storage: Any
        ack_wait_s: float
        request_timeout: float
        _nc: Any

        def _js(self) -> Any: ...
        def _do(self, op: str, fn: Any) -> Result: ...

    def _stream_names(self, address: str) -> tuple[str, str]:
        return f"{self.prefix}_{_token(address)}", f"{self.prefix}.{_token(address)}"

    def declare_stream_address(self, config: AddressConfig) -> Result:
        """A stream with the address's retention (no limits)."""
        async def run() -> None:
            if config.name in self.addresses:
                raise Refused(f"address {config.name!r} already exists")
            if config.max_size_bytes >= 0 or config.max_size_messages >= 0 or config.full_policy != "PAGE":
                raise Refused("a stream address has no paging limits")
            stream, subject = self._stream_names(config.name)
            await self._js().add_stream(StreamConfig(
                name=stream, subjects=[subject], retention=RETENTION[str(config.retention)],
                storage=self.storage, num_replicas=1))
            self.streams.append(stream)
            self.addresses[config.name] = []
            self.stream_addresses[config.name] = str(config.retention)
        return self._do("declare_address", run)

    def join(self, name: str, address: str, priority: str | None = None) -> Result:
        """RETENTION-9: a durable consumer of the stream as queue `name`: created or refused.
        DELIVERY-41..47: with `priority` (overflow, pinned_client) the durable has ``priority_groups``
        [PRIORITY_GROUP] and that ``priority_policy`` (ADR-42, nats-server 2.11+), created through the
        JetStream API itself (nats-py's ConsumerConfig has neither field)."""
        async def run() -> str:
            retention = self.stream_addresses.get(address)
            if retention is None:
                raise Refused(f"{address!r} is not a stream address")
            if name in self.queues:
                raise Refused(f"queue {name!r} already exists")
            stream, subject = self._stream_names(address)
            durable = _token(name)
            config = JsConsumerConfig(
                durable_name=durable, ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL if retention == "workqueue" else DeliverPolicy.NEW,
                ack_wait=self.ack_wait_s, max_ack_pending=UNBOUNDED_ACK_PENDING, max_deliver=-1)
            try:
                if priority is None:
                    info = await self._js().add_consumer(stream, config)
                else:
                    info = await self._create_priority_consumer(stream, config, priority)
            except js_errors.APIError as exc:
                if exc.err_code in WORKQUEUE_REFUSED:
                    return "refused"
                raise
            start = int(info.delivered.stream_seq or 0) + 1 if info.delivered else 0
            self.queues[name] = _Queue(name, stream, subject, address, durable=True, durable_name=durable,
                                       start_seq=start, priority_policy=priority)
            self.addresses[address].append(name)
            return "created"
        return self._do("join", run)

    async def _create_priority_consumer(self, stream: str, config: JsConsumerConfig, priority: str) -> Any:
        """``$JS.API.CONSUMER.CREATE.<stream>.<durable>`` with the config and its priority group and
        policy; the ConsumerInfo (an APIError for the server's error answer)."""
        extra: dict[str, Any] = {"priority_groups": [PRIORITY_GROUP], "priority_policy": priority}
        if priority == "pinned_client":  # DELIVERY-45: a pin never times out within an example
            extra["priority_timeout"] = PIN_TIMEOUT_NS
        body = {"stream_name": stream, "action": "create", "config": {**config.as_dict(), **extra}}
        reply = await self._nc.request(f"$JS.API.CONSUMER.CREATE.{stream}.{config.durable_name}",
                                       json.dumps(body).encode(), timeout=self.request_timeout)
        answer = json.loads(reply.data)
        if "error" in answer:
            js_errors.APIError.from_error(answer["error"])
        return ConsumerInfo.from_response(answer)

    def leave(self, queue: str) -> Result:
        """RETENTION-2/7: delete the queue's durable (its consumers forgotten: what they held is the
        durable's and goes with it)."""
        async def run() -> None:
            state = self.queues.get(queue)
            if state is None or state.address not in self.stream_addresses:
                raise Refused(f"{queue!r} is not a queue of a stream address")
            for name in [c for c, s in self.consumers.items() if s.queue == queue]:
                del self.consumers[name]
            await self._js().delete_consumer(state.stream, state.durable_name)
            del self.queues[queue]
            self.addresses[state.address].remove(queue)
        return self._do("leave", run)

    def retention_state(self, address: str) -> Result:
        """RETENTION-1..10: the stream's stored messages."""
        async def run() -> dict[str, int]:
            if address not in self.stream_addresses:
                raise Refused(f"{address!r} is not a stream address")
            stream, _ = self._stream_names(address)
            return {"messages": int((await self._js().stream_info(stream)).state.messages)}
        return self._do("retention_state", run)

    async def publish_to_stream(self, address: str, headers: dict[str, str], payload: bytes) -> int:
        """One publish on the stream address's subject; its stream sequence."""
        _, subject = self._stream_names(address)
        ack = await self._js().publish(subject, payload, headers=headers)
        return int(ack.seq)
