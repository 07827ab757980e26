"""The `activemq` adapter: ActiveMQ Classic 5.17 over STOMP 1.2 (stomp.py), claiming `activemq-classic`.

By default it uses its own broker (:mod:`.activemq_server`, started once per process and reused);
``url=`` or ``$MQCONFORM_ACTIVEMQ_URL`` (``stomp://[user:password@]host:port``) uses a running one.
The client socket has TCP_NODELAY (without it and the connector's ``transport.tcpNoDelay`` a
sequential loop runs at ~22 round trips/s).

Mapping (physical names ``/queue/mqc.<namespace>.<token>.<queue>``, unique per open):

- a queue is an ActiveMQ queue; one queue per address (several would need virtual topics).
- a consumer is a STOMP subscription, ``ack:client-individual``, ``activemq.prefetchSize`` = its
  ``max_unacked`` (the ``consumer_prefetch`` mode: the broker pushes up to that many unacknowledged
  messages). ``receive`` takes the next MESSAGE frame pushed to it; it waits for one (bounded by
  ``dispatch_timeout``) only while the adapter's books say the queue holds a message the
  subscription may still get (sent - acked - nacked - held by consumers, prefetch not full),
  otherwise it answers None at once. What it returns always comes from the broker.
- sends, ACK, NACK and UNSUBSCRIBE carry a ``receipt`` and wait for it; an ERROR frame for the
  receipt is ``fail``, no receipt in time ``info``. Messages are sent ``persistent:true``.
- ``nack`` is STOMP NACK, a poison ack: the message goes to the dead-letter queue at once
  (profile nack_action=dead_letter; the adapter's own broker uses ``DLQ.<queue>`` per queue).
- ``close_consumer`` is UNSUBSCRIBE: the broker returns the subscription's unacknowledged and
  prefetched messages to the queue, dispatched ahead of the others (profile return_placement head).
- ``close`` unsubscribes, drains what its queues (and their DLQs) still hold with ``ack:auto``, and
  disconnects; empty queues are garbage-collected by the broker (``gcInactiveDestinations``).

Not offered: ring queues (no count bound in Classic), counters and delivery counts (STOMP shows
only ``redelivered``), browse, pull consumers (STOMP prefetch 0 is not supported), transactions,
selectors, paging, dead-letter addresses, scheduling (see the report: the broker's scheduler fires
on its own clock, not the suite's) and time.
"""

from __future__ import annotations

import collections
import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import attrs
import stomp
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from stomp.exception import ConnectFailedException, NotConnectedException, StompException

from .activemq_server import ActiveMQProcess, shared_broker
from .contract import AdapterError, Result

URL_ENV = "MQCONFORM_ACTIVEMQ_URL"
ID_HEADER = "mqc-id"

CAPABILITIES = frozenset({"queues", "nack", "consumer_prefetch"})


class _Unsupported(Exception):
    pass


class _Refused(Exception):
    pass


def _redact(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}:{parts.port or 61613}"


class _Listener(stomp.ConnectionListener):  # type: ignore[misc]
    """Collects MESSAGE frames per subscription and RECEIPT/ERROR frames per receipt id."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.frames: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self.receipts: dict[str, str | None] = {}
        self.connected = True

    def on_message(self, frame: Any) -> None:
        with self.cond:
            self.frames[frame.headers.get("subscription", "")].append(frame)
            self.cond.notify_all()

    def on_receipt(self, frame: Any) -> None:
        with self.cond:
            self.receipts[frame.headers.get("receipt-id", "")] = None
            self.cond.notify_all()

    def on_error(self, frame: Any) -> None:
        with self.cond:
            rid = frame.headers.get("receipt-id")
            if rid:
                self.receipts[rid] = (frame.headers.get("message") or frame.body or "ERROR").strip()
            self.cond.notify_all()

    def on_disconnected(self) -> None:
        with self.cond:
            self.connected = False
            self.cond.notify_all()

    def wait_for(self, done: Callable[[], bool], timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: done() or not self.connected, timeout) and done()


@attrs.define
class _Queue:
    name: str
    destination: str
    #: messages the broker should hold for the queue (sent - acked - nacked)
    count: int = 0
    nacked: int = 0


@attrs.define
class _Consumer:
    name: str
    queue: str
    sub_id: str
    prefetch: int
    #: message id -> ack id, received and not yet acknowledged, in delivery order
    held: dict[str, str] = attrs.Factory(dict)


class ActiveMQAdapter:
    """ActiveMQ Classic over STOMP behind the adapter contract."""

    name = "activemq"
    profile = "activemq-classic"

    def __init__(self, url: str | None = None, timeout: float = 5.0, dispatch_timeout: float = 2.0,
                 activemq_home: str | None = None) -> None:
        self.url = url or os.environ.get(URL_ENV) or None
        self.timeout = float(timeout)
        self.dispatch_timeout = float(dispatch_timeout)
        self.home = activemq_home
        self.capabilities = CAPABILITIES
        self.broker: ActiveMQProcess | None = None
        self.conn: Any = None
        self.listener = _Listener()
        self.prefix = ""
        self._subs = 0
        self._reset()

    def _reset(self) -> None:
        self.addresses: dict[str, list[str]] = {}
        self.queues: dict[str, _Queue] = {}
        self.consumers: dict[str, _Consumer] = {}

    # ------------------------------------------------------------------ plumbing
    def _do(self, op: str, fn: Callable[[], Any]) -> Result:
        try:
            return Result.ok(fn())
        except _Unsupported as exc:
            return Result.fail(f"unsupported: {exc}")
        except _Refused as exc:
            return Result.fail(str(exc))
        except TimeoutError as exc:
            return Result.info(f"activemq: {op}: {exc}")
        except (NotConnectedException, StompException, OSError) as exc:
            return Result.info(f"activemq: {op}: connection lost ({str(exc) or type(exc).__name__})")

    def _receipt(self) -> str:
        return uuid.uuid4().hex

    def _await(self, receipt: str, what: str) -> None:
        """Wait for RECEIPT `receipt`: an ERROR for it is a refusal, nothing in time is unknown."""
        got = self.listener.wait_for(lambda: receipt in self.listener.receipts, self.timeout)
        if not got:
            if not self.listener.connected:
                raise NotConnectedException(f"{what}: connection lost")
            raise TimeoutError(f"no receipt for {what} within {self.timeout:g} s")
        error = self.listener.receipts.pop(receipt)
        if error is not None:
            raise _Refused(f"activemq: {what}: {error}")

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect (starting the adapter's own broker first when no URL is given); AdapterError
        when the broker cannot be used."""
        if self.conn is not None:
            self.close()
        user, password = "admin", "admin"
        if self.url:
            parts = urlsplit(self.url if "://" in self.url else f"stomp://{self.url}")
            host, port = parts.hostname or "127.0.0.1", parts.port or 61613
            if parts.username:
                user, password = parts.username, parts.password or ""
            where = _redact(self.url)
        else:
            if self.broker is None or not self.broker.running():
                self.broker = shared_broker(self.home)
            host, port, where = "127.0.0.1", self.broker.port, self.broker.url
        self.listener = _Listener()
        conn = stomp.Connection12([(host, port)], reconnect_attempts_max=1, timeout=self.timeout,
                                  heartbeats=(0, 0))
        conn.set_listener("mqc", self.listener)
        try:
            conn.connect(user, password, wait=True)
        except (ConnectFailedException, StompException, OSError) as exc:
            with contextlib.suppress(Exception):  # never connected: nothing to close
                conn.disconnect()
            raise AdapterError(f"activemq: cannot use {where}: {str(exc) or type(exc).__name__}") from None
        sock = getattr(conn.transport, "socket", None)
        if isinstance(sock, socket.socket):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = conn
        token = "".join(c if c.isalnum() or c in "-_" else "_" for c in namespace)
        self.prefix = f"mqc.{token}.{uuid.uuid4().hex[:8]}"
        self._reset()

    def _drain(self, destination: str, count: int) -> None:
        """Consume `count` messages from `destination` with ack:auto (bounded wait)."""
        if count <= 0:
            return
        self._subs += 1
        sub = f"drain-{self._subs}"
        self.conn.subscribe(destination, id=sub, ack="auto")
        frames = self.listener.frames[sub]
        self.listener.wait_for(lambda: len(frames) >= count, 2.0)
        receipt = self._receipt()
        self.conn.unsubscribe(id=sub, headers={"receipt": receipt})
        self._await(receipt, "unsubscribe")

    def close(self) -> None:
        """Unsubscribe, drain what the namespace's queues (and their DLQs) still hold, disconnect."""
        conn, self.conn = self.conn, None
        if conn is not None:
            self.conn = conn
            try:
                for consumer in list(self.consumers.values()):
                    receipt = self._receipt()
                    conn.unsubscribe(id=consumer.sub_id, headers={"receipt": receipt})
                    self._await(receipt, "unsubscribe")
                for queue in self.queues.values():
                    self._drain(queue.destination, queue.count)
                    if not self.url:
                        self._drain(queue.destination.replace("/queue/", "/queue/DLQ.", 1), queue.nacked)
            except Exception:  # broker gone: nothing can be removed any more
                pass
            finally:
                self.conn = None
                with contextlib.suppress(Exception):  # already disconnected
                    conn.disconnect()
        self._reset()

    def shutdown(self) -> None:
        """close(); the shared broker stays up for the process (stopped at interpreter exit)."""
        self.close()

    # ------------------------------------------------------------------ lookups
    def _queue(self, name: str) -> _Queue:
        try:
            return self.queues[name]
        except KeyError:
            raise _Refused(f"unknown queue {name!r}") from None

    def _consumer(self, name: str) -> _Consumer:
        try:
            return self.consumers[name]
        except KeyError:
            raise _Refused(f"unknown consumer {name!r}") from None

    def _connected(self) -> Any:
        if self.conn is None or not self.listener.connected:
            raise NotConnectedException("not connected")
        return self.conn

    # ------------------------------------------------------------------ declarations
    def declare_address(self, config: AddressConfig) -> Result:
        def run() -> None:
            if config.full_policy != "PAGE" or config.max_size_bytes >= 0 or config.max_size_messages >= 0:
                raise _Unsupported("address limits and full policies")
            if config.name in self.addresses:
                raise _Refused(f"address {config.name!r} already exists")
            self.addresses[config.name] = []
        return self._do("declare_address", run)

    def declare_queue(self, config: QueueConfig) -> Result:
        def run() -> None:
            if config.name in self.queues:
                raise _Refused(f"queue {config.name!r} already exists")
            if config.ring_size >= 0:
                raise _Unsupported("ring queues (ActiveMQ Classic has no queue count bound)")
            if config.ring_size < -1:
                raise _Refused("ring_size must be -1 or >= 0")
            if config.filter is not None:
                raise _Unsupported("queue filters")
            if config.redelivery_delay_ms:
                raise _Unsupported("redelivery delay")
            if config.dead_letter is not None:
                raise _Unsupported("dead-letter addresses")
            address = config.address_name
            if self.addresses.get(address):
                raise _Unsupported("a second queue on one address")
            self._connected()
            self.addresses.setdefault(address, []).append(config.name)
            self.queues[config.name] = _Queue(config.name, f"/queue/{self.prefix}.{config.name}")
        return self._do("declare_queue", run)

    def open_consumer(self, config: ConsumerConfig) -> Result:
        def run() -> None:
            if config.name in self.consumers:
                raise _Refused(f"consumer {config.name!r} already exists")
            queue = self._queue(config.queue)
            if config.browser:
                raise _Unsupported("browsers")
            if config.selector is not None:
                raise _Unsupported("selectors")
            if config.window_bytes != -1 or config.max_unacked is None or config.max_unacked < 1:
                raise _Unsupported("consumers other than prefetch (window_bytes -1, max_unacked >= 1)")
            self._subs += 1
            sub = f"s{self._subs}"
            receipt = self._receipt()
            self._connected().subscribe(queue.destination, id=sub, ack="client-individual",
                                        headers={"activemq.prefetchSize": str(config.max_unacked),
                                                 "receipt": receipt})
            self._await(receipt, "subscribe")
            self.consumers[config.name] = _Consumer(config.name, queue.name, sub, config.max_unacked)
        return self._do("open_consumer", run)

    # ------------------------------------------------------------------ messages
    def send(self, to: str, message: Message) -> Result:
        def run() -> str:
            if to not in self.addresses:
                raise _Refused(f"unknown address {to!r}")
            if message.scheduled_at_ms is not None and message.scheduled_at_ms > 0:
                raise _Unsupported("scheduled delivery")
            names = self.addresses[to]
            if not names:
                return "accepted"
            queue = self.queues[names[0]]
            receipt = self._receipt()
            self._connected().send(queue.destination, "x" * max(message.size, 0),
                                   headers={"persistent": "true", ID_HEADER: message.id, "receipt": receipt})
            self._await(receipt, "send")
            queue.count += 1
            return "accepted"
        return self._do("send", run)

    def _buffered(self, consumer: _Consumer) -> collections.deque[Any]:
        return self.listener.frames[consumer.sub_id]

    def receive(self, consumer: str) -> Result:
        def run() -> str | None:
            state = self._consumer(consumer)
            queue = self._queue(state.queue)
            frames = self._buffered(state)
            if not frames:
                if len(state.held) >= state.prefetch:
                    return None  # prefetch full: the broker dispatches nothing more
                taken = sum(len(c.held) + len(self._buffered(c)) for c in self.consumers.values()
                            if c.queue == queue.name)
                if queue.count - taken <= 0:
                    return None
                self._connected()
                self.listener.wait_for(lambda: bool(frames), self.dispatch_timeout)
                if not frames:
                    if not self.listener.connected:
                        raise NotConnectedException("connection lost while waiting for a message")
                    return None
            with self.listener.cond:
                frame = frames.popleft()
            msg_id = frame.headers.get(ID_HEADER)
            if msg_id is None:
                raise _Refused(f"activemq: receive: a message without an {ID_HEADER} header")
            state.held[msg_id] = frame.headers.get("ack") or frame.headers["message-id"]
            return str(msg_id)
        return self._do("receive", run)

    def _settle(self, consumer: str, msg_id: str, verb: str) -> str:
        state = self._consumer(consumer)
        ack_id = state.held.get(msg_id)
        if ack_id is None:
            return "failed"
        receipt = self._receipt()
        getattr(self._connected(), verb)(ack_id, receipt=receipt)
        self._await(receipt, verb)
        del state.held[msg_id]
        queue = self._queue(state.queue)
        queue.count -= 1
        if verb == "nack":
            queue.nacked += 1
        return "ok"

    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> Result:
        def run() -> str:
            if tx:
                raise _Unsupported("transactions")
            return self._settle(consumer, msg_id, "ack")
        return self._do("ack", run)

    def nack(self, consumer: str, msg_id: str) -> Result:
        return self._do("nack", lambda: self._settle(consumer, msg_id, "nack"))

    def close_consumer(self, consumer: str) -> Result:
        def run() -> None:
            state = self._consumer(consumer)
            receipt = self._receipt()
            self._connected().unsubscribe(id=state.sub_id, headers={"receipt": receipt})
            del self.consumers[consumer]
            self._await(receipt, "unsubscribe")
            with self.listener.cond:
                self.listener.frames.pop(state.sub_id, None)
        return self._do("close_consumer", run)

    def commit(self, consumer: str) -> Result:
        return Result.fail("unsupported: transactions")

    def rollback(self, consumer: str) -> Result:
        return Result.fail("unsupported: transactions")

    # ------------------------------------------------------------------ observation
    def counters(self, queue: str) -> Result:
        return Result.fail("unsupported: counters (not exposed over STOMP)")

    def delivery_count(self, queue: str, msg_id: str) -> Result:
        return Result.fail("unsupported: delivery counts (STOMP shows only the redelivered flag)")

    def browse(self, queue: str) -> Result:
        return Result.fail("unsupported: browsing")

    def pending_ids(self, queue: str) -> Result:
        return Result.fail("unsupported: pending order")

    def set_ring_size(self, queue: str, size: int) -> Result:
        return Result.fail("unsupported: set_ring_size")

    def paging(self, address: str) -> Result:
        return Result.fail("unsupported: paging")

    def advance(self, ms: int) -> Result:
        return Result.fail("unsupported: time")

    def call(self, op: str, **kwargs: Any) -> Result:
        return Result.fail("unsupported")


def raw_roundtrip_loop(n: int, url: str | None = None, **_: Any) -> float:
    """Round trips per second of stomp.py alone (STOMP 1.2, client-individual, persistent, TCP_NODELAY):
    SEND, wait for the MESSAGE, ACK; n times or until a 60 s deadline."""
    url = url or os.environ.get(URL_ENV) or None
    if url:
        parts = urlsplit(url if "://" in url else f"stomp://{url}")
        host, port = parts.hostname or "127.0.0.1", parts.port or 61613
    else:
        host, port = "127.0.0.1", shared_broker().port
    listener = _Listener()
    conn = stomp.Connection12([(host, port)], heartbeats=(0, 0))
    conn.set_listener("raw", listener)
    conn.connect("admin", "admin", wait=True)
    conn.transport.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    dest = f"/queue/mqc-raw-{uuid.uuid4().hex[:8]}"
    conn.subscribe(dest, id="raw", ack="client-individual")
    frames = listener.frames["raw"]
    deadline = time.monotonic() + 60
    done = 0
    t0 = time.perf_counter()
    for i in range(n):
        if time.monotonic() > deadline:
            break
        conn.send(dest, "x" * 100, headers={"persistent": "true", ID_HEADER: f"m{i}"})
        listener.wait_for(lambda: bool(frames), 5.0)
        frame = frames.popleft()
        conn.ack(frame.headers["ack"])
        done += 1
    rate = done / (time.perf_counter() - t0)
    conn.disconnect()
    return rate
