"""Apache RocketMQ 5.x: broker fast failure (the admission area) on a real name server and broker.

What it offers is one capability, ``admission_load``: ``call("admission_load", enabled=, wait_ms=,
count=, size=)`` sets ``brokerFastFailureEnable`` and ``waitTimeMillsInSendQueue`` on the running
broker (both are read on every scan tick, ADMISSION-4), creates a fresh topic with one queue, sends
`count` messages of `size` bytes as concurrent asynchronous sends without client retries, and
answers every send's answer (``ok``, ``busy`` with code and remark, ``refused`` with another code, or
``error``: no answer from the broker, outcome unknown) together with the ids a reader finds stored
in the topic, in order. The model's logical operations (submit, take, lock at chosen instants) cannot
be driven on a real clock, so the admission machine checks the properties that hold whatever the
timing (see mqconform/conformance/machines/admission.py). Queues, consumers and the other areas are
not offered.

The adapter claims the ``rocketmq`` profile: the seeds' admission semantics (the ADMISSION rules
name it) and the delivery rules every profile has, which it does not drive (no queues).

Options: ``version`` (a served 5.x release, default :data:`.server.DEFAULT_VERSION`).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig

from .._base import BrokerAdapter, Refused, Unsupported, operation
from ..contract import AdapterError, Result
from .driver import Driver, DriverError
from .server import DEFAULT_VERSION, SERVED, RocketMQServer, shared_server

CAPABILITIES = frozenset({"admission_load"})
#: the largest load one call sends (the send queue holds 10,000, ADMISSION-8: stay below it)
MAX_COUNT = 5000
MAX_SIZE = 1 << 20


class RocketMQAdapter(BrokerAdapter):
    name = "rocketmq"
    profile = "rocketmq"
    real_time = True

    def __init__(self, version: str = DEFAULT_VERSION) -> None:
        if version not in SERVED:
            raise TypeError(f"version {version!r} is not served (served: {', '.join(SERVED)})")
        self.version = version
        self.capabilities = CAPABILITIES
        self.server: RocketMQServer | None = None
        self.driver: Driver | None = None
        self.server_version = ""
        self._reset()

    def _classify(self, op: str, exc: Exception) -> Result | None:
        if isinstance(exc, DriverError):
            return Result.info(f"{op}: the client failed: {exc}")
        return None

    # ------------------------------------------------------------------ life cycle
    def open(self, namespace: str) -> None:
        """Start (or reuse) the process-wide name server and broker and one client."""
        self._reset()
        self.namespace = namespace
        if self.server is None or not self.server.running():
            self.server = shared_server(self.version)
            if self.driver is not None:
                self.driver.close()
                self.driver = None
        if self.driver is None or self.driver.process.poll() is not None:
            assert self.server.broker is not None and self.server.broker.workdir is not None
            self.driver = Driver(self.server.lib, self.server.namesrv_addr,
                                 Path(self.server.broker.workdir) / "driver.log")
        self.server_version = self.version

    def close(self) -> None:
        self._reset()

    def shutdown(self) -> None:
        """close() and end the client; the shared broker stays up for the process (stopped at exit)."""
        self.close()
        if self.driver is not None:
            self.driver.close()
            self.driver = None

    # ------------------------------------------------------------------ the one component
    def call(self, op: str, **kwargs: Any) -> Result:
        if op != "admission_load":
            return super().call(op, **kwargs)
        return self._do(op, lambda: self._load(**kwargs))

    def _load(self, enabled: bool, wait_ms: int, count: int, size: int) -> dict[str, Any]:
        if not (1 <= count <= MAX_COUNT and 1 <= size <= MAX_SIZE and wait_ms >= 0):
            raise Refused(f"admission_load: count 1..{MAX_COUNT}, size 1..{MAX_SIZE}, wait_ms >= 0")
        if self.driver is None or self.server is None:
            raise AdapterError("rocketmq: not open")
        props = {"brokerFastFailureEnable": str(enabled).lower(), "waitTimeMillsInSendQueue": str(wait_ms)}
        seen = self.driver.ask({"op": "config", "broker": self.server.broker_addr, "props": props})["config"]
        if seen != props:
            raise DriverError(f"the broker kept {seen}, not {props}")
        topic = f"mqc-{uuid.uuid4().hex[:12]}"
        self.driver.ask({"op": "create_topic", "topic": topic})
        answers = self.driver.ask({"op": "load", "topic": topic, "prefix": "m", "count": count,
                                   "size": size})["answers"]
        stored = self.driver.ask({"op": "read", "topic": topic})["ids"]
        return {"topic": topic, "answers": answers, "stored": stored}

    # ------------------------------------------------------------------ no queues
    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        raise Unsupported("queues (the rocketmq adapter offers the admission area only)")

    @operation
    def declare_address(self, config: AddressConfig) -> None:
        raise Unsupported("addresses (the rocketmq adapter offers the admission area only)")

    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        raise Unsupported("consumers (the rocketmq adapter offers the admission area only)")

    @operation
    def send(self, to: str, message: Message) -> None:
        raise Unsupported("queue sends (the rocketmq adapter offers the admission area only)")

    @operation
    def receive(self, consumer: str) -> None:
        raise Unsupported("consumers (the rocketmq adapter offers the admission area only)")

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> None:
        raise Unsupported("consumers (the rocketmq adapter offers the admission area only)")
