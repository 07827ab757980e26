"""The `mqtt` adapter: Mosquitto through paho-mqtt (MQTT 5), claiming the `mosquitto` profile.

By default it runs its own mosquitto processes (:mod:`.server`), one per queue limit,
because ``max_queued_messages`` is a broker-wide setting; ``url=`` or ``$MQCONFORM_MQTT_URL``
(``mqtt://[user:password@]host:port``) uses a running broker instead, whose limit the adapter
cannot know, so ring queues are then not offered. A queue is a persistent session, offline between
operations; a *sync* connects it, collects its stored messages up to a sentinel and disconnects.

How each operation maps to sessions and syncs, and what is not offered and why: docs/adapters/mqtt.md.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs
import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import BrokerAdapter, Refused, Unsupported, operation, physical_prefix, roundtrip_rate
from .._urls import parse_endpoint
from ..contract import AdapterError, Result
from .server import MosquittoPool

URL_ENV = "MQCONFORM_MQTT_URL"
SESSION_EXPIRY_S = 3600
SENTINEL = b"\x00mqc-sync "

CAPABILITIES = frozenset({"queues", "ring", "ring_zero", "consumer_pull", "independent_consumers"})
URL_CAPABILITIES = frozenset({"queues", "consumer_pull"})


def _payload(message: Message) -> bytes:
    head = message.id.encode() + b" "
    return head + b"x" * max(message.size - len(head), 0)


class _Link:
    """One synchronous paho client (driven with loop() calls; no background thread)."""

    def __init__(self, host: str, port: int, client_id: str, timeout: float,
                 auth: tuple[str, str] | None, manual_ack: bool = False) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                                  protocol=MQTTProtocolVersion.MQTTv5, manual_ack=manual_ack)
        if auth is not None:
            self.client.username_pw_set(*auth)
        self.connected = False
        self.refused: str | None = None
        self.inbox: list[paho.MQTTMessage] = []
        self.acked_subs: set[int] = set()
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = lambda _c, _u, msg: self.inbox.append(msg)
        self.client.on_subscribe = lambda _c, _u, mid, _rc, _p: self.acked_subs.add(mid)

    def _on_connect(self, _c: Any, _u: Any, _flags: Any, reason: Any, _props: Any) -> None:
        if reason.is_failure:
            self.refused = str(reason)
        else:
            self.connected = True

    def _on_disconnect(self, _c: Any, _u: Any, _flags: Any, _reason: Any, _props: Any) -> None:
        self.connected = False

    def wait(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(what)
            rc = self.client.loop(timeout=0.005)
            if rc != paho.MQTT_ERR_SUCCESS and not done():
                raise ConnectionError(f"{what}: {paho.error_string(rc)}")

    def connect(self, clean_start: bool, expiry: int, will: bytes | None = None,
                will_topic: str = "") -> None:
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = expiry
        if will is not None:
            self.client.will_set(will_topic, will, qos=0)
        self.client.connect(self.host, self.port, keepalive=60, clean_start=clean_start, properties=props)
        sock = self.client.socket()
        if isinstance(sock, socket.socket):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.wait(lambda: self.connected or self.refused is not None, "CONNACK")
        if self.refused is not None:
            raise Refused(f"mqtt: connection refused: {self.refused}")

    def subscribe(self, topic: str, qos: int) -> None:
        _rc, mid = self.client.subscribe(topic, qos=qos)
        self.wait(lambda: mid in self.acked_subs, "SUBACK")

    def publish(self, topic: str, payload: bytes) -> None:
        info = self.client.publish(topic, payload, qos=1)
        self.wait(info.is_published, "PUBACK")

    def disconnect(self, with_will: bool = False) -> None:
        reason = ReasonCode(PacketTypes.DISCONNECT, "Disconnect with will message") if with_will else None
        self.client.disconnect(reasoncode=reason)
        self.wait(lambda: not self.connected, "DISCONNECT")

    def close(self) -> None:
        try:
            if self.connected:
                self.client.disconnect()
                self.client.loop(timeout=0.01)
        except Exception:  # closing a dead connection: nothing to do
            pass
        finally:
            self.connected = False


@attrs.define
class _Queue:
    name: str
    address: str
    port: int
    client_id: str
    topic: str
    #: stored message ids in delivery order, as of the last sync
    stored: list[str] = attrs.Factory(list)
    #: something was sent since the last sync
    dirty: bool = False
    #: message id -> DUP flag of its last delivery to the session
    dup: dict[str, bool] = attrs.Factory(dict)
    #: ring_size 0: the session has no subscription, so it never holds a message
    subscribed: bool = True


@attrs.define
class _Consumer:
    name: str
    queue: str
    held: list[str] = attrs.Factory(list)


class MqttAdapter(BrokerAdapter):
    """Mosquitto behind the adapter contract (see the module docstring for the mapping)."""

    name = "mqtt"
    profile = "mosquitto"
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "nack": "nack (MQTT has none)",
        "counters": "counters (Mosquitto shows no per-session queue depth)",
        "delivery_count": "delivery counts (MQTT has only the DUP flag)",
        "advance": "time (nothing in Mosquitto's queues depends on it)",
        "max_unacked": "max_unacked (the session has no in-flight cap)",
    }

    def __init__(self, url: str | None = None, timeout: float = 3.0,
                 mosquitto_bin: str | None = None) -> None:
        self.url = url or os.environ.get(URL_ENV) or None
        self.timeout = float(timeout)
        self.capabilities = URL_CAPABILITIES if self.url else CAPABILITIES
        self.pool = MosquittoPool(mosquitto_bin)
        endpoint = parse_endpoint(self.url or "127.0.0.1", "mqtt", 1883)
        self.host, self.url_port, self.auth = endpoint.host, endpoint.port, endpoint.auth
        self.prefix = ""
        self.opened = False
        self._reset()

    def _reset(self) -> None:
        super()._reset()
        self.publishers: dict[int, _Link] = {}

    # ------------------------------------------------------------------ plumbing
    def _where(self, port: int) -> str:
        return f"mqtt://{self.host}:{port}"

    def _classify(self, op: str, exc: Exception) -> Result | None:
        """No answer in time or a lost connection: the outcome is unknown (info)."""
        if isinstance(exc, TimeoutError):
            return Result.info(f"mqtt: {op}: no {exc} within {self._bound():.3g} s")
        if isinstance(exc, OSError | ConnectionError):
            return Result.info(f"mqtt: {op}: connection lost ({one_line(exc)})")
        return None

    def _bound(self) -> float:
        """How long a link waits for an answer: `timeout`, longer while round trips are slow (a loaded
        machine; adapters/_latency.py)."""
        return self.latency.settle_s(self.timeout)

    def _port(self, ring: int) -> int:
        if self.url:
            return self.url_port
        return self.pool.port_for(max(ring, 0))

    def _publisher(self, port: int) -> _Link:
        link = self.publishers.get(port)
        if link is None or not link.connected:
            link = _Link(self.host, port, f"{self.prefix}-pub", self._bound(), self.auth)
            link.connect(clean_start=True, expiry=0)
            link.subscribe(f"{self.prefix}/$will", qos=0)
            self.publishers[port] = link
        link.timeout = self._bound()
        return link

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Start the unlimited broker (embedded mode) and connect a publisher; AdapterError when
        the broker cannot be used."""
        if self.opened:
            self.close()
        self.prefix = physical_prefix(namespace, shared=False)
        self._reset()
        port = self._port(-1)
        try:
            self._publisher(port)
        except (OSError, ConnectionError, TimeoutError, Refused) as exc:
            self._reset()
            raise AdapterError(f"mqtt: cannot use {self._where(port)}: {one_line(exc)}") from None
        self.opened = True

    def close(self) -> None:
        """Remove every session this namespace created (clean start, expiry 0), then disconnect."""
        for queue in self.queues.values():
            try:
                link = _Link(self.host, queue.port, queue.client_id, min(self.timeout, 1.0), self.auth)
                link.connect(clean_start=True, expiry=0)
                link.disconnect()
            except Exception:  # broker gone: nothing left to remove
                pass
        for link in self.publishers.values():
            link.close()
        self._reset()
        self.opened = False

    def shutdown(self) -> None:
        """close(), then stop the adapter's own mosquitto processes."""
        self.close()
        self.pool.stop()

    # ------------------------------------------------------------------ sessions
    def _offline(self, queue: _Queue, link: _Link) -> None:
        """Disconnect with will and wait for the will: the broker has processed the disconnect."""
        publisher = self._publisher(queue.port)
        link.disconnect(with_will=True)
        token = link.will_token  # type: ignore[attr-defined]
        publisher.wait(lambda: any(m.payload == token for m in publisher.inbox), "will message")
        publisher.inbox.clear()

    def _session(self, queue: _Queue, clean_start: bool) -> _Link:
        link = _Link(self.host, queue.port, queue.client_id, self._bound(), self.auth, manual_ack=True)
        link.will_token = uuid.uuid4().hex.encode()  # type: ignore[attr-defined]
        link.connect(clean_start=clean_start, expiry=SESSION_EXPIRY_S,
                     will=link.will_token, will_topic=f"{self.prefix}/$will")  # type: ignore[attr-defined]
        return link

    def _sync(self, queue: _Queue, acks: frozenset[str] = frozenset()) -> list[str]:
        """Connect the session, collect its stored messages up to a sentinel, PUBACK `acks` and
        the sentinel, go offline. Returns the stored ids that were not acknowledged, in order."""
        if not queue.subscribed:
            queue.dirty = False
            return []  # no subscription: Mosquitto routes nothing to this session (ring_size 0)
        link = self._session(queue, clean_start=False)
        try:
            marker = SENTINEL + uuid.uuid4().hex.encode()
            self._publisher(queue.port).publish(queue.topic, marker)
            link.wait(lambda: any(m.payload == marker for m in link.inbox), "sentinel")
            kept: list[str] = []
            for msg in link.inbox:
                if msg.payload == marker or msg.payload.startswith(SENTINEL):
                    link.client.ack(msg.mid, msg.qos)
                    continue
                msg_id = msg.payload.split(b" ", 1)[0].decode()
                queue.dup[msg_id] = bool(msg.dup)
                if msg_id in acks:
                    link.client.ack(msg.mid, msg.qos)
                elif msg_id not in kept:
                    kept.append(msg_id)
            self._offline(queue, link)
        except BaseException:
            link.close()
            raise
        queue.stored = kept
        queue.dirty = False
        return kept

    # ------------------------------------------------------------------ declarations
    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        self._check_new_queue(config, one_per_address=False)
        if config.ring_size > 0 and self.url:
            raise Unsupported("ring sizes on an external broker (its limit is its own config)")
        address = config.address_name
        port = self._port(config.ring_size)
        for other in self.addresses.get(address, []):
            if self.queues[other].port != port:
                raise Unsupported("queues with different ring sizes on one address")
        queue = _Queue(config.name, address, port, f"{self.prefix}-q-{config.name}",
                       f"{self.prefix}/{address}", subscribed=config.ring_size != 0)
        link = self._session(queue, clean_start=True)
        try:
            if queue.subscribed:
                link.subscribe(queue.topic, qos=1)
            self._offline(queue, link)
        except BaseException:
            link.close()
            raise
        self.addresses.setdefault(address, []).append(config.name)
        self.queues[config.name] = queue

    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        self._check_new_consumer(config)
        self._require_pull(config)
        if config.max_unacked is not None:
            raise Unsupported(self._why("max_unacked"))
        self.consumers[config.name] = _Consumer(config.name, config.queue)

    # ------------------------------------------------------------------ messages
    @operation
    def send(self, to: str, message: Message) -> str:
        names = self._route(to, message)
        if not names:
            return "accepted"
        queue = self.queues[names[0]]
        self._publisher(queue.port).publish(queue.topic, _payload(message))
        for name in names:
            self.queues[name].dirty = True
        return "accepted"  # a full session drops silently; the publisher still gets PUBACK

    def _held(self, queue: str) -> set[str]:
        return {m for c in self.consumers.values() if c.queue == queue for m in c.held}

    @operation
    def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        stored = self._sync(queue) if queue.dirty else queue.stored
        held = self._held(queue.name)
        for msg_id in stored:
            if msg_id not in held:
                state.held.append(msg_id)
                return msg_id
        return None

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        self._no_tx(tx)
        state = self._consumer(consumer)
        if msg_id not in state.held:
            return "failed"
        queue = self._queue(state.queue)
        before = set(queue.stored)
        kept = self._sync(queue, frozenset({msg_id}))
        state.held.remove(msg_id)
        return "ok" if msg_id in before and msg_id not in kept else "failed"


def raw_roundtrip_loop(n: int, url: str | None = None, **_: Any) -> float:
    """Round trips per second of paho alone: QoS 1 publish (wait for PUBACK), then receive it on
    the same client's own QoS 1 subscription (auto PUBACK); n times or until a 60 s deadline."""
    url = url or os.environ.get(URL_ENV) or None
    pool = MosquittoPool()
    endpoint = parse_endpoint(url or "127.0.0.1", "mqtt", 1883)
    host, port, auth = endpoint.host, endpoint.port, endpoint.auth
    if not url:
        port = pool.port_for(0)
    try:
        link = _Link(host, port, f"mqc-raw-{uuid.uuid4().hex[:8]}", 5.0, auth)
        link.connect(clean_start=True, expiry=0)
        topic = f"mqc-raw-{uuid.uuid4().hex[:8]}/q"
        link.subscribe(topic, qos=1)

        def step(i: int) -> None:
            link.publish(topic, f"m{i} ".encode() + bytes(96))
            link.wait(lambda: bool(link.inbox), "message")
            link.inbox.clear()

        rate = roundtrip_rate(n, step)
        link.close()
        return rate
    finally:
        pool.stop()
