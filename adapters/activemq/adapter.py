"""The `activemq` adapter: ActiveMQ Classic 5.17 over STOMP 1.2 (stomp.py), claiming `activemq-classic`.

By default it uses its own broker (:mod:`.server`, started once per process and reused);
``url=`` or ``$MQCONFORM_ACTIVEMQ_URL`` (``stomp://[user:password@]host:port``) uses a running one.
The client socket has TCP_NODELAY (without it and the connector's ``transport.tcpNoDelay`` a
sequential loop runs at ~22 round trips/s).

How each operation maps to STOMP, ``shared_namespace``, and what is not offered and why:
docs/adapters/activemq.md.
"""

from __future__ import annotations

import collections
import contextlib
import os
import socket
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import stomp
from stomp.exception import ConnectFailedException, NotConnectedException, StompException

from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import (
    BrokerAdapter,
    Refused,
    Unsupported,
    component,
    operation,
    physical_prefix,
    roundtrip_rate,
)
from .._stomp import StompListener as _Listener
from .._urls import parse_endpoint, redact
from ..contract import AdapterError, Result
from .server import ActiveMQProcess, shared_broker

URL_ENV = "MQCONFORM_ACTIVEMQ_URL"
ID_HEADER = "mqc-id"

CAPABILITIES = frozenset({"queues", "nack", "consumer_prefetch", "independent_consumers",
                          # DELIVERY-25: SUBSCRIBE header activemq.priority (ConsumerInfo.priority)
                          "consumer_priority",
                          # DELIVERY-26: SUBSCRIBE header activemq.exclusive on every subscription of a
                          # queue declared single_active_consumer (Queue#addSubscription)
                          "single_active_consumer"})


@attrs.define
class _Queue:
    name: str
    destination: str
    #: messages the broker should hold for the queue (sent - acked - nacked)
    count: int = 0
    nacked: int = 0
    #: DELIVERY-26: every subscription is exclusive (SUBSCRIBE header activemq.exclusive)
    exclusive: bool = False
    #: the logical name of the subscription the books say is the exclusive owner (see _owner)
    owner: str | None = None


@attrs.define
class _Consumer:
    name: str
    queue: str
    sub_id: str
    prefetch: int
    #: message id -> ack id, received and not yet acknowledged, in delivery order
    held: dict[str, str] = attrs.Factory(dict)
    priority: int = 0


class ActiveMQAdapter(BrokerAdapter):
    """ActiveMQ Classic over STOMP behind the adapter contract."""

    name = "activemq"
    profile = "activemq-classic"
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "counters": "counters (not exposed over STOMP)",
        "delivery_count": "delivery counts (STOMP shows only the redelivered flag)",
    }

    def __init__(self, url: str | None = None, timeout: float = 5.0, dispatch_timeout: float = 2.0,
                 activemq_home: str | None = None, shared_namespace: bool = False,
                 shared_wait: float = 0.05, persistent: bool = False) -> None:
        self.url = url or os.environ.get(URL_ENV) or None
        #: a private broker with a KahaDB store that the adapter may restart (RESTART-1/2)
        self.persistent = bool(persistent) and self.url is None
        self.shared_namespace = bool(shared_namespace)
        self.shared_wait = float(shared_wait)
        self.timeout = float(timeout)
        self.dispatch_timeout = float(dispatch_timeout)
        self.home = activemq_home
        self.capabilities = CAPABILITIES | ({"restart"} if self.persistent else set())
        self.broker: ActiveMQProcess | None = None
        self.conn: Any = None
        self.listener = _Listener()
        self.prefix = ""
        self._subs = 0
        self._reset()

    # ------------------------------------------------------------------ plumbing
    def _classify(self, op: str, exc: Exception) -> Result | None:
        """No receipt in time or a lost connection: the outcome is unknown (info)."""
        if isinstance(exc, TimeoutError):
            return Result.info(f"activemq: {op}: {exc}")
        if isinstance(exc, NotConnectedException | StompException | OSError):
            return Result.info(f"activemq: {op}: connection lost ({one_line(exc)})")
        return None

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
            raise Refused(f"activemq: {what}: {error}")

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect (starting the adapter's own broker first when no URL is given); AdapterError
        when the broker cannot be used."""
        if self.conn is not None:
            self.close()
        user, password = "admin", "admin"
        if self.url:
            endpoint = parse_endpoint(self.url, "stomp", 61613)
            host, port = endpoint.host, endpoint.port
            if endpoint.auth:
                user, password = endpoint.auth
            where = redact(self.url)
        else:
            if self.broker is None or not self.broker.running():
                self.broker = (ActiveMQProcess(self.home, persistent=True).start() if self.persistent
                               else shared_broker(self.home))
            host, port, where = "127.0.0.1", self.broker.port, self.broker.url
        self._connect(host, port, user, password, where)
        self.prefix = "mqc." + physical_prefix(namespace, self.shared_namespace, sep=".")
        self._reset()

    def _connect(self, host: str, port: int, user: str, password: str, where: str) -> None:
        """A new STOMP connection with a fresh listener; AdapterError when it cannot be made."""
        self.listener = _Listener()
        conn = stomp.Connection12([(host, port)], reconnect_attempts_max=1, timeout=self.timeout,
                                  heartbeats=(0, 0))
        conn.set_listener("mqc", self.listener)
        try:
            conn.connect(user, password, wait=True)
        except (ConnectFailedException, StompException, OSError) as exc:
            with contextlib.suppress(Exception):  # never connected: nothing to close
                conn.disconnect()
            raise AdapterError(f"activemq: cannot use {where}: {one_line(exc)}") from None
        sock = getattr(conn.transport, "socket", None)
        if isinstance(sock, socket.socket):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = conn

    @component("restart", requires="restart")
    def _restart(self, **kwargs: Any) -> Result:
        """``restart`` (capability ``restart``: ``persistent=True`` without a URL; RESTART-1/2): stop
        the private broker with SIGTERM (``mode="graceful"``) or SIGKILL (``mode="kill"``), start it
        again on its KahaDB store and reconnect. The subscriptions end with the old connection, so the
        adapter forgets its consumers (the broker gives their unacknowledged messages back); the
        queues and their books stay."""
        mode = self._restart_mode(kwargs)
        if isinstance(mode, Result):
            return mode
        broker = self.broker
        if broker is None:
            return Result.fail("activemq: restart: the adapter is not open")
        broker.go_down(kill=mode == "kill")
        old, self.conn = self.conn, None
        if old is not None:
            with contextlib.suppress(Exception):  # the broker is gone: nothing to close cleanly
                old.disconnect()
        self.consumers = {}
        try:
            broker.start()
            self._connect("127.0.0.1", broker.port, "admin", "admin", broker.url)
        except AdapterError as exc:
            return Result.info(f"activemq: restart: {exc}")
        return Result.ok(None)

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
                for queue in [] if self.shared_namespace else self.queues.values():
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
        """close(); the shared broker stays up for the process (stopped at interpreter exit), a
        private persistent one stops."""
        self.close()
        if self.persistent and self.broker is not None:
            self.broker.stop()
            self.broker = None

    # ------------------------------------------------------------------ plumbing
    def _connected(self) -> Any:
        if self.conn is None or not self.listener.connected:
            raise NotConnectedException("not connected")
        return self.conn

    # ------------------------------------------------------------------ declarations
    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        self._check_new_queue(config)
        if config.ring_size >= 0:
            raise Unsupported("ring queues (ActiveMQ Classic has no queue count bound)")
        address = config.address_name
        self._connected()
        self.addresses.setdefault(address, []).append(config.name)
        self.queues[config.name] = _Queue(config.name, f"/queue/{self.prefix}.{config.name}",
                                          exclusive=config.single_active_consumer)

    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        queue: _Queue = self._check_new_consumer(config)
        if config.window_bytes != -1 or config.max_unacked is None or config.max_unacked < 1:
            raise Unsupported("consumers other than prefetch (window_bytes -1, max_unacked >= 1)")
        if not -128 <= config.priority <= 127:
            raise Unsupported("consumer priority outside -128..127 (ConsumerInfo priority is a byte)")
        self._subs += 1
        sub = f"s{self._subs}"
        receipt = self._receipt()
        headers = {"activemq.prefetchSize": str(config.max_unacked), "receipt": receipt}
        if config.priority:
            headers["activemq.priority"] = str(config.priority)  # DELIVERY-25
        if queue.exclusive:
            headers["activemq.exclusive"] = "true"  # DELIVERY-26
        self._connected().subscribe(queue.destination, id=sub, ack="client-individual",
                                    headers=headers)
        self._await(receipt, "subscribe")
        self.consumers[config.name] = _Consumer(config.name, queue.name, sub, config.max_unacked,
                                                priority=config.priority)
        if queue.exclusive:
            current = self.consumers.get(queue.owner) if queue.owner else None
            if current is None or config.priority == 127 or config.priority > current.priority:
                queue.owner = config.name
        self._await_dispatch(queue.name)

    # ------------------------------------------------------------------ messages
    @operation
    def send(self, to: str, message: Message) -> str:
        queue = self._single_route(to, message)
        if queue is None:
            return "accepted"
        receipt = self._receipt()
        self._connected().send(queue.destination, "x" * max(message.size, 0),
                               headers={"persistent": "true", ID_HEADER: message.id, "receipt": receipt})
        self._await(receipt, "send")
        queue.count += 1
        self._await_dispatch(queue.name)
        return "accepted"

    def _buffered(self, consumer: _Consumer) -> collections.deque[Any]:
        return self.listener.frames[consumer.sub_id]

    @operation
    def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        frames = self._buffered(state)
        if not frames:
            if len(state.held) >= state.prefetch:
                return None  # prefetch full: the broker dispatches nothing more
            # shared: other instances send too, so the books cannot say; wait briefly instead
            if (self._unclaimed(queue) <= 0 or not self._may_get(state)) and not self.shared_namespace:
                return None
            self._connected()
            wait = self.shared_wait if self.shared_namespace else self.dispatch_timeout
            self.listener.wait_for(lambda: bool(frames), wait)
            if not frames:
                if not self.listener.connected:
                    raise NotConnectedException("connection lost while waiting for a message")
                return None
        with self.listener.cond:
            frame = frames.popleft()
        msg_id = frame.headers.get(ID_HEADER)
        if msg_id is None:
            raise Refused(f"activemq: receive: a message without an {ID_HEADER} header")
        state.held[msg_id] = frame.headers.get("ack") or frame.headers["message-id"]
        return str(msg_id)

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
        self._await_dispatch(queue.name)
        return "ok"

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        self._no_tx(tx)
        return self._settle(consumer, msg_id, "ack")

    @operation
    def nack(self, consumer: str, msg_id: str) -> str:
        return self._settle(consumer, msg_id, "nack")

    @operation
    def close_consumer(self, consumer: str) -> None:
        state = self._consumer(consumer)
        receipt = self._receipt()
        self._connected().unsubscribe(id=state.sub_id, headers={"receipt": receipt})
        del self.consumers[consumer]
        self._await(receipt, "unsubscribe")
        with self.listener.cond:
            self.listener.frames.pop(state.sub_id, None)
        queue = self._queue(state.queue)
        if queue.owner == consumer:
            queue.owner = self._next_owner(queue)
        self._await_dispatch(state.queue)

    def _next_owner(self, queue: _Queue) -> str | None:
        """DELIVERY-26: the books' next exclusive owner when the owner goes, as Queue#removeSubscription
        picks it: the first subscription of the highest priority in the consumer list (subscription
        order: the waiting ones are never served, so never rotated)."""
        best: _Consumer | None = None
        for c in self.consumers.values():
            if c.queue == queue.name and (best is None or c.priority > best.priority):
                best = c
        return best.name if best is not None else None

    def _may_get(self, consumer: _Consumer) -> bool:
        """Whether the broker may dispatch to the subscription at all: on an exclusive queue only
        the owner the books name (DELIVERY-26); the adapter only uses it to bound its waits."""
        queue = self._queue(consumer.queue)
        return not queue.exclusive or queue.owner == consumer.name

    def _unclaimed(self, queue: _Queue) -> int:
        """What the books say the queue holds for no subscription: sent - acked - nacked - what the
        subscriptions hold or have buffered."""
        return queue.count - sum(len(c.held) + len(self._buffered(c)) for c in self.consumers.values()
                                 if c.queue == queue.name)

    def _await_dispatch(self, queue_name: str) -> None:
        """The broker dispatches on its own thread, after the receipt of the SEND, SUBSCRIBE, ACK,
        NACK or UNSUBSCRIBE that made a message available or a subscription's prefetch free. Wait
        (bounded by ``dispatch_timeout``) until every message the books say the queue holds for no one
        has reached a subscription with prefetch room, so the next operation (another subscription, a
        close) does not race that dispatch and the broker's choice of subscription is the one it
        makes with the state the operation left."""
        if self.shared_namespace:
            return
        queue = self._queue(queue_name)
        consumers = [c for c in self.consumers.values() if c.queue == queue_name]
        if not consumers:
            return

        def undispatched() -> bool:
            room = sum(max(0, c.prefetch - len(c.held) - len(self._buffered(c))) for c in consumers
                       if self._may_get(c))
            return min(self._unclaimed(queue), room) > 0

        if undispatched():
            self.listener.wait_for(lambda: not undispatched(), self.dispatch_timeout)


def raw_roundtrip_loop(n: int, url: str | None = None, **_: Any) -> float:
    """Round trips per second of stomp.py alone (STOMP 1.2, client-individual, persistent, TCP_NODELAY):
    SEND, wait for the MESSAGE, ACK; n times or until a 60 s deadline."""
    url = url or os.environ.get(URL_ENV) or None
    if url:
        endpoint = parse_endpoint(url, "stomp", 61613)
        host, port = endpoint.host, endpoint.port
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

    def step(i: int) -> None:
        conn.send(dest, "x" * 100, headers={"persistent": "true", ID_HEADER: f"m{i}"})
        listener.wait_for(lambda: bool(frames), 5.0)
        frame = frames.popleft()
        conn.ack(frame.headers["ack"])

    rate = roundtrip_rate(n, step)
    conn.disconnect()
    return rate
