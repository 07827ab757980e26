"""The adapter contract: what every implementation under test offers the suite.

One `typing.Protocol` (:class:`Adapter`) plus small attrs value types. Every call returns a
:class:`Result`: ``ok`` (done, with its value), ``fail`` (definitely not done, with the
implementation's error) or ``info`` (unknown: timeout, lost connection). An adapter declares the
profile it claims and its capabilities; a rule that needs a missing capability is *not applicable*.

docs/contract.md is the adapter writer's reference: every operation with its arguments, defaults and
answers, the `call` operations, consumer windows and the lifecycle (one instance serves every
example; ``open()`` resets all state). The constants below list the answers it documents, and
mqconform/operations.py those of the `call` operations (tests/conformance/test_contract_doc.py
checks both against the reference adapter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, Protocol, runtime_checkable

import attrs

from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.options import ModelOptions

ResultType = Literal["ok", "fail", "info"]

#: Counter names an adapter may be able to observe (capability "counter:<name>").
COUNTERS = ("message_count", "pending_count", "delivering_count", "scheduled_count", "paged_count",
            "added", "acknowledged", "replaced", "killed", "expired")

#: DELIVERY-27..29: what ``call("consumer_state", queue=...)`` answers (capability and model feature
#: `consumer_state`): the queue's durable consumer as JetStream's ConsumerInfo shows it.
CONSUMER_STATE_KEYS = ("num_pending", "num_ack_pending", "num_redelivered", "delivered_consumer_seq",
                       "delivered_stream_seq", "ack_floor_consumer_seq", "ack_floor_stream_seq")

#: Capabilities beyond the model features of ModelOptions.FEATURES. Consumer modes:
#: `window_bytes` = Artemis-style byte/message windows (push), `consumer_pull` = window 0 (a receive
#: pulls one message), `consumer_prefetch` = unbounded window with `max_unacked` (AMQP basic.qos),
#: `max_unacked` = a bound on delivered-but-unacknowledged messages with pull consumers.
#: `ring_zero` = a ring (max length) of 0 is possible (NATS max_msgs 0 means unlimited: not offered).
#: Gated by the driver, so an adapter without them needs nothing new: `overflow:<policy>` =
#: the queue declaration's `overflow` policy is honoured (RING-28); features `max_length_bytes`
#: (QueueConfig.max_length_bytes), `nack_reject` / `nack_multiple` = nack() takes `requeue=False` /
#: `multiple=True` keywords (passed only when not the default); `message_ttl` = QueueConfig.message_ttl_ms
#: and `per_message_ttl` = Message.ttl_ms are honoured on the adapter's clock (EXPIRY-1/2), each passed
#: only with the capability; `expiry_address` = QueueConfig.expiry_address (EXPIRY-6); `consumer_priority` =
#: ConsumerConfig.priority (DELIVERY-25), `single_active_consumer` = QueueConfig.single_active_consumer
#: (DELIVERY-26), each passed only when not the default; `max_per_subject` = QueueConfig.max_per_subject,
#: discard_new_per_subject and Message.subject (RING-31..33, JetStream per-subject limits).
#: The model feature `restart` (profiles jetstream, activemq-classic) =
#: ``call("restart", mode="graceful"|"kill")`` restarts the implementation (SIGTERM or SIGKILL) on
#: its own store and returns once it serves again, the adapter reconnected; consumers the profile
#: keeps (RESTART-3) stay usable, the others are gone (RESTART-2). `stream_state` =
#: ``call("stream_state", queue=...)`` answers the queue in JetStream's terms (RESTART-5: msgs,
#: first_seq, last_seq, num_deleted, num_pending, num_ack_pending, num_redelivered, delivered_seq,
#: ack_floor_seq; see reference_model/restart.py stream_state).
EXTRA_CAPABILITIES = frozenset(
    {"queues", "throttle", "admission", "storage", "advance_time", "paging_flag", "pending_order",
     "consumer_pull", "consumer_prefetch", "max_unacked", "ring_zero", "sessions",
     # several consumers of one queue, each with its own window and max_unacked (DELIVERY-5); without
     # it the extra consumers of a queue share the first one's settings and none has max_unacked
     "independent_consumers",
     # DELIVERY-26: the consumers of a single_active_consumer queue each have their own window and
     # max_unacked even without independent_consumers (only the active one is served, so what keeps
     # them from being independent on another queue, e.g. a nack's return racing its credit, cannot meet)
     "independent_single_active",
     # DELIVERY-22: an ack/nack of a message the consumer does not hold reaches the broker, and the
     # adapter reports the broker's answer (and its consequences) as the claimed profile models them
     "invalid_ack",
     # DELIVERY-23: message_info(queue, msg_id) of a held message answers its delivery's
     # redelivered flag / the reason it was dead-lettered for (expect key `message`)
     "redelivered_flag", "dead_letter_reason",
     # RESTART-5, the queue in JetStream's terms
     "stream_state",
     # DELIVERY-48: a move by id finds a scheduled or paged message too (Artemis 2.53.0+, ARTEMIS-5376);
     # without it an adapter that offers `move` is held to the pending-only answer (WITHOUT_CAPABILITY)
     "move_listed"}
    # operations an adapter offers only with the capability, as methods of their own:
    # in_progress(consumer, msg_id) with `ack_wait`, purge(queue) -> int with `purge`, and
    # nack(..., delay_ms=) with `nack_delay` (see mqconform.operations)
    | {f"counter:{name}" for name in COUNTERS}
)

#: what the contract asks of an adapter *without* a capability, as model options: without
#: `invalid_ack` an ack or nack of a message the consumer does not hold answers `failed` and changes
#: nothing, whatever the claimed broker does with it (DELIVERY-8); without `move_listed` a move by id
#: finds a pending message only (DELIVERY-48: Artemis before 2.53.0) (docs/contract.md)
WITHOUT_CAPABILITY: Final[Mapping[str, Mapping[str, Any]]] = {"invalid_ack": {"invalid_ack": "refused"},
                                                              "move_listed": {"move_listed": False}}
#: a WITHOUT_CAPABILITY entry asked only of an adapter that has this capability (the option is about
#: an operation the others do not offer)
ONLY_WITH: Final[Mapping[str, str]] = {"move_listed": "move"}


def contract_changes(options: ModelOptions, capabilities: frozenset[str] | set[str]) -> dict[str, Any]:
    """The model options (of ModelOptions `options`) that an adapter with `capabilities` is held to
    in place of the claimed profile's (see WITHOUT_CAPABILITY); empty when there are none."""
    changes: dict[str, Any] = {}
    for capability, wanted in WITHOUT_CAPABILITY.items():
        offered = ONLY_WITH.get(capability)
        if capability in capabilities or (offered is not None and offered not in capabilities):
            continue
        changes.update({k: v for k, v in wanted.items() if getattr(options, k) != v})
    return changes


def model_for(options: ModelOptions, capabilities: frozenset[str] | set[str]) -> ModelOptions:
    """The claimed profile's ModelOptions as the contract applies them to an adapter with
    `capabilities` (the profile itself unless a capability is missing; see WITHOUT_CAPABILITY)."""
    changes = contract_changes(options, capabilities)
    return options.evolve(**changes) if changes else options


#: The error prefix of an observation the adapter cannot make in the current state, although it has
#: the capability (e.g. the delivery count of a message it does not hold): ``fail("not observable:
#: <why>")``. The suite treats it as *not applicable* for that one observation: the check is not
#: evidenced by that step (it never counts as a pass on its own) and the run goes on.
NOT_OBSERVABLE = "not observable"
#: What `send` answers (docs/contract.md "send answers").
SEND_RESULTS = ("accepted", "paged", "dropped", "failed", "blocked")
#: What `ack` and `nack` answer; `failed` must change nothing (DELIVERY-8).
ACK_RESULTS = ("ok", "failed")


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

    @classmethod
    def not_observable(cls, why: str) -> Result:
        """An observation the adapter cannot make in this state (see NOT_OBSERVABLE)."""
        return cls("fail", None, f"{NOT_OBSERVABLE}: {why}")

    @property
    def is_ok(self) -> bool:
        return self.type == "ok"

    @property
    def is_not_observable(self) -> bool:
        return self.type == "fail" and (self.error or "").startswith(f"{NOT_OBSERVABLE}:")


@attrs.define
class ClockLead:
    """How far (ms) an implementation's real clock ran ahead of the logical time of an example or a
    scenario, the most of what was measured (its adapter's ``clock_lead_ms``, when it has one), and
    the margin a timer comparison allows (``limit_ms``; None: not measured, never past). A failing
    comparison after the clock ran past its margin is not judged: the driver discards the example,
    the scenario runner says ``unknown``. Nor is one on an implementation with a real clock (an
    adapter with ``clock_lead_ms``) after timers started at different logical instants came due at
    the same one on the model (``tie_ms``, the model's ``timer_tie_ms``): their order on a real clock
    is decided by how long the operations between took, whatever the margin."""

    limit_ms: float | None = None
    ms: float = 0.0
    #: the implementation has a real clock (its adapter measures its lead)
    real_clock: bool = False
    tie_ms: int | None = None

    def measure(self, adapter: object) -> None:
        lead = getattr(adapter, "clock_lead_ms", None)
        if lead is None:
            return
        self.real_clock = True
        if self.limit_ms is not None:
            self.ms = max(self.ms, lead())

    def note_tie(self, model: object) -> None:
        """Read the model's first tie of timers (a ReferenceAdapter's broker ``timer_tie_ms``)."""
        broker = getattr(getattr(model, "world", None), "broker", None)
        if self.tie_ms is None:
            self.tie_ms = getattr(broker, "timer_tie_ms", None)

    @property
    def ran_past(self) -> bool:
        return self.limit_ms is not None and self.ms > self.limit_ms

    @property
    def undecided(self) -> bool:
        """A failing timer comparison now says nothing about the implementation's rules."""
        return self.ran_past or (self.real_clock and self.tie_ms is not None)

    def why(self) -> str:
        """Why a comparison is not judged (when ``undecided``)."""
        if self.ran_past:
            return (f"the implementation's clock ran {self.ms:.0f} ms ahead of the model's "
                    f"(margin {self.limit_ms:g})")
        return (f"timers started at different logical instants came due together at {self.tie_ms} ms: "
                f"on a real clock the operations' own time decides which is first")


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
    shared broker maps them to unique physical names (its namespace) and removes them in close().

    Lifecycle: one instance serves every example of a run (and every file of `mqconform scenario`);
    ``open(namespace)`` comes before each and must reset all state, ``close()`` after each.
    Answers (ok values): declare_*, open_consumer, commit, rollback, close_consumer,
    set_ring_size, advance -> None; send -> one of SEND_RESULTS; receive -> the id or None (a push
    consumer takes its next dispatched message, a window-0 consumer pulls one); ack, nack -> one of
    ACK_RESULTS (an ack of a message dispatched but not yet received is ``failed``); browse and
    pending_ids -> ids in delivery order; counters -> {counter: int} for its ``counter:<name>``
    capabilities; delivery_count -> int or None; paging -> bool. See docs/contract.md.
    """

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
        """Gated operations by name (mqconform.operations.CALL_OPS): close_session (capability
        `sessions`), the flow-control components throttle, offer, complete, throttle_state, admission,
        submit, take, lock, request, and storage: store, put, remove, open_requester, close_requester,
        truncate, store_state, locate. Arguments, defaults and answers: docs/contract.md. An adapter
        without the capability returns Result.fail('unsupported: ...')."""
        ...


#: the methods of the protocol, in its order
REQUIRED_METHODS = tuple(name for name, value in vars(Adapter).items()
                         if callable(value) and not name.startswith("_"))


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
