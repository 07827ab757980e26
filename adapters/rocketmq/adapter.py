"""Apache RocketMQ 5.x: broker fast failure (the admission area), step by step on a real broker, and
queues (the delivery area) consumed by POP.

The broker runs under the adapter's driver (``driver/BrokerDriver.java``, started by :mod:`.server`):
its send and pull threads hold until the adapter takes a request, its fast-failure tick runs at the
instants of a logical clock, and its three clock reads that fast failure depends on read that clock.
So the model's component maps one to one: ``admission`` (a reset: waits, capacities, busy time,
scan start), ``submit`` (a SEND_MESSAGE or PULL_MESSAGE request over the remoting protocol, answered
at once or queued), ``take`` (the worker runs the head), ``lock`` (the put-lock hold the page-cache
predicate reads), ``advance`` (the broker's tick at each tick instant passed) and ``request`` (the
answer the client received, at the logical instant it came). docs/adapters/rocketmq.md says what is
the broker's code and what is the driver's.

Queues (driver/Queues.java, outside an admission the send and pull threads run freely): an address
is a topic of one read/write queue, a queue a consumer group of it (set to the topic's end at its
declaration), a consumer a pop consumer (``window_bytes`` 0): ``receive`` is one POP_MESSAGE of at most
one message (of the group's retry topic while it holds messages not yet popped, else of the topic),
``ack`` its ACK_MESSAGE (invalid acks are refused here), ``close`` makes what it holds visible at once
(CHANGE_MESSAGE_INVISIBLETIME 0, in the order received) and waits for the broker's revive into the
group's retry topic: the profile's returns FIFO (REDELIVERY-42). No counters (not exact on the broker).

The adapter claims the ``rocketmq`` profile: the seeds' admission semantics (the ADMISSION rules
name it) and the delivery rules every profile has (the Artemis queue semantics; where RocketMQ
differs, docs/adapters/rocketmq.md).

Options: ``version`` (a served 5.x release, default :data:`.server.DEFAULT_VERSION`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig

from .._base import BrokerAdapter, Refused, Unsupported, component, operation
from .._process import LOOPBACK
from ..contract import AdapterError, Result
from .server import DEFAULT_VERSION, SERVED, RocketMQServer, shared_server

CAPABILITIES = frozenset({"admission", "advance_time", "queues", "consumer_pull"})
#: the model's request queues the driver drives (the broker's send and pull thread pool queues)
DRIVEN = ("send", "pull")
#: a control answer can wait for the broker's answers to a tick (the driver bounds each at 10 s)
CONTROL_TIMEOUT_S = 60.0


class DriverError(Exception):
    """The broker driver answered ``ok: false``."""


class Control:
    """One line-protocol connection to the broker driver's control port."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection((LOOPBACK, port), timeout=CONTROL_TIMEOUT_S)
        self.reader = self.sock.makefile("rb")

    def ask(self, op: str, **args: Any) -> Any:
        try:
            self.sock.sendall(json.dumps({"op": op, **args}).encode() + b"\n")
            line = self.reader.readline()
        except OSError as exc:
            raise AdapterError(f"rocketmq: the broker driver is gone: {exc}") from None
        if not line:
            raise AdapterError("rocketmq: the broker driver closed the control connection")
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise DriverError(str(answer.get("error")))
        return answer.get("result")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class RocketMQAdapter(BrokerAdapter):
    name = "rocketmq"
    profile = "rocketmq"
    #: advance moves the driver's logical clock: nothing sleeps
    real_time = False
    #: shutdown() drops the control connection; the shared broker stays up (stopped at exit)
    SHUTDOWN_ENDS: ClassVar[Mapping[str, str]] = {"control": "close"}

    def __init__(self, version: str = DEFAULT_VERSION) -> None:
        if version not in SERVED:
            raise TypeError(f"version {version!r} is not served (served: {', '.join(SERVED)})")
        self.version = version
        self.capabilities = CAPABILITIES
        self.server: RocketMQServer | None = None
        self.control: Control | None = None
        self.server_version = ""
        self._reset()

    def _reset(self) -> None:
        super()._reset()
        self.declared = False
        self.name_of_admission = "broker"

    def _classify(self, op: str, exc: Exception) -> Result | None:
        if isinstance(exc, DriverError):
            return Result.info(f"{op}: the broker driver failed: {exc}")
        return None

    # ------------------------------------------------------------------ life cycle
    def open(self, namespace: str) -> None:
        """Start (or reuse) the process-wide name server and broker and connect to its driver."""
        self._reset()
        self.namespace = namespace
        self.token = uuid.uuid4().hex
        if self.server is None or not self.server.running():
            self.server = shared_server(self.version)
            if self.control is not None:
                self.control.close()
                self.control = None
        if self.control is None:
            assert self.server.broker is not None
            port = self.server.broker.control_port()
            if port is None:
                raise AdapterError("rocketmq: the broker driver has no control port")
            self.control = Control(port)
        self._ask("free")  # the queues' mode until an admission holds the send and pull threads
        self.server_version = self.version

    def close(self) -> None:
        """Remove what the example created (its groups, their retry topics, its topics); what a consumer
        still held stays invisible in a deleted group (HELD_MS in the driver: an hour)."""
        if self.control is not None and self.addresses:
            topics = [f"{self._names()}-{address}" for address in self.addresses]
            groups = [{"group": q["group"], "topic": q["topic"]} for q in self.queues.values()]
            # an aborted example's leftovers: its names are its own (the namespace), nothing else reads them
            with contextlib.suppress(DriverError, AdapterError):
                self._ask("drop", topics=topics, groups=groups)
        self._reset()

    def _ask(self, op: str, **args: Any) -> Any:
        if self.control is None:
            raise AdapterError("rocketmq: not open")
        return self.control.ask(op, **args)

    # ------------------------------------------------------------------ the admission component
    @component("admission")
    @operation(name="admission")
    def _admission(self, /, name: str = "broker", scan_start_ms: int = 1000, scan_period_ms: int = 10,
                   enabled: bool = True, busy_after_ms: int = 1000,
                   queues: dict[str, dict[str, int]] | None = None, **rest: Any) -> None:
        if rest:
            raise Unsupported(f"admission settings {sorted(rest)} (the broker's bound is fixed)")
        if self.declared:
            raise Unsupported("a second admission (the broker has one set of request queues)")
        given = dict(queues or {})
        if set(given) - set(DRIVEN):
            raise Unsupported(f"queues {sorted(set(given) - set(DRIVEN))} (the driver drives send and pull)")
        for queue in DRIVEN:  # a queue not given has the seed's default (ADMISSION-4, ADMISSION-8)
            given.setdefault(queue, {"wait_ms": 200, "capacity": 10_000} if queue == "send"
                             else {"wait_ms": 5_000, "capacity": 100_000})
        self._ask("reset", scan_start_ms=scan_start_ms, scan_period_ms=scan_period_ms, enabled=enabled,
                  busy_after_ms=busy_after_ms, queues=given)
        self.name_of_admission = name
        self.declared = True

    def _driven(self, queue: str, admission: str | None) -> None:
        if not self.declared:
            raise Refused("no admission declared")
        if admission not in (None, self.name_of_admission):
            raise Refused(f"unknown admission {admission!r}")
        if queue not in DRIVEN:
            raise Unsupported(f"the {queue} queue (the driver drives send and pull)")

    @component("submit")
    @operation(name="submit")
    def _submit(self, queue: str, id: str, admission: str | None = None) -> str:
        self._driven(queue, admission)
        return str(self._ask("submit", queue=queue, id=str(id)))

    @component("take")
    @operation(name="take")
    def _take(self, queue: str, admission: str | None = None) -> str | None:
        self._driven(queue, admission)
        taken = self._ask("take", queue=queue)
        return None if taken is None else str(taken)

    @component("lock")
    @operation(name="lock")
    def _lock(self, state: str, admission: str | None = None) -> None:
        if state not in ("held", "released"):
            raise Refused("lock is held or released")
        self._driven("send", admission)
        self._ask("lock", held=state == "held")

    @component("request")
    @operation(name="request")
    def _request(self, id: str, admission: str | None = None) -> dict[str, Any] | None:
        self._driven("send", admission)
        answer: dict[str, Any] | None = self._ask("request", id=str(id))
        return answer

    @operation
    def advance(self, ms: int) -> None:
        if ms < 0:
            raise Refused("advance needs ms >= 0")
        if self.declared:
            self._ask("advance", ms=int(ms))
        self._clock_ms += ms

    # ------------------------------------------------------------------ the queues (POP)
    def _names(self) -> str:
        """The open()'s physical prefix: short (a retry topic is ``%RETRY%<group>_<topic>``) and new at
        every open, also for a namespace seen before (a replay): the broker keeps a deleted group's
        pop offsets in memory (PopBufferMergeService, by topic@group@queue), and a group re-created
        under the same name would start past its first messages."""
        return "mqc" + hashlib.sha1(f"{self.namespace}/{self.token}".encode()).hexdigest()[:10]

    def _topic(self, address: str) -> str:
        if address not in self.addresses:
            self._ask("topic", topic=f"{self._names()}-{address}")
            self.addresses[address] = []
        return f"{self._names()}-{address}"

    @operation
    def declare_address(self, config: AddressConfig) -> None:
        if config != AddressConfig(name=config.name):
            raise Unsupported("address settings (a topic has no size limits, paging or retention here)")
        if config.name in self.addresses:
            raise Refused(f"address {config.name!r} already exists")
        self._topic(config.name)

    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        if config.name in self.queues:
            raise Refused(f"queue {config.name!r} already exists")
        # max_delivery_attempts is accepted and never reached: the broker's revive re-puts a message
        # without a limit (PopReviveService#reviveRetry), and with the operations offered here (no nack,
        # rollback or session close) the model's delivery count of a returned message is undone at the
        # close (REDELIVERY-8), so no limit of 1 or more is ever reached on either side
        plain = QueueConfig(name=config.name, address=config.address,
                            max_delivery_attempts=config.max_delivery_attempts)
        if config != plain:
            raise Unsupported("queue settings (a consumer group of a topic: no ring, filter, redelivery "
                              "delay, dead-letter address or last value here)")
        address = config.address_name
        topic = self._topic(address)
        group = f"{self._names()}-{config.name}"
        self._ask("group", group=group, topic=topic)  # the group starts at the topic's end
        self.queues[config.name] = {"group": group, "topic": topic}
        self.addresses[address].append(config.name)

    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        if config.name in self.consumers:
            raise Refused(f"consumer {config.name!r} already exists")
        self._queue(config.queue)
        if config != ConsumerConfig(name=config.name, queue=config.queue, window_bytes=0):
            raise Unsupported("consumer settings (a pop consumer: window_bytes 0 and nothing else)")
        #: what the consumer holds unacknowledged, in the order it received them: id -> pop receipt
        self.consumers[config.name] = {"queue": config.queue, "held": {}}

    @operation
    def send(self, to: str, message: Message) -> str:
        queues = self._route(to, message)  # scheduled delivery: unsupported
        if message.ttl_ms is not None or message.subject is not None or message.properties:
            raise Unsupported("message TTLs, subjects and properties")
        answer = str(self._ask("send", topic=self._topic(to), id=message.id))
        if answer != "accepted":
            raise Refused(f"send: the broker answered {answer}")
        del queues  # every group of the topic reads it from its own offset
        return "accepted"

    @operation
    def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        queue = self._queue(state["queue"])
        got: dict[str, Any] | None = self._ask("pop", group=queue["group"], topic=queue["topic"])
        if got is None:
            return None
        msg_id = str(got["id"])
        state["held"][msg_id] = got  # in the order received: the order a close gives them back in
        return msg_id

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        if tx:
            raise Unsupported("transactions")
        state = self._consumer(consumer)
        receipt = state["held"].get(msg_id)
        if receipt is None:
            return "failed"  # DELIVERY-8: not held by this consumer (refused here, nothing sent)
        queue = self._queue(state["queue"])
        # the topic it was popped from: the queue's topic or the group's retry topic
        answer = str(self._ask("ack", group=queue["group"], topic=receipt["topic"], handle=receipt["handle"]))
        if answer != "ok":
            raise Refused(f"ack: the broker answered {answer}")
        del state["held"][msg_id]
        return "ok"

    @operation
    def close_consumer(self, consumer: str) -> None:
        """What the consumer holds becomes visible again at once, in the order it received it, and the
        close returns once the broker's revive service has put all of it into the group's retry topic
        (a FIFO a receive reads first: the profile's returns, oldest first)."""
        state = self._consumer(consumer)
        queue = self._queue(state["queue"])
        held = list(state["held"].values())
        if held:
            self._ask("return", group=queue["group"], topic=queue["topic"], held=held)
        del self.consumers[consumer]
