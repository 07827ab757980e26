"""The `artemis` adapter: Apache ActiveMQ Artemis over AMQP 1.0 (python-qpid-proton) plus Jolokia.

By default it starts its own broker (:mod:`.server`: the bin distribution of ``version`` fetched through
Maven, an instance on free loopback ports, started once per process); ``url=`` (``amqp://host:port``)
with ``http_url=`` (Jolokia, ``http://host:8161/console/jolokia``), ``user=``/``password=`` (or
``$MQCONFORM_ARTEMIS_URL`` / ``$MQCONFORM_ARTEMIS_HTTP_URL``) use a running one. It claims the
`artemis` profile. How each operation maps to the broker (AMQP links and dispositions, address
settings, management reads, the settle after each operation), what is not observable and why, and the
per-release switches (:class:`Features`): docs/adapters/artemis.md.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs
from proton import ConnectionException, Delivery, LinkException, Timeout, symbol
from proton import Message as AmqpMessage
from proton.handlers import MessagingHandler
from proton.utils import BlockingConnection, ConnectionClosed, LinkDetached, SendException

from mqconform.reference_model.config import (
    DEFAULT_WINDOW_BYTES,
    AddressConfig,
    ConsumerConfig,
    Message,
    QueueConfig,
)
from mqconform.text import one_line

from .._base import (
    OTHER_PRODUCTS_AREAS,
    BrokerAdapter,
    NotObservable,
    Refused,
    Unsupported,
    operation,
    physical_prefix,
)
from .._urls import parse_endpoint, redact
from ..contract import AdapterError, Result
from .management import Jolokia, ManagementError
from .server import (
    DEFAULT_VERSION,
    EXPIRY_SCAN_MS,
    PASSWORD,
    USER,
    ArtemisProcess,
    at_least,
    home_of,
    shared_broker,
)
from .sizing import GRAIN, Sizing, over_threshold, threshold

URL_ENV = "MQCONFORM_ARTEMIS_URL"
#: the oldest release the adapter drives (the oldest one served; the positional addAddressSettings of
#: 58 arguments, ARTEMIS-2810 in 2.14.0, is the same from 2.18.0 to 2.31.2)
MIN_VERSION = "2.18.0"
#: live per-address settings as JSON (Jolokia addAddressSettings(match, json)), ARTEMIS-3932
JSON_SETTINGS_SINCE = "2.32.0"
#: QueueControl#deliverScheduledMessage(id), ARTEMIS-3872 (commit 63966dcc56, first in 2.25.0)
DELIVER_SCHEDULED_SINCE = "2.25.0"
HTTP_URL_ENV = "MQCONFORM_ARTEMIS_HTTP_URL"
ID_PROPERTY = "mqcid"
#: SCHED-*: the logical due time of a scheduled message (application property)
DUE_PROPERTY = "mqcdue"
#: SCHED-*: a scheduled message's broker delivery time is this far ahead of open() plus its logical
#: due time, so the broker's own timer never fires it during an example (the adapter does)
FAR_MS = 86_400_000

CAPABILITIES = frozenset({
    "queues", "ring", "set_ring_size", "priorities", "nack", "dead_letter", "delivery_count",
    # consumer modes: pull (window 0) and prefetch (window -1 with max_unacked). Not
    # independent_consumers: the model frees a prefetch consumer's room in the same instant a nack
    # returns the message, while AMQP needs two frames (disposition, then credit), so the broker may
    # give the returned message to another consumer that has credit (or the next one to this
    # consumer): several consumers of a queue therefore share the first one's mode, and a queue whose
    # first consumer prefetches gets no second one (docs/adapters/artemis.md)
    "consumer_pull", "consumer_prefetch", "pending_order",
    "counter:message_count", "counter:pending_count", "counter:delivering_count",
    "counter:scheduled_count", "counter:paged_count", "counter:added", "counter:acknowledged",
    "counter:killed", "counter:expired",
    # EXPIRY-1..7 on the broker's own clock (the adapter sleeps on advance): address setting
    # expiry-delay (a message without its own expiration), AMQP header ttl, expiry-address
    "advance_time", "message_ttl", "per_message_ttl", "expiry_address",
    # RING-15 last-value queues (QueueConfiguration last-value-key), DELIVERY-12 non-destructive
    # queues, DELIVERY-31..33 delete by id (QueueControl#removeMessage)
    "last_value", "non_destructive", "delete",
    # PAGING-12 / browse.ids: management listMessages walks QueueImpl#browserIterator, the iterator a
    # browsing consumer walks (pending in delivery order, then the page cursor); DELIVERY-23 the
    # redelivered flag an AMQP client sees (header delivery-count > 0, i.e. broker count > 1)
    "browse", "redelivered_flag",
    # PAGING-1..16, 28: address limits on logical sizes made exact on the broker's memory estimate
    # (.sizing), address-full policies PAGE, DROP and FAIL, AddressControl Paging
    "paging", "drop_policy", "fail_policy", "block_policy", "paging_flag", "page_limits",
    # SCHED-1..6, 9..11: annotation x-opt-delivery-time; due messages are fired at their logical due
    # time through management (see _fire), in the broker's scheduler order and head placement
    "scheduling",
})
#: address-full policies offered
POLICIES = ("PAGE", "DROP", "FAIL", "BLOCK")
#: AMQP credit standing in for a core byte window no example fills (the default 1 MiB, or -1
#: without max_unacked): topped up on every receive, like a core client returning credit
WIDE_CREDIT = 1000
#: the queue MBean's counts the adapter reads (after QueueControl#flushExecutor)
QUEUE_COUNTS = ("MessageCount", "DeliveringCount", "ScheduledCount", "MessagesAdded", "MessagesAcknowledged",
                "MessagesKilled", "MessagesExpired")
#: how long a pull with a message pending waits for it before it drains (answers None)
PULL_WAIT_S = 1.0
#: the longest pending list read back (address setting managementBrowsePageSize)
BROWSE_LIMIT = 100_000
#: ActiveMQServerControl#addAddressSettings with 58 arguments (2.18.0 .. 2.31.2, the same list), in
#: order: each name is also the key getAddressSettingsAsJSON(match) gives its value under
_KINDS = {"S": "java.lang.String", "J": "long", "I": "int", "Z": "boolean", "D": "double"}
POSITIONAL_SETTINGS: tuple[tuple[str, str], ...] = tuple(
    (name, _KINDS[kind]) for name, kind in (item.split(":") for item in (
    "addressMatch:S", "DLA:S", "expiryAddress:S", "expiryDelay:J", "lastValueQueue:Z",
    "maxDeliveryAttempts:I", "maxSizeBytes:J", "pageSizeBytes:I", "pageCacheMaxSize:I",
    "redeliveryDelay:J", "redeliveryMultiplier:D", "maxRedeliveryDelay:J", "redistributionDelay:J",
    "sendToDLAOnNoRoute:Z", "addressFullMessagePolicy:S", "slowConsumerThreshold:J",
    "slowConsumerCheckPeriod:J", "slowConsumerPolicy:S", "autoCreateJmsQueues:Z",
    "autoDeleteJmsQueues:Z", "autoCreateJmsTopics:Z", "autoDeleteJmsTopics:Z", "autoCreateQueues:Z",
    "autoDeleteQueues:Z", "autoCreateAddresses:Z", "autoDeleteAddresses:Z", "configDeleteQueues:S",
    "configDeleteAddresses:S", "maxSizeBytesRejectThreshold:J", "defaultLastValueKey:S",
    "defaultNonDestructive:Z", "defaultExclusiveQueue:Z", "defaultGroupRebalance:Z",
    "defaultGroupBuckets:I", "defaultGroupFirstKey:S", "defaultMaxConsumers:I",
    "defaultPurgeOnNoConsumers:Z", "defaultConsumersBeforeDispatch:I", "defaultDelayBeforeDispatch:J",
    "defaultQueueRoutingType:S", "defaultAddressRoutingType:S", "defaultConsumerWindowSize:I",
    "defaultRingSize:J", "autoDeleteCreatedQueues:Z", "autoDeleteQueuesDelay:J",
    "autoDeleteQueuesMessageCount:J", "autoDeleteAddressesDelay:J",
    "redeliveryCollisionAvoidanceFactor:D", "retroactiveMessageCount:J",
    "autoCreateDeadLetterResources:Z", "deadLetterQueuePrefix:S", "deadLetterQueueSuffix:S",
    "autoCreateExpiryResources:Z", "expiryQueuePrefix:S", "expiryQueueSuffix:S", "minExpiryDelay:J",
    "maxExpiryDelay:J", "enableMetrics:Z",
)))
POSITIONAL_OPERATION = f"addAddressSettings({','.join(kind for _, kind in POSITIONAL_SETTINGS)})"
#: the adapter's setting names (the JSON keys of addAddressSettings(match, json)) the positional
#: operation names otherwise
POSITIONAL_NAMES = {"deadLetterAddress": "DLA"}
#: settings the positional operation does not carry and the adapter may leave unset: the
#: catch-all's managementBrowsePageSize (200) bounds what listMessages shows, beyond any example
POSITIONAL_SKIPPED = frozenset({"managementBrowsePageSize"})


@attrs.frozen
class Features:
    """What the adapter can drive on one release (one code path; these switches pick the mechanism).

    ``json_settings``: address settings are set live with ``addAddressSettings(match, json)``
    (2.32.0+, ARTEMIS-3932), which carries every setting; before, with the positional operation of
    58 arguments (POSITIONAL_SETTINGS), which has no maxSizeMessages, maxReadPageBytes,
    maxReadPageMessages, prefetchPage*, pageLimit* or pageFullMessagePolicy.
    ``deliver_scheduled``: QueueControl#deliverScheduledMessage (2.25.0+, ARTEMIS-3872), how the
    adapter fires a scheduled message at its logical due time."""

    json_settings: bool
    deliver_scheduled: bool

    @classmethod
    def of(cls, version: str) -> Features:
        return cls(json_settings=at_least(version, JSON_SETTINGS_SINCE),
                   deliver_scheduled=at_least(version, DELIVER_SCHEDULED_SINCE))

    def missing(self) -> dict[str, str]:
        """The capabilities this release cannot have, each with why."""
        why: dict[str, str] = {}
        if not self.json_settings:
            why["paging"] = (
                "the PAGE policy before 2.32 (the read budget maxReadPageBytes the model's depage "
                "follows, PAGING-10, cannot be set live: the positional addAddressSettings has none; "
                "before 2.24 the broker had no read budget, ARTEMIS-3850)")
            why["page_limits"] = ("page limits before 2.32 (pageLimitBytes, pageLimitMessages and "
                                  "pageFullMessagePolicy, ARTEMIS-3178 in 2.28, cannot be set live: the "
                                  "positional addAddressSettings has none)")
        if not self.deliver_scheduled:
            why["scheduling"] = ("scheduling before 2.25 (no QueueControl#deliverScheduledMessage, "
                                 "ARTEMIS-3872: the adapter cannot fire a message at its logical due time)")
        return why


class _Receiver(MessagingHandler):  # type: ignore[misc]
    """Collects the deliveries of one receiver link; nothing is accepted or flowed automatically."""

    def __init__(self) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        #: (delivery, logical id, AMQP header delivery-count), in arrival order
        self.arrived: collections.deque[tuple[Delivery, str, int]] = collections.deque()

    def on_message(self, event: Any) -> None:
        message = event.message
        msg_id = (message.properties or {}).get(ID_PROPERTY)
        self.arrived.append((event.delivery, str(msg_id), int(message.delivery_count or 0)))


@attrs.define
class _Address:
    name: str
    physical: str
    #: an address declared with `address` is MULTICAST (every queue gets a copy, PAGING-2); one a
    #: queue declaration makes is ANYCAST
    routing: str = "ANYCAST"
    #: its limits and full policy, when declared with any (sends then carry sized bodies, .sizing)
    config: AddressConfig | None = None
    #: PAGING-3 BLOCK: deliveries written without credit, in send order, not yet settled by the broker
    blocked: collections.deque[Delivery] = attrs.Factory(collections.deque)
    settings: dict[str, Any] = attrs.Factory(dict)
    queues: list[str] = attrs.Factory(list)
    #: EXPIRY-1: the queue TTL (address setting expiry-delay) of its queues, if any
    expiry_delay: int | None = None


@attrs.define
class _Queue:
    name: str
    physical: str
    address: str
    physical_address: str
    routing: str = "anycast"
    #: DELIVERY-12: delivered messages stay listed, so "pending" never says what is left to dispatch
    non_destructive: bool = False
    #: a last-value queue's MessageCount leaves out what is being delivered (LastValueQueue)
    last_value: bool = False
    #: DeliveringCount less what the links hold when a settle last ran out its bound (a broker whose
    #: count stays off, e.g. after a nack at the delivery limit): later settles take that difference
    #: as at rest too instead of waiting out their bound after every operation
    stuck: int = 0

    def at_rest(self, delivering: int, held: int, timed_out: bool = False) -> bool:
        """Whether the broker's DeliveringCount says nothing is in flight: it equals what the links
        hold, or is off by the difference a settle that ran out its bound left (see `stuck`). A
        settle that runs out (`timed_out`) records its difference."""
        off = delivering - held
        if timed_out or off == 0:  # the count came right again: nothing is taken as stuck
            self.stuck = off
        return off in (0, self.stuck)

    def applied(self, delivering: int, held: int, timed_out: bool = False, killed: bool = False) -> bool:
        """After an ack or nack: whether the broker applied it, i.e. DeliveringCount is what the links
        hold plus the difference taken as at rest (`stuck`). Unlike `at_rest` a count that equals what
        the links hold is not taken as having come right again while `stuck` is not 0: with `stuck`
        -1 that is the count of the disposition still in flight (one above). `killed`: the broker
        counted the nacked message killed at its delivery limit (MessagesKilled rose); a count then
        one below `stuck` is finding 2 (docs/findings/artemis-drop-at-limit-delivering-negative.md:
        dropped without a bound dead-letter address, QueueImpl#cancel decrements the count a second
        time), which becomes the difference taken as at rest. A wait that runs out records its
        difference, as `at_rest` does."""
        off = delivering - held
        if timed_out or (killed and off == self.stuck - 1):
            self.stuck = off
        return off == self.stuck

    def pending(self, counts: dict[str, int]) -> int:
        """The pending count from the queue MBean's counts: MessageCount less what is scheduled and,
        except on a last-value queue (whose MessageCount has no delivering messages), delivering."""
        delivering = 0 if self.last_value else counts["DeliveringCount"]
        return counts["MessageCount"] - delivering - counts["ScheduledCount"]


@attrs.define
class _Consumer:
    name: str
    queue: str
    link: Any
    handler: _Receiver
    pull: bool
    max_unacked: int
    mode: str
    #: received and not yet settled: id -> (delivery, delivery count shown)
    held: dict[str, tuple[Delivery, int]] = attrs.Factory(dict)


class ArtemisAdapter(BrokerAdapter):
    """ActiveMQ Artemis over AMQP 1.0 and Jolokia behind the adapter contract."""

    name = "artemis"
    profile = "artemis"
    #: seed areas of other products: set aside from the coverage figure (verdict.Coverage)
    absent_areas: ClassVar[Mapping[str, str]] = OTHER_PRODUCTS_AREAS
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "commit": "transactions (AMQP transactions are not driven by this adapter)",
        "rollback": "transactions (AMQP transactions are not driven by this adapter)",
        "tx": "transactions (AMQP transactions are not driven by this adapter)",
        # the broker's redelivery timer runs on its real clock; the suite's steps are 1-50 logical ms
        # apart and each operation takes real milliseconds (see docs/adapters/artemis.md)
        "redelivery_delay": "redelivery delay (the broker's timer runs on its real clock, not the suite's)",
        "block_policy": "the BLOCK policy (needs block_url=, an AMQP acceptor with amqpCredits=1)",
    }

    def __init__(self, url: str | None = None, http_url: str | None = None, user: str | None = None,
                 password: str | None = None, version: str = DEFAULT_VERSION, timeout: float = 5.0,
                 settle_timeout: float = 1.0, server_bin: str | None = None,
                 block_url: str | None = None, restart: bool = False) -> None:
        self.url = url or os.environ.get(URL_ENV) or None
        self.http_url = http_url or os.environ.get(HTTP_URL_ENV) or None
        if self.url and not self.http_url:
            raise AdapterError("artemis: url= needs http_url= (Jolokia) for management and counters")
        self.user = user or USER
        self.password = password or PASSWORD
        self.version = str(version)
        #: a distribution's bin/artemis to run instead of the cached release (`mqconform matrix`)
        self.home = home_of(server_bin) if server_bin else None
        if self.home is not None:
            self.version = self.home.name.removeprefix("apache-artemis-")
        if not self.url and not at_least(self.version, MIN_VERSION):
            raise AdapterError(f"artemis {self.version}: the adapter needs {MIN_VERSION} or newer")
        #: what this release lets the adapter drive (with url=, the version= given: open() checks it)
        self.features = Features.of(self.version)
        missing = self.features.missing()
        #: the reasons of what is not claimed (class defaults and this release's)
        self.UNSUPPORTED = {**type(self).UNSUPPORTED, **missing}
        self.timeout = float(timeout)
        self.settle_timeout = float(settle_timeout)
        #: an AMQP acceptor granting one credit at a time (BLOCK); the own broker has one
        self.block_url = block_url
        capabilities = CAPABILITIES if block_url or not self.url else CAPABILITIES - {"block_policy"}
        # RESTART-6 with restart=true: the adapter's own broker restarts on its instance (not a broker
        # at url=); opt-in, as each restart is a JVM start of seconds (ActiveMQ's persistent=true)
        restarts = {"restart"} if restart is True and not self.url else set()
        self.capabilities = (capabilities | restarts) - set(missing)
        self.block_conn: Any = None
        self.broker: ArtemisProcess | None = None
        #: the broker process this adapter's connection was made to (a restart changes it)
        self._broker_pid: int | None = None
        self.conn: Any = None
        self.sender_links: dict[str, Any] = {}
        self.jolokia: Jolokia | None = None
        self.prefix = ""
        #: the broker's version (management attribute Version), known after the first open()
        self.server_version = ""
        #: the broker's message estimate (.sizing), measured once per connection
        self.sizing: Sizing | None = None
        self._reset()

    # ------------------------------------------------------------------ plumbing
    def _classify(self, op: str, exc: Exception) -> Result | None:
        if isinstance(exc, Timeout | TimeoutError):
            return Result.info(f"artemis: {op}: timed out ({one_line(exc)})")
        if isinstance(exc, ConnectionException | ConnectionClosed | LinkDetached | LinkException | OSError):
            return Result.info(f"artemis: {op}: connection lost ({one_line(exc)})")
        if isinstance(exc, ManagementError):
            return Result.fail(f"artemis: {op}: {one_line(exc)}")
        return None

    def _mgmt(self) -> Jolokia:
        assert self.jolokia is not None
        return self.jolokia

    def _pump(self, seconds: float = 0.0) -> None:
        """Let proton process what arrived (and send what is queued) for up to `seconds`."""
        with contextlib.suppress(Timeout):
            self.conn.wait(lambda: False, timeout=seconds)

    def _pump_until(self, done: Callable[[], bool], seconds: float) -> None:
        """`_pump`, returning as soon as `done()` holds (a transfer or a drain's answer arrived)."""
        with contextlib.suppress(Timeout):
            self.conn.wait(done, timeout=seconds)

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect (starting the adapter's own broker first when no URL is given); AdapterError when
        the broker cannot be used."""
        self.close()
        if self.conn is not None and self.broker is not None and self.broker.pid != self._broker_pid:
            # the shared broker was restarted under this adapter (another adapter's restart): the
            # connection is dead, connect again
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None
        if self.conn is None:
            user, password = self.user, self.password
            if self.url:
                endpoint = parse_endpoint(self.url, "amqp", 5672)
                if endpoint.auth:
                    user, password = endpoint.auth
                # credentials go to proton apart from the URL, so no error text can carry them
                amqp, http, where = f"amqp://{endpoint.host}:{endpoint.port}", self.http_url, redact(self.url)
            else:
                if self.broker is None or not self.broker.running():
                    self.broker = shared_broker(self.version, self.home)
                amqp, http, where = self.broker.url, self.broker.jolokia_url, self.broker.url
            self._broker_pid = self.broker.pid if self.broker is not None else None
            try:
                self.conn = BlockingConnection(amqp, timeout=self.timeout, user=user, password=password)
            except Exception as exc:  # proton raises several kinds at connect
                text = one_line(exc).replace(password, "***") if password else one_line(exc)
                raise AdapterError(f"artemis: cannot use {where}: {text}") from None
            assert http is not None
            self.jolokia = Jolokia(http, user, password,
                                   on_round_trip=lambda s: self.latency.record("management", s))
            try:
                version = self.jolokia.read(self.jolokia.broker, "Version")["Version"]
            except ManagementError as exc:
                raise AdapterError(f"artemis: no management at {redact(http)}: {exc}") from None
            self.server_version = str(version)
            if not at_least(str(version), MIN_VERSION):
                raise AdapterError(f"artemis {version}: the adapter needs {MIN_VERSION} or newer")
            if Features.of(str(version)) != self.features:
                raise AdapterError(f"artemis {version}: the broker's release is not the one the adapter "
                                   f"was made for ({self.version}): pass version={version}")
        self.prefix = "mqc-" + physical_prefix(namespace, False)
        self._reset()
        self.addresses_: dict[str, _Address] = {}
        self._clock_origin = time.monotonic()
        #: SCHED-*: logical due times of the scheduled messages sent and not yet fired
        self._dues: list[int] = []
        self._far_origin = int(time.time() * 1000) + FAR_MS

    def close(self) -> None:
        """Detach every link, remove the namespace's queues, addresses and address settings."""
        if self.conn is not None:
            try:
                for consumer in list(self.consumers.values()):
                    with contextlib.suppress(Exception):
                        consumer.link.close()
                for link in self.sender_links.values():
                    with contextlib.suppress(Exception):
                        link.close()
                mgmt = self._mgmt()
                for queue in self.queues.values():
                    with contextlib.suppress(ManagementError):
                        mgmt.exec(mgmt.broker, "destroyQueue(java.lang.String,boolean,boolean)",
                                  queue.physical, True, True)
                for address in getattr(self, "addresses_", {}).values():
                    with contextlib.suppress(ManagementError):
                        mgmt.exec(mgmt.broker, "deleteAddress(java.lang.String,boolean)",
                                  address.physical, True)
                    for match in (address.physical, f"{address.physical}.#"):
                        with contextlib.suppress(ManagementError):
                            mgmt.exec(mgmt.broker, "removeAddressSettings(java.lang.String)", match)
            except Exception:  # the connection is gone: start afresh at the next open
                with contextlib.suppress(Exception):
                    self.conn.close()
                self.conn = None
        if self.block_conn is not None:
            with contextlib.suppress(Exception):
                self.block_conn.close()
            self.block_conn = None
        self.sender_links = {}
        self._reset()
        self.addresses_ = {}

    def shutdown(self) -> None:
        """close() and disconnect; the shared broker stays up for the process (stopped at exit)."""
        self.close()
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None
        if self.jolokia is not None:
            self.jolokia.close()

    def call(self, op: str, **kwargs: Any) -> Result:
        """``restart`` (capability ``restart``: ``restart=True`` on the adapter's own broker;
        RESTART-6): stop the broker with SIGTERM (``mode="graceful"``: its shutdown hook stops it
        cleanly) or SIGKILL (``mode="kill"``), start it again on the same instance (its journal,
        bindings and address settings) and ports, and reconnect. The client closes nothing first: the
        links end with the old connection, so the adapter forgets its consumers and senders (the broker
        reloads what they held from its journal)."""
        if op != "restart" or "restart" not in self.capabilities:
            return super().call(op, **kwargs)
        mode = self._restart_mode(kwargs)
        if isinstance(mode, Result):
            return mode
        broker = self.broker
        if broker is None or self.conn is None:
            return Result.fail("artemis: restart: the adapter is not open on its own broker")
        broker.go_down(kill=mode == "kill")
        for conn in (self.conn, self.block_conn):
            if conn is not None:
                with contextlib.suppress(Exception):  # the broker is gone: nothing to close cleanly
                    conn.close()
        self.conn, self.block_conn, self.sender_links, self.consumers = None, None, {}, {}
        try:
            broker.start()
            self._broker_pid = broker.pid
            self.conn = BlockingConnection(broker.url, timeout=self.timeout, user=self.user,
                                           password=self.password)
        except Exception as exc:  # AdapterError from start(), proton's kinds at connect
            return Result.info(f"artemis: restart: {one_line(exc)}")
        return Result.ok(None)

    # ------------------------------------------------------------------ declarations
    def _physical(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def _ensure_address(self, name: str, config: AddressConfig | None = None) -> _Address:
        address = self.addresses_.get(name)
        if address is None:
            address = _Address(name, self._physical(name))
            mgmt = self._mgmt()
            if config is not None:
                address.routing, address.config = "MULTICAST", config
                address.settings.update(self._limit_settings(config))
                if config.max_size_bytes > 0 and self.features.json_settings:
                    # management refuses a page size above max-size-bytes in one setting
                    # (ActiveMQServerControlImpl#addAddressSettings), broker.xml does not: the limit goes
                    # to the match `<address>.#` (it matches the address itself), merged under the
                    # exact match that carries the page size (HierarchicalObjectRepository)
                    limit = threshold(config.max_size_bytes)
                    self._add_settings(f"{address.physical}.#",
                                       {"maxSizeBytes": limit, "pageSizeBytes": limit})
                elif config.max_size_bytes > 0:
                    # the positional operation sets every field of the match, so the limit goes with
                    # the page size, which may not exceed it; only PAGE writes page files
                    # (PagingStoreImpl#page), and PAGE is not offered here (Features.missing)
                    limit = threshold(config.max_size_bytes)
                    address.settings["maxSizeBytes"] = limit
                    address.settings["pageSizeBytes"] = min(address.settings["pageSizeBytes"], limit)
            # listMessages shows at most managementBrowsePageSize (default 200) messages
            address.settings["managementBrowsePageSize"] = BROWSE_LIMIT
            self._add_settings(address.physical, address.settings)
            mgmt.exec(mgmt.broker, "createAddress(java.lang.String,java.lang.String)", address.physical,
                      address.routing)
            self.addresses_[name] = address
            self.addresses[name] = address.queues
        return address

    def _apply_settings(self, address: _Address, settings: dict[str, Any]) -> None:
        """Address settings for exactly this address (merged with the catch-all ``#``)."""
        address.settings.update(settings)
        self._add_settings(address.physical, address.settings)

    def _add_settings(self, match: str, settings: dict[str, Any]) -> None:
        """Address settings for `match`: from 2.32 addAddressSettings(match, json) with just these
        (the rest merged from wider matches); before, the positional operation, which sets every one
        of its fields: those not given keep what the match resolves to now (getAddressSettingsAsJSON,
        which names each field as the operation does). A setting the operation lacks is Unsupported
        unless it is unset (-1 or None) or POSITIONAL_SKIPPED."""
        mgmt = self._mgmt()
        if self.features.json_settings:
            mgmt.exec(mgmt.broker, "addAddressSettings(java.lang.String,java.lang.String)", match,
                      json.dumps(settings))
            return
        values = json.loads(mgmt.exec(mgmt.broker, "getAddressSettingsAsJSON(java.lang.String)", match))
        values["addressMatch"] = match
        known = {name for name, _ in POSITIONAL_SETTINGS}
        for key, value in settings.items():
            name = POSITIONAL_NAMES.get(key, key)
            if name in known:
                values[name] = value
            elif key not in POSITIONAL_SKIPPED and value not in (-1, None):
                raise Unsupported(f"address setting {key} on Artemis {self.version} (the positional "
                                  "addAddressSettings before 2.32 has none)")
        arguments = []
        for name, _ in POSITIONAL_SETTINGS:
            if name not in values and name not in ("DLA", "expiryAddress"):  # unset addresses: absent
                raise AdapterError(f"artemis {self.version}: getAddressSettingsAsJSON has no {name}")
            arguments.append(values.get(name))
        mgmt.exec(mgmt.broker, POSITIONAL_OPERATION, *arguments)

    @operation
    def declare_address(self, config: AddressConfig) -> None:
        if config.name in self.addresses:
            raise Refused(f"address {config.name!r} already exists")
        if config.full_policy == "BLOCK" and ("block_policy" not in self.capabilities
                                              or config.max_size_messages >= 0):
            raise Unsupported(self._why("block_policy") if "block_policy" not in self.capabilities
                              else "BLOCK with max_size_messages (AddressSize shows bytes only)")
        if config.max_size_bytes == 0 or config.page_size_bytes <= 0:
            raise Unsupported("max_size_bytes 0 or page_size_bytes <= 0 (no broker threshold matches)")
        if config.retroactive_message_count:
            raise Unsupported("retroactive addresses")
        limited = config.max_size_bytes >= 0 or config.max_size_messages >= 0
        if config.full_policy == "PAGE" and limited and "paging" not in self.capabilities:
            raise Unsupported(self._why("paging"))
        page_limits = (config.page_full_policy is not None or config.page_limit_bytes >= 0
                       or config.page_limit_messages >= 0)
        if page_limits and "page_limits" not in self.capabilities:
            raise Unsupported(self._why("page_limits"))
        if self.sizing is None:
            self.sizing = self._calibrate()
        self._ensure_address(config.name, config)

    def _limit_settings(self, config: AddressConfig) -> dict[str, Any]:
        """PAGING-1, 3, 4, 9, 10: the address settings of a declared address, its logical byte limits
        mapped to broker thresholds (.sizing). Before 2.32 (positional settings) without the read
        budget, which acts only on paged messages and PAGE is not offered there (Features.missing)."""
        budget = threshold(config.read_budget_bytes) if config.read_budget_bytes > 0 else -1
        page = over_threshold(config.page_size_bytes)
        limits: dict[str, Any] = {}
        if config.page_full_policy is not None:  # PAGING-13: a policy acts only with a limit
            limits["pageFullMessagePolicy"] = config.page_full_policy
        if config.page_limit_bytes >= 0:  # PAGING-14: pages allowed = limit // page size, kept exact
            limits["pageLimitBytes"] = (config.page_limit_bytes // config.page_size_bytes) * page
        if config.page_limit_messages >= 0:  # PAGING-15
            limits["pageLimitMessages"] = config.page_limit_messages
        settings = {**limits,
            "addressFullMessagePolicy": config.full_policy,
            "maxSizeMessages": config.max_size_messages,
            "pageSizeBytes": page,
        }
        if self.features.json_settings:
            settings.update({"maxReadPageBytes": budget, "prefetchPageBytes": budget,
                             "maxReadPageMessages": config.max_read_page_messages,
                             "prefetchPageMessages": config.max_read_page_messages})
        return settings

    def _calibrate(self) -> Sizing:
        """The broker's estimate of an AMQP message (.sizing): one message to an address with one
        queue, one to it with two, the address sizes read after each."""
        mgmt = self._mgmt()
        physical = self._physical("calibrate")
        mbean = mgmt.address_mbean(physical)
        mgmt.exec(mgmt.broker, "createAddress(java.lang.String,java.lang.String)", physical, "MULTICAST")
        try:
            sender = self.conn.create_sender(physical)
            deltas = []
            for queues in (1, 2):
                body = {"name": f"{physical}-{queues}", "address": physical, "routing-type": "MULTICAST",
                        "durable": True}
                mgmt.exec(mgmt.broker, "createQueue(java.lang.String,boolean)", json.dumps(body), False)
                before = int(mgmt.read(mbean, "AddressSize")["AddressSize"])
                message = AmqpMessage(body="x" * queues, durable=True, priority=4,
                                      properties={ID_PROPERTY: "calibrate"})
                sender.send(message, timeout=self.timeout)
                deltas.append(int(mgmt.read(mbean, "AddressSize")["AddressSize"]) - before
                              - len(message.encode()))
            sender.close()
        finally:
            mgmt.exec(mgmt.broker, "deleteAddress(java.lang.String,boolean)", physical, True)
        per_ref = deltas[1] - deltas[0]
        return Sizing(offset=deltas[0] - per_ref, per_ref=per_ref)

    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        if config.name in self.queues:
            raise Refused(f"queue {config.name!r} already exists")
        if config.filter is not None:
            raise Unsupported("queue filters")
        if config.ring_size < -1:
            raise Refused("ring_size must be -1 or >= 0")
        if config.redelivery_delay_ms:
            raise Unsupported(self._why("redelivery_delay"))
        address = self._ensure_address(config.address_name)
        settings = self._queue_settings(config)
        if address.queues and settings != {k: address.settings.get(k) for k in settings}:
            raise Unsupported("queues with different redelivery settings on one address "
                              "(Artemis' settings are per address)")
        self._apply_settings(address, settings)
        address.expiry_delay = config.message_ttl_ms
        physical = self._physical(config.name)
        body: dict[str, Any] = {"name": physical, "address": address.physical,
                                "routing-type": address.routing, "durable": True}
        if config.ring_size >= 0:
            body["ring-size"] = config.ring_size
        if config.last_value_key is not None:
            body.update({"last-value": True, "last-value-key": config.last_value_key})
        if config.non_destructive:
            body["non-destructive"] = True
        mgmt = self._mgmt()
        mgmt.exec(mgmt.broker, "createQueue(java.lang.String,boolean)", json.dumps(body), False)
        address.queues.append(config.name)
        self.queues[config.name] = _Queue(config.name, physical, address.name, address.physical,
                                          address.routing.lower(), config.non_destructive,
                                          config.last_value_key is not None)

    def _queue_settings(self, config: QueueConfig) -> dict[str, Any]:
        """REDELIVERY-*: the address settings a queue declaration stands for."""
        attempts = config.max_delivery_attempts
        settings: dict[str, Any] = {
            "maxDeliveryAttempts": -1 if attempts is None else attempts,
            "redeliveryDelay": config.redelivery_delay_ms,
            "redeliveryMultiplier": float(config.redelivery_multiplier),
        }
        if config.max_redelivery_delay_ms is not None:
            settings["maxRedeliveryDelay"] = config.max_redelivery_delay_ms
        if config.dead_letter is not None:
            settings["deadLetterAddress"] = self._ensure_address(config.dead_letter).physical
        if config.message_ttl_ms is not None:
            settings["expiryDelay"] = config.message_ttl_ms
        if config.expiry_address is not None:
            settings["expiryAddress"] = self._ensure_address(config.expiry_address).physical
        return settings

    # ------------------------------------------------------------------ consumers
    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        if config.name in self.consumers:
            raise Refused(f"consumer {config.name!r} already exists")
        queue = self._queue(config.queue)
        if config.browser:
            raise Unsupported("browsers")
        if config.selector is not None:
            raise Unsupported("selectors")
        if config.cumulative_ack:
            raise Unsupported("cumulative acks (AMQP settles one delivery at a time)")
        mode, credit = self._consumer_mode(config)
        handler = _Receiver()
        link = self.conn.create_receiver(f"{queue.physical_address}::{queue.physical}", credit=0,
                                         handler=handler,
                                         name=f"{self.prefix}-{config.name}-{time.monotonic_ns()}")
        consumer = _Consumer(config.name, queue.name, link, handler, mode == "pull", credit, mode)
        self.consumers[config.name] = consumer
        self._top_up(consumer)
        self._settle_queue(queue.name)

    @staticmethod
    def _consumer_mode(config: ConsumerConfig) -> tuple[str, int]:
        """(mode, credit) of a consumer: ``pull`` (window 0: one credit with drain per receive),
        ``prefetch`` (window -1 with max_unacked n: n credits minus what it holds unsettled),
        ``window`` (window_messages n: n credits minus what was dispatched and not yet received;
        the default byte window or -1 without max_unacked: WIDE_CREDIT the same way). Other byte
        windows are Artemis core client credits (ClientConsumerImpl), which AMQP does not have."""
        if config.window_messages is not None:
            if config.max_unacked is not None or config.window_messages < 1:
                raise Unsupported("window_messages with max_unacked, or below 1")
            return "window", config.window_messages
        if config.window_bytes == 0 and config.max_unacked is None:
            return "pull", 0
        if config.window_bytes == -1 and config.max_unacked is not None and config.max_unacked >= 1:
            return "prefetch", config.max_unacked
        if config.max_unacked is None and config.window_bytes in (-1, DEFAULT_WINDOW_BYTES):
            return "window", WIDE_CREDIT
        raise Unsupported("byte windows (core client credits: AMQP link credit counts messages) and "
                          "max_unacked on pull consumers")

    def _top_up(self, consumer: _Consumer) -> bool:
        """Credit back up to the consumer's bound: prefetch counts what it holds unsettled and what
        was dispatched to it, a window only what was dispatched and not yet received. Whether credit
        went out."""
        if consumer.pull:
            return False
        held = len(consumer.held) if consumer.mode == "prefetch" else 0
        want = consumer.max_unacked - held - len(consumer.handler.arrived)
        missing = want - int(consumer.link.link.credit)
        if missing > 0:
            consumer.link.link.flow(missing)
        return missing > 0

    @operation
    def close_consumer(self, consumer: str) -> None:
        state = self._forget_consumer(consumer)
        state.link.close()
        # what the link held returns on the broker's own time (ProtonServerSenderContext#close runs
        # later): in flight until the count is back at the difference taken as at rest
        self._settle_queue(state.queue, returning=True)

    # ------------------------------------------------------------------ sends
    def _sender(self, address: _Address) -> Any:
        link = self.sender_links.get(address.physical)
        if link is None:
            link = self._block_conn().create_sender(address.physical) if self._blocks(address) \
                else self.conn.create_sender(address.physical)
            self.sender_links[address.physical] = link
        return link

    @staticmethod
    def _blocks(address: _Address) -> bool:
        return address.config is not None and address.config.full_policy == "BLOCK"

    def _block_conn(self) -> Any:
        """The connection to the acceptor that grants one credit at a time (opened per open())."""
        if self.block_conn is None:
            url = self.block_url or (self.broker.block_url if self.broker is not None else None)
            if url is None:
                raise Unsupported(self._why("block_policy"))
            self.block_conn = BlockingConnection(url, timeout=self.timeout, user=self.user,
                                                 password=self.password)
        return self.block_conn

    def _pump_block(self, seconds: float) -> None:
        with contextlib.suppress(Timeout):
            self.block_conn.wait(lambda: False, timeout=seconds)

    def _full(self, address: _Address) -> bool:
        """PAGING-1: the address is at or over its byte limit (AddressSize against the threshold)."""
        assert address.config is not None
        size = self._address_size(address)
        return size is not None and size >= threshold(address.config.max_size_bytes)

    def _send_blocking(self, address: _Address, amqp: AmqpMessage) -> str:
        """PAGING-3 BLOCK: with credit (the broker granted it because the address was not full after
        the previous message) a plain send; without it and the address full, the transfer is written
        anyway and proton sends it when the broker grants the next credit (memory freed): `blocked`."""
        link = self._sender(address)
        if not address.blocked:
            deadline = time.monotonic() + self.timeout
            while link.link.credit <= 0 and not self._full(address):
                if time.monotonic() > deadline:
                    raise TimeoutError("no credit on a BLOCK address that is not full")
                self._pump_block(0.005)
            if link.link.credit > 0:
                link.send(amqp, timeout=self.timeout)
                return "accepted"
        address.blocked.append(link.link.send(amqp))
        return "blocked"

    def _settle_blocked(self, address: _Address) -> None:
        """Wait until the broker took the blocked transfers it grants credit for (memory freed), in
        order: each is settled by the broker once routed; stop at one still held while the address is
        full and the link has no credit."""
        link = self._sender(address).link
        deadline = time.monotonic() + self.timeout
        while address.blocked:
            self._pump_block(0)
            head = address.blocked[0]
            if head.remote_state or head.settled:
                address.blocked.popleft()
                head.settle()
                continue
            if link.credit <= 0 and self._full(address):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("a blocked transfer was neither taken nor held")
            self._pump_block(0.005)

    @operation
    def send(self, to: str, message: Message) -> str:
        if to not in self.addresses:
            raise Refused(f"unknown address {to!r}")
        address = self.addresses_[to]
        fields: dict[str, Any] = {"durable": True, "priority": message.priority,
                                  "properties": {ID_PROPERTY: message.id, **dict(message.properties)}}
        due = message.scheduled_at_ms if message.scheduled_at_ms and message.scheduled_at_ms > 0 else None
        if due is not None:
            if "scheduling" not in self.capabilities:
                raise Unsupported(self._why("scheduling"))
            fields["properties"][DUE_PROPERTY] = due
            fields["annotations"] = {symbol("x-opt-delivery-time"): self._far_origin + due}
        if message.ttl_ms is not None:
            fields["ttl"] = message.ttl_ms / 1000  # proton: seconds; the header carries ms
        amqp = AmqpMessage(body=self._body(address, message.size, fields), **fields)
        # EXPIRY-3 (ttl_combination message_first): the message's own TTL, else expiry-delay
        self._note_ttl(message.ttl_ms if message.ttl_ms is not None else address.expiry_delay)
        if self._blocks(address):
            outcome = self._send_blocking(address, amqp)
            self._settle_address(address)
            return outcome
        # AddressSize and Paging, then the first queue's MessagesAdded after flushExecutor: one request
        before, paging_before, first = self._address_look(address)
        added = None if first is None else int(first["MessagesAdded"])
        try:
            self._sender(address).send(amqp, timeout=self.timeout)
        except SendException as exc:
            config = address.config
            if config is not None and "FAIL" in (config.full_policy, config.page_full_policy):
                return "failed"  # PAGING-3, 14: FAIL (or page-full FAIL) refuses the send
            raise Refused(f"artemis: send refused: {exc}") from None
        outcome = "accepted"
        after = self._address_look(address) if before is not None and address.queues else None
        if after is not None and (paging_before or after[0] == before):
            # PAGING-3, 6, 7, 14: not held in memory: written to a page file (PAGE: the queues count
            # it added) or discarded (DROP, or a page-full address under PAGE). An address already
            # paging takes nothing into memory (PagingStoreImpl#page); its AddressSize may still fall:
            # a ring queue replaces a message held in memory by the paged one (RING-10)
            paging = address.config is not None and address.config.full_policy == "PAGE"
            paged = paging and after[2] is not None and int(after[2]["MessagesAdded"]) != added
            outcome = "paged" if paged else "dropped"
        if due is not None:
            self._dues.append(due)
            if due <= self._clock_ms:  # SCHED-2: due already: it enters the scheduler and fires
                self._fire(self._clock_ms)
        # the look after the send stands for its first queue's first settle look (nothing sent since)
        self._settle_address(address, after[2] if after is not None and due is None else None)
        return outcome

    def _body(self, address: _Address, size: int, fields: dict[str, Any]) -> str:
        """The body of a message of logical size `size`: that many bytes, or on a limited address one
        that weighs ``size * UNIT`` broker bytes (.sizing)."""
        if address.config is None:
            return "x" * max(size, 0)
        assert self.sizing is not None
        if size % GRAIN:
            raise Unsupported(f"a logical size that is not a multiple of {GRAIN} on a limited address "
                              "(thresholds are exact only on the grain, adapters/artemis/sizing.py)")
        try:
            return self.sizing.body_for(size, len(address.queues), **fields)
        except ValueError as exc:
            raise Unsupported(str(exc)) from None

    def _address_look(self, address: _Address) -> tuple[int | None, bool, dict[str, Any] | None]:
        """A limited address's AddressSize and Paging (page mode under PAGE, full under DROP), then
        the counts of its first queue after flushExecutor (MessagesAdded: paged messages count,
        page-full drops do not), in one request; (None, False, None) for the others: nothing to
        measure (no counts without a queue)."""
        if address.config is None:
            return None, False, None
        mgmt = self._mgmt()
        looks: list[tuple[str, tuple[str, ...], bool]] = [
            (mgmt.address_mbean(address.physical), ("AddressSize", "Paging"), False)]
        if address.queues:
            looks.append((self._queue_mbean(self.queues[address.queues[0]]), QUEUE_COUNTS, True))
        answers = mgmt.reads(*looks)
        first = answers[1] if address.queues else None
        return int(answers[0]["AddressSize"]), bool(answers[0]["Paging"]), first

    def _address_memory(self, address: _Address) -> tuple[int | None, bool]:
        """AddressSize and Paging (page mode under PAGE, full under DROP) of a limited address, in one
        request; (None, False) for the others: nothing to measure."""
        if address.config is None:
            return None, False
        mgmt = self._mgmt()
        state = mgmt.read(mgmt.address_mbean(address.physical), "AddressSize", "Paging")
        return int(state["AddressSize"]), bool(state["Paging"])

    def _address_size(self, address: _Address) -> int | None:
        """AddressSize of a limited address (None for the others: nothing to measure)."""
        if address.config is None:
            return None
        mgmt = self._mgmt()
        return int(mgmt.read(mgmt.address_mbean(address.physical), "AddressSize")["AddressSize"])

    def _settle_address(self, address: _Address, first: dict[str, Any] | None = None) -> None:
        """Settle every queue of `address`; `first`: the first queue's counts just read."""
        for i, queue in enumerate(address.queues):
            self._settle_queue(queue, None if i else first)

    # ------------------------------------------------------------------ receive and settle
    @operation
    def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        arrived = state.handler.arrived
        if not arrived and state.pull:
            self._pull(state)
        if not arrived:
            return None
        delivery, msg_id, count = arrived.popleft()
        state.held[msg_id] = (delivery, count + 1)
        if state.mode == "window":  # room returns on every receive
            self._top_up(state)
            self._settle_queue(state.queue)
        return msg_id

    def _pull(self, state: _Consumer) -> None:
        """One pull: with a message pending on the queue (management, at rest: no other link has
        credit) one credit, and the message it brings; else one credit with drain, answered once the
        broker tried the queue. A drain alone is not enough with messages pending: the broker may
        answer it before its delivery loop ran (ServerConsumerImpl#forceDelivery runs the drain
        callback on the queue executor, where a delivery loop that stopped at MAX_DELIVERIES_IN_LOOP
        or its timeout is re-queued behind it), a spurious empty receive seen on 2.40.0."""
        queue = self.queues[state.queue]
        link = state.link.link
        arrived = state.handler.arrived
        counts = self._queue_state(queue)
        pending = queue.pending(counts)
        deadline = time.monotonic() + self.timeout
        if pending > 0 and not queue.non_destructive:
            link.flow(1)
            next_look = time.monotonic() + 0.05
            # management's pending can be too high (finding 2: DeliveringCount -1 after a drop at the
            # delivery limit): after PULL_WAIT_S without a message the pull ends with a drain
            patience = time.monotonic() + PULL_WAIT_S
            while not arrived:
                if time.monotonic() > patience:
                    link.drain(0)
                    break
                self._pump_until(lambda: bool(arrived), 0.005)
                if not arrived and time.monotonic() > next_look:  # gone meanwhile (expired at dispatch)
                    next_look = time.monotonic() + 0.05
                    counts = self._queue_state(queue)
                    if queue.pending(counts) <= 0:
                        link.drain(0)
                        break
        else:
            link.drain(1)
        while not arrived and link.credit > 0:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer to a drain")
            self._pump_until(lambda: bool(arrived) or link.credit <= 0, 0.005)

    def _settle(self, consumer: str, msg_id: str, outcome: str) -> str:
        state = self._consumer(consumer)
        entry = state.held.pop(msg_id, None)
        if entry is None:
            return "failed"
        delivery = entry[0]
        queue = self.queues[state.queue]
        # a nack at the delivery limit (the broker's count, entry[1], reached maxDeliveryAttempts)
        # kills the message (QueueImpl#checkRedelivery): MessagesKilled before it tells the drop
        attempts = int(self.addresses_[queue.address].settings.get("maxDeliveryAttempts", -1))
        at_limit = outcome == "modified" and 0 < attempts <= entry[1]
        killed = int(self._queue_state(queue)["MessagesKilled"]) if at_limit else None
        if outcome == "modified":
            delivery.local.failed = True
            delivery.update(Delivery.MODIFIED)
        else:
            delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        # proton writes a receiver's flow before the dispositions of the same output batch
        # (transport.c: pni_process_flow_receiver before pni_process_tpwork): the disposition must
        # reach the broker first, or new credit dispatches the next message ahead of the returned one
        counts = self._await_delivering(state.queue, killed)
        # the await's last read stands for the settle's first one when no credit went out after it
        self._settle_queue(state.queue, None if self._top_up(state) else counts)
        return "ok"

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        self._no_tx(tx)
        return self._settle(consumer, msg_id, "accepted")

    @operation
    def nack(self, consumer: str, msg_id: str) -> str:
        return self._settle(consumer, msg_id, "modified")

    # ------------------------------------------------------------------ the broker's own threads
    def _queue_mbean(self, queue: _Queue) -> str:
        return self._mgmt().queue_mbean(queue.physical_address, queue.physical, queue.routing)

    def _paging_now(self, queue: _Queue) -> bool:
        """Whether the queue's address is in page mode (its pending count then holds paged messages)."""
        address = self.addresses_[queue.address]
        if address.config is None or address.config.full_policy != "PAGE":
            return False
        return self._address_memory(address)[1]

    def _queue_state(self, queue: _Queue) -> dict[str, Any]:
        return self._mgmt().read(self._queue_mbean(queue), *QUEUE_COUNTS, flush=True)

    def _await_delivering(self, name: str, killed: int | None = None) -> dict[str, Any] | None:
        """Wait (bounded by settle_timeout) until the broker counts as delivering on queue `name`
        exactly what the adapter's links hold: every disposition sent has been applied. `killed`: the
        queue's MessagesKilled before a nack at the delivery limit (see _Queue.applied). The last
        counts read when they were at rest with nothing arrived since, else None."""
        queue = self.queues[name]
        consumers = [c for c in self.consumers.values() if c.queue == name]
        deadline = self._settle_deadline(self.settle_timeout)
        while True:
            self._pump(0)
            held = sum(len(c.held) + len(c.handler.arrived) for c in consumers)
            late = time.monotonic() > deadline
            counts = self._queue_state(queue)
            dropped = killed is not None and counts["MessagesKilled"] > killed
            if queue.applied(counts["DeliveringCount"], held, late, dropped) and not late:
                self._pump(0)
                arrived = sum(len(c.held) + len(c.handler.arrived) for c in consumers) != held
                return None if arrived else counts
            if late:
                return None
            self._pump(0.002)

    def _settle_queue(self, name: str, counts: dict[str, Any] | None = None,
                      returning: bool = False) -> None:
        """Wait (bounded by settle_timeout) until the broker's view of queue `name` is at rest: what
        it counts delivering is what the adapter's links hold (nothing in flight either way), and no
        message is pending while a link of the queue has credit. `counts`: the queue's counts just
        read (nothing sent since), taken as the first look. `returning`: deliveries are on their way
        back (a closed link), so the count must come back to the difference taken as at rest
        (_Queue.applied), not to what the links hold."""
        queue = self.queues[name]
        address = self.addresses_[queue.address]
        if address.blocked:  # PAGING-3: memory freed lets blocked sends through first
            self._settle_blocked(address)
            counts = None
        consumers = [c for c in self.consumers.values() if c.queue == name]
        deadline = self._settle_deadline(self.settle_timeout)
        while True:
            if counts is None:  # counts given were read before anything that arrived since: no pump
                self._pump(0)
            state = self._queue_state(queue) if counts is None else counts
            counts = None
            held = sum(len(c.held) + len(c.handler.arrived) for c in consumers)
            pending = queue.pending(state)
            credit = sum(c.link.link.credit for c in consumers)
            late = time.monotonic() > deadline
            rest = queue.applied if returning else queue.at_rest
            if rest(state["DeliveringCount"], held, late) and (
                    pending <= 0 or credit <= 0 or queue.non_destructive):
                return
            if late:
                return
            self._pump(0.003)

    def advance(self, ms: int) -> Result:
        """Move the logical clock by `ms`, firing scheduled messages at each logical due time on the way
        (SCHED-4: each due time is its own firing, as the model's clock and the broker's timer do)."""
        target = self._clock_ms + ms
        for point in sorted({d for d in self._dues if self._clock_ms < d <= target}):
            result = self._advance_clock(point - self._clock_ms)
            if not result.is_ok:
                return result
            fired = self._do("advance", lambda p=point: self._fire(p))
            if not fired.is_ok:
                return fired
        return self._advance_clock(target - self._clock_ms) if target > self._clock_ms else Result.ok(None)

    def _fire(self, point: int) -> None:
        """SCHED-3, 4, 9..11, RING-10: fire the scheduled messages due at logical time `point`.

        The broker's timer would fire them a day from now (FAR_MS), so the adapter fires them at their
        logical due time: per queue, the due ones in the broker's scheduler order
        (QueueControl#listScheduledMessages: ScheduledDeliveryHandlerImpl's sorted set), each moved
        with QueueControl#deliverScheduledMessage(id), last first, the queue paused when it has a
        consumer and more than one is due. Each
        call is QueueImpl#addHead(ref, scheduling=true), so they end at the head in scheduler order
        with the ring enforced per message, as ScheduledDeliveryRunnable#run leaves them (it collects
        them with addFirst, then addHead in turn); the pause keeps a consumer with credit from taking
        one before the rest are placed."""
        self._dues = [d for d in self._dues if d > point]
        mgmt = self._mgmt()
        for name, q in self.queues.items():
            mbean = self._queue_mbean(q)
            due = [m for m in mgmt.exec(mbean, "listScheduledMessages()")
                   if m.get(DUE_PROPERTY) is not None and int(m[DUE_PROPERTY]) <= point]
            if not due:
                continue
            pause = len(due) > 1 and any(c.queue == name for c in self.consumers.values())
            if pause:
                mgmt.exec(mbean, "pause()")
            try:
                for message in reversed(due):
                    mgmt.exec(mbean, "deliverScheduledMessage(long)", int(message["messageID"]))
            finally:
                if pause:
                    mgmt.exec(mbean, "resume()")
            self._settle_queue(name)

    def _advance_clock(self, ms: int) -> Result:
        """With a TTL pending, sleep until the broker's clock has run as long as the logical one
        (BrokerAdapter.advance) and give the expiry scanner its period; without one, only move the
        logical clock (nothing on the broker waits for time)."""
        expiring = any(logical <= self._clock_ms + ms for logical, _ in self._ttl_deadlines)
        if ms > 0 and not self._ttl_deadlines:
            # nothing on the broker runs on its clock (no TTL pending; scheduled messages are fired by
            # _fire, redelivery delays are not offered): logical time passes without a sleep, the
            # clocks are lined up again
            self._clock_ms += ms
            self._clock_origin = time.monotonic() - self._clock_ms / 1000
            return Result.ok(None)
        result = super().advance(ms)
        if result.is_ok:
            def run() -> None:
                # a TTL ran out: the expiry scanner (message-expiry-scan-period) removes it within a period
                self._pump(2 * EXPIRY_SCAN_MS / 1000 if expiring else 0.02)
                for name in self.queues:
                    self._settle_queue(name)
            return self._do("advance", run)
        return result

    # ------------------------------------------------------------------ observations
    @operation
    def counters(self, queue: str) -> dict[str, int]:
        q = self._queue(queue)
        if self._paging_now(q):
            raise NotObservable("management shows no split between pending and paged messages "
                                "(QueueImpl#getMessageCount adds the page subscription's count)")
        state = self._queue_state(q)
        pending = q.pending(state)
        return {"message_count": state["MessageCount"], "pending_count": pending,
                "delivering_count": state["DeliveringCount"], "scheduled_count": state["ScheduledCount"],
                "paged_count": 0, "added": state["MessagesAdded"],
                "acknowledged": state["MessagesAcknowledged"], "killed": state["MessagesKilled"],
                "expired": state["MessagesExpired"]}

    @operation
    def pending_ids(self, queue: str) -> list[str]:
        q = self._queue(queue)
        if self._paging_now(q):
            raise NotObservable("listMessages walks the memory then the page cursor: paged messages "
                                "cannot be told from pending ones")
        return self._listed(q)

    def _listed(self, q: _Queue) -> list[str]:
        """QueueControl#listMessages: pending in delivery order, then the page cursor (browserIterator),
        after QueueControl#flushExecutor (messages still in the queue's intermediate list are not
        listed: see Jolokia.read)."""
        mbean = self._queue_mbean(q)
        mgmt = self._mgmt()
        listing = {"type": "exec", "mbean": mbean, "operation": "listMessages(java.lang.String)",
                   "arguments": [""]}
        _, listed = mgmt.bulk([mgmt.flush_request(mbean), listing])
        return [str(m.get(ID_PROPERTY)) for m in listed]

    @operation
    def browse(self, queue: str) -> list[str]:
        """What a browser sees: QueueControl#listMessages (QueueImpl#browserIterator), paged ones too
        (PAGING-12)."""
        return self._listed(self._queue(queue))

    @operation
    def paging(self, address: str) -> bool:
        """PAGING-28: AddressControl Paging (PagingStoreImpl#isPaging: page mode under PAGE, full under
        DROP and FAIL)."""
        if address not in self.addresses_:
            raise Refused(f"unknown address {address!r}")
        mgmt = self._mgmt()
        return bool(mgmt.read(mgmt.address_mbean(self.addresses_[address].physical), "Paging")["Paging"])

    @operation
    def message_info(self, queue: str, msg_id: str) -> dict[str, Any] | None:
        """DELIVERY-23: the redelivered flag of a held message's delivery (AMQP header delivery-count
        > 0); Artemis gives no dead-letter reason. None when no consumer of the adapter holds it."""
        for consumer in self.consumers.values():
            if consumer.queue == queue and msg_id in consumer.held:
                return {"redelivered": consumer.held[msg_id][1] > 1, "dead_letter_reason": None}
        return None

    @operation
    def delivery_count(self, queue: str, msg_id: str) -> int:
        for consumer in self.consumers.values():
            if consumer.queue == queue and msg_id in consumer.held:
                return consumer.held[msg_id][1]
        raise NotObservable("Artemis shows a delivery count only with a delivery (AMQP header "
                            "delivery-count); management lists no counts")

    def _broker_id(self, q: _Queue, msg_id: str) -> int | None:
        """The broker's message id of logical `msg_id` stored in queue `q` (pending, scheduled or
        delivering), or None."""
        mgmt = self._mgmt()
        mbean = self._queue_mbean(q)
        listed, scheduled, delivering = mgmt.bulk([
            {"type": "exec", "mbean": mbean, "operation": op, "arguments": args}
            for op, args in (("listMessages(java.lang.String)", [""]), ("listScheduledMessages()", []),
                             ("listDeliveringMessages()", []))])
        everything = [*listed, *scheduled, *(m for ms in delivering.values() for m in ms)]
        for message in everything:
            if str(message.get(ID_PROPERTY)) == msg_id:
                return int(message["messageID"])
        return None

    @operation(name="delete")
    def delete_message(self, queue: str, msg_id: str) -> bool:
        """DELIVERY-31..33: QueueControl#removeMessage(id) (QueueImpl#deleteReference: the pending list,
        then the scheduled ones; a delivering message is not found); False when the queue stores no
        message with that id."""
        q = self._queue(queue)
        broker_id = self._broker_id(q, msg_id)
        if broker_id is None:
            return False
        mgmt = self._mgmt()
        deleted = bool(mgmt.exec(self._queue_mbean(q),
                                 "removeMessage(long)", broker_id))
        self._settle_queue(queue)
        return deleted

    @operation
    def set_ring_size(self, queue: str, size: int) -> None:
        q = self._queue(queue)
        if size < -1:
            raise Refused("ring_size must be -1 or >= 0")
        body = {"name": q.physical, "address": q.physical_address, "routing-type": q.routing.upper(),
                "ring-size": size}
        mgmt = self._mgmt()
        mgmt.exec(mgmt.broker, "updateQueue(java.lang.String)", json.dumps(body))
        self._settle_queue(queue)
