"""The `rabbitmq` adapter: RabbitMQ 3.10 through pika, classic or quorum queues.

Claims profile `rabbitmq-classic`, or `rabbitmq-quorum` with ``queue_type="quorum"``. The broker is
``url=``, else ``$MQCONFORM_RABBITMQ_URL``, else ``amqp://guest:guest@127.0.0.1:5672/%2F`` (the
password never appears in an error or a report). Physical names start with ``<namespace>-<token>``
and close() deletes them; ``shared_namespace=true`` (``mqconform soak``) shares them between instances.

How each operation maps to AMQP, and what is not offered and why: docs/adapters/rabbitmq.md.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pika
import pika.exceptions as pex
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection

from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import NotObservable, Unsupported, lowest_ttl, operation, roundtrip_rate
from .._urls import redact
from ..contract import AdapterError, Result
from .records import (
    Expectation,
    _close_channel,
    _Consumer,
    _held,
    _limit,
    _message_id,
    _Queue,
)
from .settling import RabbitMQSettling

__all__ = ["CAPABILITIES", "RabbitMQAdapter", "connect", "raw_roundtrip_loop", "redact"]

URL_ENV = "MQCONFORM_RABBITMQ_URL"
DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
QUEUE_TYPES = ("classic", "quorum")
OVERFLOWS = ("drop-head", "reject-publish", "reject-publish-dlx")

_COMMON = frozenset({
    "queues", "ring", "priorities", "nack", "dead_letter", "consumer_pull", "consumer_prefetch",
    "independent_consumers",
    "advance_time", "counter:message_count", "counter:pending_count", "counter:delivering_count",
    # x-max-length-bytes, basic.nack requeue=false and multiple, x-overflow per queue
    "max_length_bytes", "nack_reject", "nack_multiple",
    # DELIVERY-22: an ack/nack of a delivery the consumer does not hold reaches the broker
    "invalid_ack",
    # RING-29: queue.purge (ready messages only)
    "purge",
    # DELIVERY-23: the redelivered flag and x-first-death-reason of a held message
    "redelivered_flag", "dead_letter_reason",
    # EXPIRY-1..5: x-message-ttl and the expiration property (3.10: classic and quorum)
    "message_ttl", "per_message_ttl",
    # DELIVERY-25: basic.consume x-priority; DELIVERY-26: x-single-active-consumer (both queue types)
    "consumer_priority", "single_active_consumer",
} | {f"overflow:{name}" for name in OVERFLOWS})
#: what the adapter can do and observe exactly, per queue type
CAPABILITIES = {"classic": _COMMON, "quorum": _COMMON | {"delivery_count"}}
PROFILES = {"classic": "rabbitmq-classic", "quorum": "rabbitmq-quorum"}

#: pika errors that mean the outcome is unknown (connection gone, no answer)
#: DELIVERY-22: the delivery tag sent for a message this channel never delivered (tags count up from 1
#: per channel, so no channel of a run reaches it; the broker answers 406 unknown delivery tag)
UNKNOWN_TAG = 2**63
#: AMQP reply code of the channel error an unknown delivery tag raises
PRECONDITION_FAILED = 406

_LOST = (pex.AMQPConnectionError, pex.ConnectionClosed, pex.StreamLostError, pex.ConnectionWrongStateError,
         pex.ChannelWrongStateError, OSError)


def connect(url: str, timeout: float) -> BlockingConnection:
    """A blocking pika connection to `url` with bounded connect and handshake times."""
    params = pika.URLParameters(url)
    params.connection_attempts = 1
    params.socket_timeout = timeout
    params.stack_timeout = 3 * timeout
    params.blocked_connection_timeout = 3 * timeout
    params.heartbeat = 30
    return BlockingConnection(params)


class RabbitMQAdapter(RabbitMQSettling):
    """RabbitMQ behind the adapter contract (one blocking connection, one channel per consumer)."""

    name = "rabbitmq"
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "address_limits": "address limits and full policies (RabbitMQ bounds queues)",
        "browser": "browsers (RabbitMQ has no non-destructive read)",
        "browse": "browsing (RabbitMQ has no non-destructive read)",
        "pending_ids": "pending order (not observable without consuming)",
        "set_ring_size": "set_ring_size (queue arguments are immutable)",
    }

    def __init__(self, url: str | None = None, queue_type: str = "classic", overflow: str = "drop-head",
                 timeout: float = 2.0, settle_timeout: float = 1.0, shared_namespace: bool = False) -> None:
        if queue_type not in QUEUE_TYPES:
            raise TypeError(f"queue_type must be one of {QUEUE_TYPES}, not {queue_type!r}")
        if overflow not in OVERFLOWS:
            raise TypeError(f"overflow must be one of {OVERFLOWS}, not {overflow!r}")
        self.url = url or os.environ.get(URL_ENV) or DEFAULT_URL
        self.queue_type = queue_type
        self.overflow = overflow
        self.timeout = float(timeout)
        self.settle_timeout = float(settle_timeout)
        self.shared_namespace = bool(shared_namespace)
        self.profile = PROFILES[queue_type]
        self.capabilities = CAPABILITIES[queue_type]
        self.server_version = ""
        self.settle_timeouts = 0
        self._conn: BlockingConnection | None = None
        self._ctl: BlockingChannel | None = None
        self.prefix = ""
        self._reset()

    def _reset(self) -> None:
        super()._reset()
        #: the exchanges and queues this instance created (and close() deletes)
        self.exchanges: list[str] = []
        self.physical_queues: list[str] = []
        self._expires_at = {}

    # ------------------------------------------------------------------ plumbing
    def _classify(self, op: str, exc: Exception) -> Result | None:
        """A channel the broker closed is fail; no answer in time or a lost connection is info."""
        if isinstance(exc, pex.ChannelClosedByBroker):
            self._ctl = None  # the broker closed the control channel; reopen it on next use
            return Result.fail(f"rabbitmq: {op}: {exc.reply_code} {exc.reply_text}")
        if isinstance(exc, TimeoutError):
            return Result.info(f"rabbitmq: {op}: no answer within {self.timeout:g} s")
        if isinstance(exc, _LOST):
            return Result.info(f"rabbitmq: {op}: connection lost ({one_line(exc)})")
        return None

    def _connection(self) -> BlockingConnection:
        if self._conn is None or not self._conn.is_open:
            raise pex.ConnectionWrongStateError("not connected (open() first)")
        return self._conn

    def _control(self) -> BlockingChannel:
        """The control channel (confirm mode): declarations, publishes, passive declares."""
        if self._ctl is None or not self._ctl.is_open:
            self._ctl = self._connection().channel()
            self._ctl.confirm_delivery()
        return self._ctl

    def _pump(self) -> None:
        """Dispatch whatever the connection has already received (deliveries to the buffers)."""
        self._connection().process_data_events(time_limit=0)

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect (the connection is kept across open/close) and start fresh physical names for
        `namespace`. AdapterError when the broker cannot be used."""
        if self.prefix:
            self.close()
        if self._conn is None or not self._conn.is_open:
            try:
                self._conn = connect(self.url, self.timeout)
            except (pex.AMQPError, OSError) as exc:
                self._conn = None
                raise AdapterError(f"rabbitmq: cannot use {redact(self.url)}: {one_line(exc)}") from None
            props = self._conn._impl.server_properties or {}
            version = props.get("version", b"")
            self.server_version = version.decode() if isinstance(version, bytes) else str(version)
            self._ctl = None
        self.prefix = namespace if self.shared_namespace else f"{namespace}-{uuid.uuid4().hex[:8]}"
        self._reset()

    def close(self) -> None:
        """Close the consumer channels, delete every queue and exchange of this namespace. The
        connection stays open for the next open(); shutdown() closes it."""
        try:
            for consumer in list(self.consumers.values()):
                if consumer.channel.is_open:
                    consumer.channel.close()
            if self.physical_queues or self.exchanges:
                ctl = self._control()
                for queue in self.physical_queues:
                    ctl.queue_delete(queue)
                for exchange in self.exchanges:
                    ctl.exchange_delete(exchange)
        except (pex.AMQPError, OSError):
            self._drop_connection()  # broker gone: nothing can be removed any more
        self.prefix = ""
        self._reset()

    def shutdown(self) -> None:
        """close(), then close the connection."""
        self.close()
        self._drop_connection()

    def _drop_connection(self) -> None:
        conn, self._conn, self._ctl = self._conn, None, None
        if conn is not None and conn.is_open:
            with contextlib.suppress(pex.AMQPError, OSError):  # already gone: nothing to close
                conn.close()

    # ------------------------------------------------------------------ names
    def _exchange(self, address: str) -> str:
        return f"{self.prefix}.x.{address}"

    # ------------------------------------------------------------------ declarations
    def _exists(self, kind: str, name: str) -> bool:
        """Whether another instance sharing the namespace already declared the exchange or queue
        (a passive declare; the broker closes the channel on 404). Always False when not shared."""
        if not self.shared_namespace:
            return False
        ctl = self._control()
        try:
            if kind == "queue":
                ctl.queue_declare(name, passive=True)
            else:
                ctl.exchange_declare(name, passive=True)
        except pex.ChannelClosedByBroker as exc:
            self._ctl = None
            if exc.reply_code == 404:
                return False
            raise
        return True

    def _create_address(self, name: str) -> None:
        """A fanout exchange (joined, not owned, when another instance declared it)."""
        exchange = self._exchange(name)
        joined = self._exists("exchange", exchange)
        self._control().exchange_declare(exchange, exchange_type="fanout", durable=False)
        if not joined:
            self.exchanges.append(exchange)
        self.addresses[name] = []

    def _arguments(self, config: QueueConfig) -> dict[str, Any]:
        args: dict[str, Any] = {"x-queue-type": self.queue_type}
        if config.ring_size >= 0:
            args["x-max-length"] = config.ring_size
        if config.max_length_bytes >= 0:
            args["x-max-length-bytes"] = config.max_length_bytes
        if config.ring_size >= 0 or config.max_length_bytes >= 0 or config.overflow is not None:
            args["x-overflow"] = config.overflow or self.overflow
        if config.dead_letter is not None:
            args["x-dead-letter-exchange"] = self._exchange(config.dead_letter)
        if config.message_ttl_ms is not None:
            args["x-message-ttl"] = config.message_ttl_ms  # EXPIRY-1
        if self.queue_type == "quorum" and _limit(config) >= 0:
            args["x-delivery-limit"] = _limit(config)
        if config.single_active_consumer:
            args["x-single-active-consumer"] = True  # DELIVERY-26
        return args

    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        self._check_new_queue(config, one_per_address=False)
        address = config.address_name
        if address not in self.addresses:
            self._create_address(address)
        physical = f"{self.prefix}.q.{config.name}"
        joined = self._exists("queue", physical)
        ctl = self._control()
        ctl.queue_declare(physical, durable=self.queue_type == "quorum",
                          arguments=self._arguments(config))
        if not joined:
            self.physical_queues.append(physical)
        ctl.queue_bind(physical, self._exchange(address))
        self.addresses[address].append(config.name)
        limit = _limit(config) if self.queue_type == "quorum" else -1
        self.queues[config.name] = _Queue(config.name, physical, address, config.ring_size, limit,
                                          config.dead_letter, config.overflow or self.overflow,
                                          config.max_length_bytes, config.single_active_consumer,
                                          config.message_ttl_ms)

    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        queue: _Queue = self._check_new_consumer(config)
        pull = config.window_bytes == 0 or config.window_messages == 0
        if pull and config.max_unacked is not None:
            raise Unsupported("max_unacked with pull consumers (basic.get has no cap)")
        if not pull and (config.window_bytes != -1 or config.max_unacked is None
                         or config.window_messages is not None):
            raise Unsupported("byte/message windows (only basic.get or basic.qos prefetch)")
        if pull and queue.single_active:
            raise Unsupported("basic.get on a single active consumer queue (quorum: 405)")
        if not pull and config.max_unacked is not None and config.max_unacked < 1:
            raise Unsupported("max_unacked below 1 (prefetch 0 means unlimited)")
        channel = self._connection().channel()
        arguments = {"x-priority": config.priority} if config.priority else None  # DELIVERY-25
        consumer = _Consumer(config.name, queue.name, channel, None if pull else config.max_unacked,
                             arguments=arguments)
        self.consumers[config.name] = consumer
        if not pull:
            before = self._before_checkout(queue)
            channel.basic_qos(prefetch_count=config.max_unacked or 0)
            channel.basic_consume(queue.physical, self._on_delivery(consumer), auto_ack=False,
                                  arguments=arguments)
            self._settle([queue.name])
            if before is not None:
                self._await_checkout_expiry(queue, before)

    def _on_delivery(self, consumer: _Consumer) -> Callable[..., None]:
        order = self._queue(consumer.queue).order

        def on_message(_ch: Any, method: Any, props: Any, _body: bytes) -> None:
            msg_id = _message_id(props)
            order.taken(msg_id)
            consumer.buffer.append((msg_id, _held(method, props)))
        return on_message

    # ------------------------------------------------------------------ messages
    @operation
    def send(self, to: str, message: Message) -> str:
        names = self._route(to, message)
        props = pika.BasicProperties(message_id=message.id, delivery_mode=2,
                                     priority=max(0, min(message.priority, 9)),
                                     # EXPIRY-2: the per-message TTL, ms as a string
                                     expiration=None if message.ttl_ms is None else str(message.ttl_ms))
        self._note_expiry(names, message)
        try:
            self._control().basic_publish(self._exchange(to), "", bytes(max(message.size, 0)), props)
            outcome = "accepted"
        except pex.NackError:
            outcome = "failed"
        for name in names if outcome == "accepted" else []:  # confirmed: enqueued by now
            self._note_ttl(lowest_ttl(self.queues[name].message_ttl_ms, message.ttl_ms))
            self.queues[name].order.add(message.id)
        self._settle(names)
        return outcome

    @operation
    def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        if state.prefetch is not None:
            self._pump()
            if not state.buffer:
                return None
            msg_id, held = state.buffer.popleft()
        else:
            queue = self._queue(state.queue)
            before = self._before_get(queue)
            method, props, _body = state.channel.basic_get(queue.physical, auto_ack=False)
            if method is None:
                return None
            msg_id, held = _message_id(props), _held(method, props)
            queue.order.taken(msg_id)
            if before is not None:
                self._await_expired_head(queue, *before)
        state.received[msg_id] = held
        return msg_id

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        self._no_tx(tx)
        state = self._consumer(consumer)
        held = state.received.pop(msg_id, None)
        if held is None:
            return self._not_held(state, msg_id, lambda ch, tag: ch.basic_ack(tag))
        before = self._before_checkout(self._queue(state.queue)) if state.prefetch is not None else None
        state.channel.basic_ack(held.tag)
        state.settled[msg_id] = held.tag
        self._settle([state.queue], via=state.channel)
        if before is not None:
            self._await_checkout_expiry(self._queue(state.queue), before)
        return "ok"

    @operation
    def nack(self, consumer: str, msg_id: str, requeue: bool = True, multiple: bool = False) -> str:
        """basic.nack(tag, multiple, requeue) (REDELIVERY-24/25): with multiple, every message this
        consumer received up to `msg_id` (delivery tags are per channel, in delivery order)."""
        state = self._consumer(consumer)
        held = state.received.get(msg_id)
        if held is None:
            return self._not_held(state, msg_id, lambda ch, tag: ch.basic_nack(
                tag, multiple=multiple, requeue=requeue))
        ids = list(state.received)
        settled = ids[:ids.index(msg_id) + 1] if multiple else [msg_id]
        returned = [state.received[i] for i in settled]
        expect: Expectation
        if requeue:
            expect = self._expect_after_return(state, returned)
        else:
            expect = self._expect_after_reject(state, returned)
        for i in settled:
            state.settled[i] = state.received.pop(i).tag
        if requeue:
            self._note_returns(state, returned)
        state.channel.basic_nack(held.tag, multiple=multiple, requeue=requeue)
        # the queue itself too: a reject frees prefetch room the broker fills from the queue
        self._settle([state.queue], expect, via=state.channel)
        return "ok"

    def _not_held(self, state: _Consumer, msg_id: str,
                  send: Callable[[BlockingChannel, int], None]) -> str:
        """DELIVERY-22: an ack or nack of a message the consumer does not hold goes to the broker with
        the tag this channel gave the message (a double ack) or an unused one (never received here,
        pushed but not yet received, held by another consumer). RabbitMQ answers with channel error
        406 "unknown delivery tag": the channel closes and the broker requeues everything it held
        (a quorum queue counts the return). The adapter waits for those returns, then opens a new
        channel for the consumer (re-subscribing a prefetch consumer), as a client goes on after a
        channel error, and answers "failed". "ok" if the broker took it (a model mismatch to report)."""
        queue = self._queue(state.queue)
        self._pump()  # deliveries already sent to this channel are part of what returns
        returned = list(state.received.values()) + [h for _, h in state.buffer]
        expect = self._expect_after_return(state, returned)
        try:
            send(state.channel, state.settled.get(msg_id, UNKNOWN_TAG))
            state.channel.basic_qos(prefetch_count=state.prefetch or 0)  # a round trip: the answer
            return "ok"
        except pex.ChannelClosedByBroker as exc:
            if exc.reply_code != PRECONDITION_FAILED:
                raise
        self._note_returns(state, returned)
        del self.consumers[state.name]
        state.received.clear()
        state.buffer.clear()
        state.settled.clear()
        self._settle([], expect)
        state.channel = self._connection().channel()
        self.consumers[state.name] = state
        if state.prefetch is not None:
            state.channel.basic_qos(prefetch_count=state.prefetch)
            state.channel.basic_consume(queue.physical, self._on_delivery(state), auto_ack=False,
                                        arguments=state.arguments)
            self._settle([queue.name])
        return "failed"

    @operation
    def close_consumer(self, consumer: str) -> None:
        state = self._consumer(consumer)
        returned = list(state.received.values()) + [h for _, h in state.buffer]
        expect = self._expect_after_return(state, returned)
        self._note_returns(state, returned)
        del self.consumers[consumer]
        if state.channel.is_open:
            _close_channel(state.channel)
        self._settle([], expect)

    @operation
    def purge(self, queue: str) -> int:
        """queue.purge (RING-29): removes the ready messages only; purge-ok carries their number."""
        state = self._queue(queue)
        self._pump()
        state.order.clear()
        return int(self._control().queue_purge(state.physical).method.message_count)

    # ------------------------------------------------------------------ observation
    @operation
    def counters(self, queue: str) -> dict[str, int]:
        state = self._queue(queue)
        self._pump()
        ready = self._ready(state)
        delivering = sum(c.held() for c in self.consumers.values() if c.queue == queue)
        return {"message_count": ready + delivering, "pending_count": ready,
                "delivering_count": delivering}

    @operation
    def message_info(self, queue: str, msg_id: str) -> dict[str, object]:
        """DELIVERY-23: what the consumer holding `msg_id` saw of its delivery (only held messages)."""
        self._queue(queue)
        for consumer in self.consumers.values():
            held = consumer.received.get(msg_id) if consumer.queue == queue else None
            if held is not None:
                return {"redelivered": held.redelivered, "dead_letter_reason": held.reason}
        raise Unsupported(f"the delivery of {msg_id!r}, which the adapter does not hold")

    @operation
    def delivery_count(self, queue: str, msg_id: str) -> int:
        if self.queue_type != "quorum":
            raise Unsupported("delivery counts (classic queues only set the redelivered flag)")
        self._queue(queue)
        for consumer in self.consumers.values():
            if consumer.queue == queue and msg_id in consumer.received:
                return consumer.received[msg_id].returns + 1
        # x-delivery-count travels on deliveries only: a message the adapter does not hold (never
        # received, or already settled) has no count it could read now
        raise NotObservable(f"the delivery count of {msg_id!r}, which the adapter does not hold")


def raw_roundtrip_loop(n: int, url: str | None = None, queue_type: str = "classic", **_: Any) -> float:
    """Round trips per second of pika alone, the pattern the adapter uses for a pull consumer:
    publish with confirms, basic.get, basic.ack; n times or until a 60 s deadline."""
    conn = connect(url or os.environ.get(URL_ENV) or DEFAULT_URL, 2.0)
    queue = f"mqc-raw-{uuid.uuid4().hex[:8]}"
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare(queue, durable=queue_type == "quorum", arguments={"x-queue-type": queue_type})

        def step(i: int) -> None:
            ch.basic_publish("", queue, bytes(100), pika.BasicProperties(message_id=f"m{i}", delivery_mode=2))
            method, _props, _body = ch.basic_get(queue, auto_ack=False)
            if method is not None:
                ch.basic_ack(method.delivery_tag)

        return roundtrip_rate(n, step)
    finally:
        if conn.is_open:
            conn.channel().queue_delete(queue)
            conn.close()
