"""The adapter contract: what every implementation under test offers the suite.

One `typing.Protocol` (:class:`Adapter`) plus small attrs value types. Every call returns a
:class:`Result`: ``ok`` (done, with its value), ``fail`` (definitely not done, with the
implementation's error) or ``info`` (unknown: timeout, lost connection). An adapter declares the
profile it claims and its capabilities; a rule that needs a missing capability is *not applicable*.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

import attrs
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig

ResultType = Literal["ok", "fail", "info"]

#: Counter names an adapter may be able to observe (capability "counter:<name>").
COUNTERS = ("message_count", "pending_count", "delivering_count", "scheduled_count", "paged_count",
            "added", "acknowledged", "replaced", "killed")

#: Capabilities beyond the model features of ModelOptions.FEATURES. Consumer modes:
#: `window_bytes` = Artemis-style byte/message windows (push), `consumer_pull` = window 0 (a receive
#: pulls one message), `consumer_prefetch` = unbounded window with `max_unacked` (AMQP basic.qos),
#: `max_unacked` = a bound on delivered-but-unacknowledged messages with pull consumers.
#: `ring_zero` = a ring (max length) of 0 is possible (NATS max_msgs 0 means unlimited: not offered).
EXTRA_CAPABILITIES = frozenset(
    {"queues", "throttle", "admission", "storage", "advance_time", "paging_flag", "pending_order",
     "consumer_pull", "consumer_prefetch", "max_unacked", "ring_zero"}
    | {f"counter:{name}" for name in COUNTERS}
)


@attrs.frozen
class Result:
    """The outcome of one adapter call."""

    type: ResultType
    value: Any = None
    error: str | None = None

    @classmethod
    def ok(cls, value: Any = None) -> Result:
        return cls("ok", value)

    @classmethod
    def fail(cls, error: str) -> Result:
        return cls("fail", None, error)

    @classmethod
    def info(cls, error: str) -> Result:
        return cls("info", None, error)

    @property
    def is_ok(self) -> bool:
        return self.type == "ok"


class AdapterError(Exception):
    """The adapter cannot work at all (broker down, bad URL): an infrastructure problem, exit 3."""


@attrs.frozen
class ThrottleSpec:
    name: str
    max_sessions: int
    low_equals_high: bool = False
    block_rule: Literal["gt", "ge"] = "gt"


@runtime_checkable
class Adapter(Protocol):
    """What an implementation under test offers. Names passed in are logical; an adapter for a
    shared broker maps them to unique physical names (its namespace) and removes them in close()."""

    name: str
    #: the profile the implementation claims to follow (a name from reference_model.profiles)
    profile: str
    #: what it can do and observe: model features (ModelOptions.FEATURES) and EXTRA_CAPABILITIES
    capabilities: frozenset[str]

    def open(self, namespace: str) -> None: ...
    def close(self) -> None: ...

    def declare_address(self, config: AddressConfig) -> Result: ...
    def declare_queue(self, config: QueueConfig) -> Result: ...
    def open_consumer(self, config: ConsumerConfig) -> Result: ...
    def send(self, to: str, message: Message) -> Result: ...
    def receive(self, consumer: str) -> Result: ...
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> Result: ...
    def nack(self, consumer: str, msg_id: str) -> Result: ...
    def commit(self, consumer: str) -> Result: ...
    def rollback(self, consumer: str) -> Result: ...
    def close_consumer(self, consumer: str) -> Result: ...
    def browse(self, queue: str) -> Result: ...
    def counters(self, queue: str) -> Result: ...
    def set_ring_size(self, queue: str, size: int) -> Result: ...
    def advance(self, ms: int) -> Result: ...
    def delivery_count(self, queue: str, msg_id: str) -> Result: ...
    def paging(self, address: str) -> Result: ...
    def pending_ids(self, queue: str) -> Result: ...

    def call(self, op: str, **kwargs: Any) -> Result:
        """Flow-control components by name: throttle, offer, complete, throttle_state, admission,
        submit, take, lock, request, store, put, remove, open_requester, close_requester, truncate,
        store_state. An adapter without the capability returns Result.fail('unsupported')."""
        ...


REQUIRED_METHODS = ("open", "close", "declare_address", "declare_queue", "open_consumer", "send",
                    "receive", "ack", "nack", "commit", "rollback", "close_consumer", "browse",
                    "counters", "set_ring_size", "advance", "delivery_count", "paging", "pending_ids",
                    "call")


def contract_violation(obj: object) -> str | None:
    """None when `obj` meets the contract, else a sentence naming what is missing."""
    for attr in ("name", "profile", "capabilities"):
        if not hasattr(obj, attr):
            return f"has no attribute {attr!r}"
    for method in REQUIRED_METHODS:
        if not callable(getattr(obj, method, None)):
            return f"has no method {method}()"
    caps = obj.capabilities  # type: ignore[attr-defined]
    if not isinstance(caps, frozenset | set):
        return "capabilities must be a set of strings"
    return None
