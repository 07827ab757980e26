"""The `redis` adapter: Redis streams and consumer groups through redis-py, claiming `redis-streams`.

``url=`` or ``$MQCONFORM_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``); ``server_bin=PATH``
starts a private server from that ``redis-server`` or ``valkey-server`` binary instead
(:mod:`.server`; `mqconform matrix` uses it), stopped by :meth:`RedisAdapter.shutdown`.
Capabilities follow the server version (:func:`capabilities_for`; Valkey too).

How each operation maps to streams and groups, ``shared_namespace``, and what is not offered and
why: docs/adapters/redis.md.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import redis

from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import BrokerAdapter, Refused, Unsupported, operation, roundtrip_rate
from .._urls import redact
from ..contract import AdapterError, Result
from .server import RedisServer

URL_ENV = "MQCONFORM_REDIS_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/0"
GROUP = "mqc"

CAPABILITIES = frozenset({
    "queues", "ring", "priorities", "browse", "pending_order", "delivery_count", "consumer_pull",
    "independent_consumers",
    "advance_time", "counter:message_count", "counter:pending_count", "counter:delivering_count",
    "counter:scheduled_count", "counter:paged_count", "counter:added",
    # DELIVERY-32/35: XDEL of one entry
    "delete",
})

#: XACK, then XDEL only if XACK removed the entry from the PEL (an entry nobody holds stays)
ACK_SCRIPT = """
local n = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if n == 1 then redis.call('XDEL', KEYS[1], ARGV[2]) end
return n
"""


@attrs.define
class _Queue:
    name: str
    key: str
    ring_size: int
    #: message id -> stream entry id
    entries: dict[str, str] = attrs.Factory(dict)


@attrs.define
class _Consumer:
    name: str
    queue: str
    physical: str
    #: message id -> entry id, in delivery order
    held: dict[str, str] = attrs.Factory(dict)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit())


#: the oldest Redis the adapter can use: consumer groups with XGROUP CREATECONSUMER (6.2)
MIN_SERVER = (6, 2)
#: capabilities by the first Redis release that has them (XINFO STREAM entries-added: 7.0)
MIN_VERSION: Mapping[str, tuple[int, int]] = {"counter:added": (7, 0)}


def capabilities_for(redis_version: str) -> frozenset[str]:
    """Capabilities against a server that answers INFO with `redis_version`."""
    found = _version_tuple(redis_version)
    return frozenset(c for c in CAPABILITIES if c not in MIN_VERSION or found >= MIN_VERSION[c])


class RedisAdapter(BrokerAdapter):
    """Redis streams behind the adapter contract."""

    name = "redis"
    profile = "redis-streams"
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "browser": "browser consumers", "nack": "nack (Redis streams have none)",
        "max_unacked": "max_unacked (Redis has no in-flight cap)",
    }
    #: shutdown() stops the private server (if the adapter started one)
    SHUTDOWN_ENDS: ClassVar[Mapping[str, str]] = {"server": "stop"}

    def __init__(self, url: str | None = None, block_ms: int | None = None, timeout: float = 2.0,
                 shared_namespace: bool = False, server_bin: str | None = None) -> None:
        self.server_bin = server_bin
        self.server: RedisServer | None = None
        self.url = url or (None if server_bin else os.environ.get(URL_ENV)) or DEFAULT_URL
        self.shared_namespace = bool(shared_namespace)
        self.block_ms = block_ms
        self.timeout = float(timeout)
        self.capabilities = CAPABILITIES
        self.server_version = ""
        self.client: redis.Redis | None = None
        self.prefix = ""
        self._incarnation = 0
        self._reset()

    def _reset(self) -> None:
        super()._reset()
        self.keys: list[str] = []

    # ------------------------------------------------------------------ plumbing
    def _r(self) -> Any:
        """The client; typed Any because redis-py's reply types are unions of every RESP shape."""
        if self.client is None:
            raise redis.exceptions.ConnectionError("not connected (open() first)")
        return self.client

    def _classify(self, op: str, exc: Exception) -> Result | None:
        """A command error is fail; a timeout, a lost connection or another client error is info."""
        if isinstance(exc, redis.exceptions.ResponseError):
            return Result.fail(f"redis: {op}: {exc}")
        if isinstance(exc, redis.exceptions.TimeoutError):
            return Result.info(f"redis: {op}: no answer within {self.timeout:g} s")
        if isinstance(exc, redis.exceptions.ConnectionError | OSError):
            return Result.info(f"redis: {op}: connection lost ({one_line(exc)})")
        if isinstance(exc, redis.exceptions.RedisError):
            return Result.info(f"redis: {op}: {one_line(exc)}")
        return None

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect and start a fresh key prefix for `namespace`; AdapterError if Redis is unusable."""
        if self.client is not None:
            self.close()
        if self.server_bin is not None and (self.server is None or not self.server.running()):
            self.server = RedisServer(self.server_bin).start()
            self.url = self.server.url
        client = redis.Redis.from_url(self.url, socket_timeout=self.timeout,
                                      socket_connect_timeout=self.timeout, decode_responses=True)
        try:
            info = client.info("server")
        except redis.exceptions.RedisError as exc:
            client.close()
            raise AdapterError(f"redis: cannot use {redact(self.url)}: {one_line(exc)}") from None
        compatible = str(info.get("redis_version", ""))
        valkey = info.get("valkey_version")
        self.server_version = f"valkey-{valkey}" if valkey else compatible
        if _version_tuple(compatible) < MIN_SERVER:
            client.close()
            raise AdapterError(f"redis: server {self.server_version} is too old (consumer groups with "
                               "XGROUP CREATECONSUMER need 6.2+)")
        self.capabilities = capabilities_for(compatible)
        self.client = client
        self._ack = client.register_script(ACK_SCRIPT)
        self.prefix = namespace if self.shared_namespace else f"{namespace}:{uuid.uuid4().hex[:8]}"
        self._reset()

    def close(self) -> None:
        """Delete every key this namespace created (streams with their groups), then disconnect."""
        client, self.client = self.client, None
        if client is not None:
            try:
                if self.keys:
                    client.delete(*self.keys)
            except redis.exceptions.RedisError:
                pass  # Redis gone: nothing can be removed any more
            finally:
                client.close()
        self._reset()

    # ------------------------------------------------------------------ declarations
    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        self._check_new_queue(config)
        address = config.address_name
        key = f"{self.prefix}:{config.name}"
        self.keys.append(key)
        try:
            self._r().xgroup_create(key, GROUP, id="0", mkstream=True)
        except redis.exceptions.ResponseError as exc:
            if not (self.shared_namespace and "BUSYGROUP" in str(exc)):
                raise
            self.keys.remove(key)  # another instance created it: join, leave its removal to it
        self.addresses.setdefault(address, []).append(config.name)
        self.queues[config.name] = _Queue(config.name, key, config.ring_size)

    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        queue: _Queue = self._check_new_consumer(config)
        self._require_pull(config)
        if config.max_unacked is not None:
            raise Unsupported(self._why("max_unacked"))
        self._incarnation += 1
        physical = f"{config.name}#{self._incarnation}"
        self._r().xgroup_createconsumer(queue.key, GROUP, physical)
        self.consumers[config.name] = _Consumer(config.name, queue.name, physical)

    # ------------------------------------------------------------------ messages
    @operation
    def send(self, to: str, message: Message) -> str:
        queue = self._single_route(to, message)
        if queue is None:
            return "accepted"
        fields = {"id": message.id, "body": "x" * max(message.size, 0)}
        if queue.ring_size >= 0:
            entry = self._r().xadd(queue.key, fields, maxlen=queue.ring_size, approximate=False)
        else:
            entry = self._r().xadd(queue.key, fields)
        queue.entries[message.id] = str(entry)
        return "accepted"

    @operation
    def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        reply = self._r().xreadgroup(GROUP, state.physical, {queue.key: ">"}, count=1,
                                     block=self.block_ms)
        if not reply:
            return None
        _key, entries = reply[0]
        if not entries:
            return None
        entry_id, fields = entries[0]
        msg_id = fields.get("id") if fields else None
        if msg_id is None:
            raise Refused(f"redis: receive: entry {entry_id} has no id field")
        state.held[msg_id] = entry_id
        return str(msg_id)

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        self._no_tx(tx)
        state = self._consumer(consumer)
        entry = state.held.pop(msg_id, None)
        if entry is None:
            return "failed"
        removed = self._ack(keys=[self._queue(state.queue).key], args=[GROUP, entry])
        return "ok" if int(removed) == 1 else "failed"

    @operation(name="delete")
    def delete_message(self, queue: str, msg_id: str) -> bool:
        """XDEL of the message's entry (DELIVERY-32/35): True when Redis deleted one. An entry in a
        PEL goes too; its PEL record stays until XACK (the holder's ack still answers 1, "ok").
        An id never sent has no entry: False without a command."""
        state = self._queue(queue)
        entry = state.entries.get(msg_id)
        if entry is None:
            return False
        return int(self._r().xdel(state.key, entry)) == 1

    # ------------------------------------------------------------------ observation
    def _undelivered(self, key: str) -> tuple[int, list[tuple[str, dict[str, str]]], int]:
        """(XLEN, the entries after the group's last-delivered-id, entries-added)."""
        r = self._r()
        pipe = r.pipeline(transaction=True)
        pipe.xlen(key)
        pipe.xinfo_groups(key)
        pipe.xinfo_stream(key)
        length, groups, stream = pipe.execute()
        last = next(g["last-delivered-id"] for g in groups if g["name"] == GROUP)
        after = r.xrange(key, min=f"({last}", max="+")
        return int(length), after, int(stream.get("entries-added", 0))

    @operation
    def counters(self, queue: str) -> dict[str, int]:
        length, after, added = self._undelivered(self._queue(queue).key)
        pending = len(after)
        found = {"message_count": length, "pending_count": pending,
                 "delivering_count": length - pending, "scheduled_count": 0, "paged_count": 0}
        if "counter:added" in self.capabilities:
            found["added"] = added
        return found

    @operation
    def browse(self, queue: str) -> list[str]:
        _length, after, _added = self._undelivered(self._queue(queue).key)
        return [fields.get("id", "") for _entry, fields in after]

    def pending_ids(self, queue: str) -> Result:
        return self.browse(queue)

    @operation
    def delivery_count(self, queue: str, msg_id: str) -> int | None:
        state = self._queue(queue)
        entry = state.entries.get(msg_id)
        if entry is None:
            return None
        pipe = self._r().pipeline(transaction=True)
        pipe.xrange(state.key, min=entry, max=entry)
        pipe.xpending_range(state.key, GROUP, min=entry, max=entry, count=1)
        exists, pel = pipe.execute()
        if not exists:
            return None
        return int(pel[0]["times_delivered"]) if pel else 0


def raw_roundtrip_loop(n: int, url: str | None = None, **_: Any) -> float:
    """Round trips per second of redis-py alone: XADD, XREADGROUP COUNT 1 >, XACK; n times or until
    a 60 s deadline."""
    client: Any = redis.Redis.from_url(url or os.environ.get(URL_ENV) or DEFAULT_URL, decode_responses=True)
    key = f"mqc-raw:{uuid.uuid4().hex[:8]}"
    try:
        client.xgroup_create(key, "g", id="0", mkstream=True)

        def step(i: int) -> None:
            client.xadd(key, {"id": f"m{i}", "body": "x" * 100})
            reply = client.xreadgroup("g", "c", {key: ">"}, count=1)
            for entry_id, _fields in reply[0][1]:
                client.xack(key, "g", entry_id)

        return roundtrip_rate(n, step)
    finally:
        client.delete(key)
        client.close()
