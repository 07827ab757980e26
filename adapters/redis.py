"""The `redis` adapter: Redis streams and consumer groups through redis-py, claiming `redis-streams`.

``url=`` or ``$MQCONFORM_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``).

Mapping (every key starts with ``<namespace>:<random token>:``, so concurrent runs never share one):

- a queue is the stream key ``<prefix>:<queue>`` with one consumer group; its address is the name
  senders use (one queue per address: several groups on one stream would each get every message,
  and an acknowledgement deletes the entry for all of them). ``ring_size >= 0`` adds
  ``MAXLEN = ring_size`` (exact trimming) to every XADD.
- a consumer is a group consumer (``<name>#<incarnation>``); ``receive`` is ``XREADGROUP COUNT 1 >``
  (no BLOCK unless ``block_ms`` is given: an XADD is visible at once) and gives the ``id`` field.
- ``ack`` is XACK and, when XACK removed the entry from the PEL, XDEL of the entry (one Lua script):
  as in the model, an acknowledged message leaves the queue, so MAXLEN counts only stored
  (pending + delivering) messages. ``close_consumer`` leaves the consumer's entries in the PEL
  (the profile's close_returns=False): nothing comes back by itself.
- counters, all from the server: ``message_count`` = XLEN; ``pending_count`` = entries after the
  group's last-delivered-id (XRANGE); ``delivering_count`` = XLEN - pending, i.e. PEL entries whose
  entry still exists (MAXLEN leaves PEL records of trimmed entries behind; they hold no message);
  ``added`` = XINFO STREAM entries-added; ``scheduled_count`` and ``paged_count`` are 0 (Redis has
  neither).
- ``delivery_count`` is the XPENDING delivery counter (0 for an entry not yet delivered, None for
  one no longer in the stream); ``browse`` and ``pending_ids`` list the ids after the group's
  last-delivered-id, which is the order ``>`` reads deliver them in.

``shared_namespace=true`` (for ``mqconform soak``, where each thread has its own adapter): the prefix
is the namespace itself, with no random token, so every instance opened on one namespace addresses
the same keys; declaring a queue whose group exists joins it, and ``close()`` deletes only the keys
this instance created.

Not offered: nack (Redis has none), redelivery delay, dead letters, ``max_unacked`` (no in-flight
cap), scheduling, transactions, selectors, paging. ``advance(ms)`` sleeps (nothing in Redis
streams depends on time).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import attrs
import redis
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig

from .contract import AdapterError, Result

URL_ENV = "MQCONFORM_REDIS_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/0"
GROUP = "mqc"

CAPABILITIES = frozenset({
    "queues", "ring", "priorities", "browse", "pending_order", "delivery_count", "consumer_pull",
    "advance_time", "counter:message_count", "counter:pending_count", "counter:delivering_count",
    "counter:scheduled_count", "counter:paged_count", "counter:added",
})

#: XACK, then XDEL only if XACK removed the entry from the PEL (an entry nobody holds stays)
ACK_SCRIPT = """
local n = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if n == 1 then redis.call('XDEL', KEYS[1], ARGV[2]) end
return n
"""


class _Unsupported(Exception):
    pass


class _Refused(Exception):
    pass


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


class RedisAdapter:
    """Redis streams behind the adapter contract."""

    name = "redis"
    profile = "redis-streams"

    def __init__(self, url: str | None = None, block_ms: int | None = None, timeout: float = 2.0,
                 shared_namespace: bool = False) -> None:
        self.url = url or os.environ.get(URL_ENV) or DEFAULT_URL
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
        self.addresses: dict[str, list[str]] = {}
        self.queues: dict[str, _Queue] = {}
        self.consumers: dict[str, _Consumer] = {}
        self.keys: list[str] = []

    # ------------------------------------------------------------------ plumbing
    def _r(self) -> Any:
        """The client; typed Any because redis-py's reply types are unions of every RESP shape."""
        if self.client is None:
            raise redis.exceptions.ConnectionError("not connected (open() first)")
        return self.client

    def _do(self, op: str, fn: Callable[[], Any]) -> Result:
        try:
            return Result.ok(fn())
        except _Unsupported as exc:
            return Result.fail(f"unsupported: {exc}")
        except _Refused as exc:
            return Result.fail(str(exc))
        except redis.exceptions.ResponseError as exc:
            return Result.fail(f"redis: {op}: {exc}")
        except redis.exceptions.TimeoutError:
            return Result.info(f"redis: {op}: no answer within {self.timeout:g} s")
        except (redis.exceptions.ConnectionError, OSError) as exc:
            return Result.info(f"redis: {op}: connection lost ({_one_line(exc)})")
        except redis.exceptions.RedisError as exc:
            return Result.info(f"redis: {op}: {_one_line(exc)}")

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect and start a fresh key prefix for `namespace`; AdapterError if Redis is unusable."""
        if self.client is not None:
            self.close()
        client = redis.Redis.from_url(self.url, socket_timeout=self.timeout,
                                      socket_connect_timeout=self.timeout, decode_responses=True)
        try:
            info = client.info("server")
        except redis.exceptions.RedisError as exc:
            client.close()
            raise AdapterError(f"redis: cannot use {_redact(self.url)}: {_one_line(exc)}") from None
        self.server_version = str(info.get("redis_version", ""))
        if _version_tuple(self.server_version) < (7, 0):
            client.close()
            raise AdapterError(f"redis: server {self.server_version} is too old (streams need 7.0+)")
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

    def shutdown(self) -> None:
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
            if config.filter is not None:
                raise _Unsupported("queue filters")
            if config.redelivery_delay_ms:
                raise _Unsupported("redelivery delay")
            if config.dead_letter is not None:
                raise _Unsupported("dead-letter addresses")
            if config.ring_size < -1:
                raise _Refused("ring_size must be -1 or >= 0")
            address = config.address_name
            if self.addresses.get(address):
                raise _Unsupported("a second queue on one address")
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
        return self._do("declare_queue", run)

    def open_consumer(self, config: ConsumerConfig) -> Result:
        def run() -> None:
            if config.name in self.consumers:
                raise _Refused(f"consumer {config.name!r} already exists")
            queue = self._queue(config.queue)
            if config.browser:
                raise _Unsupported("browser consumers")
            if config.selector is not None:
                raise _Unsupported("selectors")
            if config.window_bytes != 0 and config.window_messages != 0:
                raise _Unsupported("push windows (only pull consumers: window_bytes 0)")
            if config.max_unacked is not None:
                raise _Unsupported("max_unacked (Redis has no in-flight cap)")
            self._incarnation += 1
            physical = f"{config.name}#{self._incarnation}"
            self._r().xgroup_createconsumer(queue.key, GROUP, physical)
            self.consumers[config.name] = _Consumer(config.name, queue.name, physical)
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
            fields = {"id": message.id, "body": "x" * max(message.size, 0)}
            if queue.ring_size >= 0:
                entry = self._r().xadd(queue.key, fields, maxlen=queue.ring_size, approximate=False)
            else:
                entry = self._r().xadd(queue.key, fields)
            queue.entries[message.id] = str(entry)
            return "accepted"
        return self._do("send", run)

    def receive(self, consumer: str) -> Result:
        def run() -> str | None:
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
                raise _Refused(f"redis: receive: entry {entry_id} has no id field")
            state.held[msg_id] = entry_id
            return str(msg_id)
        return self._do("receive", run)

    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> Result:
        def run() -> str:
            if tx:
                raise _Unsupported("transactions")
            state = self._consumer(consumer)
            entry = state.held.pop(msg_id, None)
            if entry is None:
                return "failed"
            removed = self._ack(keys=[self._queue(state.queue).key], args=[GROUP, entry])
            return "ok" if int(removed) == 1 else "failed"
        return self._do("ack", run)

    def nack(self, consumer: str, msg_id: str) -> Result:
        return Result.fail("unsupported: nack (Redis streams have none)")

    def close_consumer(self, consumer: str) -> Result:
        def run() -> None:
            self._consumer(consumer)
            del self.consumers[consumer]  # its entries stay in the PEL, as in Redis
        return self._do("close_consumer", run)

    def commit(self, consumer: str) -> Result:
        return Result.fail("unsupported: transactions")

    def rollback(self, consumer: str) -> Result:
        return Result.fail("unsupported: transactions")

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

    def counters(self, queue: str) -> Result:
        def run() -> dict[str, int]:
            length, after, added = self._undelivered(self._queue(queue).key)
            pending = len(after)
            return {"message_count": length, "pending_count": pending,
                    "delivering_count": length - pending, "scheduled_count": 0, "paged_count": 0,
                    "added": added}
        return self._do("counters", run)

    def browse(self, queue: str) -> Result:
        def run() -> list[str]:
            _length, after, _added = self._undelivered(self._queue(queue).key)
            return [fields.get("id", "") for _entry, fields in after]
        return self._do("browse", run)

    def pending_ids(self, queue: str) -> Result:
        return self.browse(queue)

    def delivery_count(self, queue: str, msg_id: str) -> Result:
        def run() -> int | None:
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
        return self._do("delivery_count", run)

    def set_ring_size(self, queue: str, size: int) -> Result:
        return Result.fail("unsupported: set_ring_size")

    def paging(self, address: str) -> Result:
        return Result.fail("unsupported: paging")

    def advance(self, ms: int) -> Result:
        if ms < 0:
            return Result.fail("time only moves forward")
        time.sleep(ms / 1000)
        return Result.ok(None)

    def call(self, op: str, **kwargs: Any) -> Result:
        return Result.fail("unsupported")


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


def _redact(url: str) -> str:
    """The URL without a password (URLs end up in reports)."""
    if "@" not in url:
        return url
    scheme, _, rest = url.partition("://")
    return f"{scheme}://***@{rest.rpartition('@')[2]}"


def raw_roundtrip_loop(n: int, url: str | None = None, **_: Any) -> float:
    """Round trips per second of redis-py alone: XADD, XREADGROUP COUNT 1 >, XACK; n times or until
    a 60 s deadline."""
    client: Any = redis.Redis.from_url(url or os.environ.get(URL_ENV) or DEFAULT_URL, decode_responses=True)
    key = f"mqc-raw:{uuid.uuid4().hex[:8]}"
    try:
        client.xgroup_create(key, "g", id="0", mkstream=True)
        deadline = time.monotonic() + 60
        done = 0
        t0 = time.perf_counter()
        for i in range(n):
            if time.monotonic() > deadline:
                break
            client.xadd(key, {"id": f"m{i}", "body": "x" * 100})
            reply = client.xreadgroup("g", "c", {key: ">"}, count=1)
            for entry_id, _fields in reply[0][1]:
                client.xack(key, "g", entry_id)
            done += 1
        return done / (time.perf_counter() - t0)
    finally:
        client.delete(key)
        client.close()
