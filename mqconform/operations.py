"""Every operation once: its name, arguments, how an adapter runs it and how the model does.

:data:`OPERATIONS` is the one table. The scenario language (scenario/schema.py), the driver, the
scenario runner, the soak workload and the timeline run operations through :func:`call_operation`;
the `call` operations' answers (:data:`CALL_OPS`, :data:`CALL_RESULTS`) are listed here for
docs/contract.md; the model runs call operations with the functions of reference_model/calls.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from mqconform.adapters.contract import CONSUMER_STATE_KEYS, Adapter, Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model import calls as model
from mqconform.reference_model.calls import ModelCall
from mqconform.reference_model.config import (
    DEFAULT_PRIORITY,
    AddressConfig,
    ConsumerConfig,
    Message,
    QueueConfig,
)
from mqconform.reference_model.profiles import PROFILES

#: argument kinds: "str", "id" (str or int, stored as str), "int", "num", "bool", "map", "list",
#: "any", a tuple of allowed literal values; a trailing "?" allows null.
Kind = str | tuple[Any, ...]
#: how an adapter runs an operation with its scenario arguments
Run = Callable[[Adapter, Any], Result]


@attrs.frozen
class Field:
    kind: Kind
    required: bool = False
    default: Any = None


@attrs.frozen
class Operation:
    """One operation. Its scenario argument is a scalar (`scalar` names its kind) or a mapping of
    `fields`; an operation with neither is a `call` observation, not part of the scenario language.
    Defaults shown in `fields` are documentation only: a declaration passes the keys the file gives,
    and the model's configuration classes hold the same defaults."""

    name: str
    fields: Mapping[str, Field] = attrs.field(factory=dict)
    scalar: Kind | None = None
    #: the declaration kind this op creates ("queue", "throttle", ...) with the field naming it
    declares: str | None = None
    #: arguments that must name a declared thing: (field, or "" for the scalar argument; its kind)
    references: tuple[tuple[str, str], ...] = ()
    #: capabilities the adapter needs (without them the answer is ``unsupported``, and an adapter
    #: needs no method or argument for it)
    needs: tuple[str, ...] = ()
    #: how an adapter runs it; None: ``adapter.call(name, ...)`` with the scenario arguments as
    #: keywords (a scalar argument as the keyword `keyword`)
    run: Run | None = None
    keyword: str | None = None
    #: a `call` operation (docs/contract.md "call operations"), with the keys of its value where that
    #: is a dict and its string answers
    call: bool = False
    answer_keys: tuple[str, ...] | None = None
    answers: tuple[str, ...] = ()
    #: how the model runs a call operation (reference_model/calls.py; None: only a real broker's)
    model: ModelCall | None = None
    #: its value is the point of the step (compared with the model's, shown even when null)
    compared: bool = False

    @property
    def in_scenario(self) -> bool:
        return self.scalar is not None or bool(self.fields)


def _f(kind: Kind, default: Any = None) -> Field:
    return Field(kind, False, default)


def _req(kind: Kind) -> Field:
    return Field(kind, True)


POLICIES: Final = ("PAGE", "DROP", "BLOCK", "FAIL")
#: RING-28: queue overflow policies in the brokers' words (a profile has some: overflow_policies)
OVERFLOW_POLICIES: Final = ("drop-head", "reject-publish", "reject-publish-dlx", "discard-old", "discard-new",
                            None)


# ---------------------------------------------------------------------- how an adapter runs them
def _message(args: Mapping[str, Any]) -> Message:
    return Message(id=args["id"], size=args.get("size", 100), priority=args.get("priority", DEFAULT_PRIORITY),
                   scheduled_at_ms=args.get("scheduled_at_ms"), properties=args.get("properties") or {},
                   ttl_ms=args.get("ttl_ms"), subject=args.get("subject"),
                   duplicate_id=args.get("duplicate_id"), group=args.get("group"))


def _missing(adapter: Adapter, needed: Iterable[str]) -> Result | None:
    """Result.fail('unsupported: ...') when the adapter lacks a capability the step needs."""
    missing = [cap for cap in needed if cap not in adapter.capabilities]
    return Result.fail(f"unsupported: {', '.join(missing)}") if missing else None


def _send_needs(args: dict[str, Any]) -> list[str]:
    """EXPIRY-2: a TTL only with ``per_message_ttl``; SCHED-13: a delivery time only with
    ``scheduling`` (the driver answers unsupported itself for an adapter without them)."""
    needs = ["per_message_ttl"] if args.get("ttl_ms") is not None else []
    if args.get("subject") is not None:
        needs.append("max_per_subject")  # RING-31
    if args.get("duplicate_id") is not None:
        needs.append("duplicate_id")  # EXPIRY-8
    if args.get("group") is not None:
        needs.append("message_groups")  # DELIVERY-49
    return needs + (["scheduling"] if args.get("scheduled_at_ms") else [])


def _send(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    refused = _missing(adapter, _send_needs(dict(args)))
    if refused is not None:
        return refused
    return adapter.send(args["to"], _message({k: v for k, v in args.items() if k != "to"}))


def _ack(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    return adapter.ack(args["consumer"], args["id"], args.get("tx", False))


def _default_delivery_limit(adapter: Adapter) -> int | None:
    """REDELIVERY-26: the delivery limit of a queue declared without one is the claimed profile's
    (None for the model: it applies its own options' default)."""
    if isinstance(adapter, ReferenceAdapter):
        return None
    known = PROFILES.get(getattr(adapter, "profile", ""))
    return 10 if known is None else known.default_delivery_limit


def _declare_queue(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """RING-27/28: a byte bound or an overflow policy needs the adapter's capability for it (an
    adapter without it sees neither); the delivery limit defaults to the profile's."""
    needed = [f"overflow:{args['overflow']}"] if args.get("overflow") is not None else []
    if args.get("max_length_bytes", -1) != -1:
        needed.append("max_length_bytes")
    for key, capability in (("message_ttl_ms", "message_ttl"), ("expiry_address", "expiry_address")):
        if args.get(key) is not None:  # EXPIRY-1, EXPIRY-6
            needed.append(capability)
    if args.get("single_active_consumer", False):
        needed.append("single_active_consumer")  # DELIVERY-26
    if args.get("max_per_subject", -1) != -1 or args.get("discard_new_per_subject", False):
        needed.append("max_per_subject")  # RING-31..33
    refused = _missing(adapter, needed)
    if refused is not None:
        return refused
    config = dict(args)
    if "max_delivery_attempts" not in config:
        config["max_delivery_attempts"] = _default_delivery_limit(adapter)
    return adapter.declare_queue(QueueConfig(**config))


def _join(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """RETENTION-9; DELIVERY-41..47: a priority policy only with its capability, ``priority_overflow``
    or ``priority_pinned`` (passed only when given, so an adapter without them needs no argument)."""
    extra: dict[str, Any] = {}
    if args.get("priority") is not None:
        refused = _missing(adapter, ["priority_pinned" if args["priority"] == "pinned_client"
                                     else "priority_overflow"])
        if refused is not None:
            return refused
        extra["priority"] = str(args["priority"])
    return adapter.call("join", name=str(args["name"]), address=str(args["address"]), **extra)


def _fetch(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """DELIVERY-38..40; DELIVERY-41..44: thresholds only with ``priority_overflow`` (passed only when
    not 0)."""
    extra = {key: int(args[key]) for key in ("min_pending", "min_ack_pending") if args.get(key)}
    if extra:
        refused = _missing(adapter, ["priority_overflow"])
        if refused is not None:
            return refused
    return adapter.call("fetch", consumer=str(args["consumer"]), batch=int(args["batch"]),
                        max_bytes=int(args.get("max_bytes", 0)), **extra)


def _declare_address(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """RETENTION-1..11: an address with a retention needs the ``retention`` capability."""
    refused = _missing(adapter, ["retention"]) if args.get("retention") is not None else None
    return refused if refused is not None else adapter.declare_address(AddressConfig(**args))


def _open_consumer(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """REDELIVERY-27 / 32 / DELIVERY-25: a consumer with an ack wait, a BackOff or a priority needs
    the adapter's capability for it (an adapter without it never sees the key)."""
    needed = ["ack_wait"] if args.get("ack_wait_ms") is not None else []
    if args.get("backoff_ms") is not None:  # REDELIVERY-32..35
        needed += ["ack_wait", "backoff"]
    if args.get("priority", 0) != 0:
        needed.append("consumer_priority")
    refused = _missing(adapter, needed)
    if refused is not None:
        return refused
    return adapter.open_consumer(ConsumerConfig(**args))


#: nack keyword -> (its default, the capability a non-default value needs)
NACK_FORMS = {"requeue": (True, "nack_reject"), "multiple": (False, "nack_multiple"),
              "delay_ms": (0, "nack_delay")}


def _nack(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """REDELIVERY-24/25: the forms of nack are passed only when not the default (an adapter without
    the capability needs no new argument)."""
    forms = {k: args[k] for k, (default, _) in NACK_FORMS.items() if k in args and args[k] != default}
    refused = _missing(adapter, [NACK_FORMS[k][1] for k in forms])
    if refused is not None:
        return refused
    return adapter.nack(args["consumer"], args["id"], **forms)  # type: ignore[call-arg]


def _batch(results: list[Result]) -> Result:
    """One Result for a batch: the first non-ok answer, else ok with the list of values."""
    for result in results:
        if not result.is_ok:
            return result
    return Result.ok([r.value for r in results])


def _each(call: Callable[[Any], Result], items: Iterable[Any], until_empty: bool = False) -> Result:
    """Run the single operations in order up to the first answer that is not ok (and, with
    `until_empty`, up to the first empty receive: a receive_batch ends where the queue has nothing
    more for the consumer, so a pull consumer never waits out its timeout more than once)."""
    results: list[Result] = []
    for item in items:
        result = call(item)
        results.append(result)
        if not result.is_ok or (until_empty and result.value is None):
            break
    return _batch(results)


BATCH_OPS = ("send_batch", "receive_batch", "ack_batch")


def batch_items(op: str, args: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The single operations a batch op stands for: send_batch, receive_batch, ack_batch."""
    if op == "send_batch":
        single = {k: v for k, v in args.items() if k != "ids"}
        return [("send", {**single, "id": str(msg_id)}) for msg_id in args["ids"]]
    if op == "receive_batch":
        return [("receive", args["consumer"])] * int(args["count"])
    if op == "ack_batch":
        return [("ack", {"consumer": args["consumer"], "id": str(msg_id)}) for msg_id in args["ids"]]
    raise ValueError(f"not a batch operation: {op!r}")


# ---------------------------------------------------------------------- the table
_CONSUMER = (("", "consumer"),)
_STORE = (("store", "store"),)
_STORE_STATE = ("used_bytes", "live", "free_slots", "index_entries", "blocks_used", "last_message")

OPERATIONS: Final[Mapping[str, Operation]] = {op.name: op for op in (
    Operation("address", {
        "name": _req("str"), "max_size_bytes": _f("int", -1), "max_size_messages": _f("int", -1),
        "page_size_bytes": _f("int", 10485760), "full_policy": _f(POLICIES, "PAGE"),
        "max_read_page_bytes": _f("int?"), "max_read_page_messages": _f("int", -1),
        "page_limit_bytes": _f("int", -1), "page_limit_messages": _f("int", -1),
        "page_full_policy": _f(("DROP", "FAIL", None)), "retroactive_message_count": _f("int", 0),
        # RETENTION-1..11: the address is a JetStream stream (feature retention)
        "retention": _f(("limits", "interest", "workqueue", None))},
        declares="address", run=_declare_address),
    Operation("queue", {
        "name": _req("str"), "address": _f("str?"), "ring_size": _f("int", -1), "filter": _f("str?"),
        "max_delivery_attempts": _f("int", 10), "redelivery_delay_ms": _f("int", 0),
        "redelivery_multiplier": _f("num", 1.0), "max_redelivery_delay_ms": _f("int?"),
        "dead_letter": _f("str?"), "non_destructive": _f("bool", False), "last_value_key": _f("str?"),
        # the broker's own overflow policy and byte bound (RING-27, RING-28)
        "overflow": _f(OVERFLOW_POLICIES), "max_length_bytes": _f("int", -1),
        # EXPIRY-1 (x-message-ttl, max_age, expiry-delay), EXPIRY-6 (Artemis expiry-address)
        "message_ttl_ms": _f("int?"), "expiry_address": _f("str?"),
        # DELIVERY-26: RabbitMQ x-single-active-consumer
        "single_active_consumer": _f("bool", False),
        # RING-31..33: JetStream max_msgs_per_subject, discard_new_per_subject
        "max_per_subject": _f("int", -1), "discard_new_per_subject": _f("bool", False)},
        declares="queue", run=_declare_queue),
    Operation("consumer", {
        "name": _req("str"), "queue": _req("str"), "window_bytes": _f("int", 1048576),
        "window_messages": _f("int?"), "max_unacked": _f("int?"), "selector": _f("str?"),
        "browser": _f("bool", False), "cumulative_ack": _f("bool", False),
        # REDELIVERY-27 (JetStream AckWait on the logical clock)
        "ack_wait_ms": _f("int?"),
        # REDELIVERY-32..35: JetStream consumer BackOff (ms per delivery)
        "backoff_ms": _f("list?"),
        # DELIVERY-25: RabbitMQ x-priority, ActiveMQ activemq.priority, Artemis AMQP attach "priority"
        "priority": _f("int", 0)},
        declares="consumer", references=(("queue", "queue"),), run=_open_consumer),
    Operation("send", {
        "to": _req("str"), "id": _req("id"), "size": _f("int", 100), "priority": _f("int", 4),
        "scheduled_at_ms": _f("int?"), "properties": _f("map", {}),
        # EXPIRY-2: the message's own TTL (RabbitMQ expiration, JetStream Nats-TTL)
        "ttl_ms": _f("int?"),
        # RING-31: the subject below the address (JetStream per-subject limits)
        "subject": _f("str?"),
        # EXPIRY-8: the duplicate-detection id (Artemis _AMQ_DUPL_ID)
        "duplicate_id": _f("str?"),
        # DELIVERY-49: the message group (Artemis JMSXGroupID, AMQP properties group-id)
        "group": _f("str?")},
        references=(("to", "address"),), run=_send, compared=True),
    Operation("receive", scalar="str", references=_CONSUMER, run=lambda a, x: a.receive(x), compared=True),
    Operation("ack", {"consumer": _req("str"), "id": _req("id"), "tx": _f("bool", False)},
              references=(("consumer", "consumer"),), run=_ack, compared=True),
    Operation("nack", {"consumer": _req("str"), "id": _req("id"),
                       # REDELIVERY-24 (requeue=false), REDELIVERY-25 (multiple)
                       "requeue": _f("bool", True), "multiple": _f("bool", False),
                       # REDELIVERY-28 (-NAK with a delay)
                       "delay_ms": _f("int", 0)},
              references=(("consumer", "consumer"),), run=_nack, compared=True),
    Operation("commit", scalar="str", references=_CONSUMER, run=lambda a, x: a.commit(x)),
    Operation("rollback", scalar="str", references=_CONSUMER, run=lambda a, x: a.rollback(x)),
    Operation("close", scalar="str", references=_CONSUMER, run=lambda a, x: a.close_consumer(x)),
    Operation("browse", scalar="str", references=(("", "queue"),), run=lambda a, x: a.browse(x),
              compared=True),
    Operation("set_ring_size", {"queue": _req("str"), "size": _req("int")},
              references=(("queue", "queue"),), run=lambda a, x: a.set_ring_size(x["queue"], x["size"])),
    Operation("advance", scalar="int", run=lambda a, x: a.advance(x)),
    # REDELIVERY-27 (+WPI restarts the ack wait), a method only adapters with ack_wait offer
    Operation("in_progress", {"consumer": _req("str"), "id": _req("id")},
              references=(("consumer", "consumer"),), needs=("ack_wait",),
              run=lambda a, x: a.in_progress(x["consumer"], x["id"])),  # type: ignore[attr-defined]
    # RING-29: purge a queue (the result is the number of messages removed)
    Operation("purge", scalar="str", references=(("", "queue"),), needs=("purge",),
              run=lambda a, x: a.purge(x), compared=True),  # type: ignore[attr-defined]
    # RING-34: a stream update of max_msgs_per_subject
    Operation("set_subject_limit", {"queue": _req("str"), "limit": _req("int")},
              references=(("queue", "queue"),), needs=("max_per_subject",),
              run=lambda a, x: a.set_subject_limit(x["queue"], x["limit"])),  # type: ignore[attr-defined]
    # DELIVERY-31..33: delete one message by id (the result is whether one was deleted)
    Operation("delete", {"queue": _req("str"), "id": _req("id")}, references=(("queue", "queue"),),
              needs=("delete",), run=lambda a, x: a.delete_message(x["queue"], x["id"])),  # type: ignore[attr-defined]
    # SCHED-16: deliver one scheduled message now (the result is whether a scheduled one was moved)
    Operation("deliver_scheduled", {"queue": _req("str"), "id": _req("id")}, references=(("queue", "queue"),),
              needs=("deliver_scheduled",), compared=True,
              run=lambda a, x: a.deliver_scheduled(x["queue"], x["id"])),  # type: ignore[attr-defined]
    # DELIVERY-48: move one message by id to another queue (the result is whether one was moved)
    Operation("move", {"queue": _req("str"), "id": _req("id"), "to": _req("str")},
              references=(("queue", "queue"), ("to", "queue")), needs=("move",), compared=True,
              run=lambda a, x: a.move_message(x["queue"], x["id"], x["to"])),  # type: ignore[attr-defined]
    # RESTART-1..4, the implementation restarts (SIGTERM or SIGKILL) on its own store
    Operation("restart", scalar=("graceful", "kill"), needs=("restart",), call=True, model=model.restart,
              run=lambda a, x: a.call("restart", mode=str(x))),
    Operation("throttle", {"name": _req("str"), "max_sessions": _req("int"),
                           "low_equals_high": _f("bool", False), "block_rule": _f(("gt", "ge"), "gt"),
                           "dispatch_crossing": _f(("before_block", "after_release"), "before_block"),
                           "listener": _f(("queue", "durable_topic", "nondurable_topic"), "queue")},
              declares="throttle", call=True, model=model.throttle),
    Operation("offer", {"throttle": _req("str"), "id": _req("id")}, references=(("throttle", "throttle"),),
              call=True, answers=("queued", "held"), model=model.offer, compared=True),
    Operation("complete", {"throttle": _req("str"), "id": _req("id"),
                           "outcome": _f(("commit", "rollback", "timeout"), "commit")},
              references=(("throttle", "throttle"),), call=True, model=model.complete, compared=True),
    Operation("admission", {"name": _f("str", "broker"), "scan_start_ms": _f("int", 1000),
                            "scan_period_ms": _f("int", 10), "enabled": _f("bool", True),
                            "busy_after_ms": _f("int", 1000), "queues": _f("map")},
              declares="admission", call=True, model=model.admission),
    Operation("submit", {"queue": _req("str"), "id": _req("id"), "admission": _f("str?")},
              call=True, answers=("queued", "OVERLOAD", "REJECTREQUEST"), model=model.submit, compared=True),
    Operation("take", scalar="str", keyword="queue", call=True, model=model.take, compared=True),
    Operation("lock", scalar=("held", "released"), keyword="state", call=True, model=model.lock),
    Operation("store", {"name": _req("str"), "max_bytes": _req("int"), "block_size": _f("int", 4096),
                        "extent_size": _f("int", 1), "round_to": _f("int?"),
                        "transaction_file": _f("bool", False)},
              declares="store", call=True, model=model.store),
    Operation("put", {"store": _req("str"), "id": _req("id"), "size": _req("int")}, references=_STORE,
              call=True, answers=("ok", "e$max_file_exceeded"), model=model.put, compared=True),
    Operation("remove", {"store": _req("str"), "id": _req("id")}, references=_STORE, call=True,
              answers=("ok", "e$record_not_found"), model=model.remove, compared=True),
    Operation("open_requester", scalar="str", references=(("", "store"),), keyword="store", call=True,
              model=model.open_requester),
    Operation("close_requester", scalar="str", references=(("", "store"),), keyword="store", call=True,
              model=model.close_requester),
    Operation("truncate", {"store": _req("str"), "caller": _f(("server", "requester"), "server")},
              references=_STORE, call=True, model=model.truncate, compared=True,
              answers=("ok", "e$no_truncate_queue", "e$invalid_io_operation")),
    # REDELIVERY-30 (capability `sessions`); through call() so an adapter without it needs no new method
    Operation("close_session", scalar="str", references=_CONSUMER, keyword="consumer", call=True,
              model=model.close_session),
    # DELIVERY-34: the queue's consumers deliver nothing until the logical time until_ms
    Operation("pause", {"queue": _req("str"), "until_ms": _req("int")}, references=(("queue", "queue"),),
              needs=("consumer_pause",), call=True, model=model.pause, compared=True,
              run=lambda a, x: a.call("pause", queue=x["queue"], until_ms=int(x["until_ms"]))),
    # RETENTION-1..11: a durable consumer of a stream address, as queue `name` (value created or
    # refused), leave deletes it; DELIVERY-41..47: `priority`, the durable's ADR-42 priority policy
    Operation("join", {"name": _req("str"), "address": _req("str"),
                       "priority": _f(("overflow", "pinned_client", None))},
              declares="queue", references=(("address", "address"),), needs=("retention",), call=True,
              answers=("created", "refused"), model=model.join, run=_join, compared=True),
    Operation("leave", scalar="str", references=(("", "queue"),), needs=("retention",), call=True,
              model=model.leave, run=lambda a, x: a.call("leave", queue=str(x))),
    # DELIVERY-45: the pin of a pinned_client queue is cleared ($JS.API.CONSUMER.UNPIN)
    Operation("unpin", scalar="str", references=(("", "queue"),), needs=("priority_pinned",), call=True,
              model=model.unpin, run=lambda a, x: a.call("unpin", queue=str(x))),
    # DELIVERY-38..40: one pull request for up to `batch` messages within `max_bytes` (0: no budget);
    # the value is the list of ids it delivered
    # DELIVERY-41..44: an overflow queue's thresholds (0: none; capability priority_overflow)
    Operation("fetch", {"consumer": _req("str"), "batch": _req("int"), "max_bytes": _f("int", 0),
                        "min_pending": _f("int", 0), "min_ack_pending": _f("int", 0)},
              references=(("consumer", "consumer"),), needs=("pull_batch",), call=True, model=model.fetch,
              run=_fetch, compared=True),
    # batches: the single operations in order (no adapter method of their own); the value is the list
    # of the single values, or the first answer that is not ok
    Operation("send_batch", {"to": _req("str"), "ids": _req("list"), "size": _f("int", 100),
                             "priority": _f("int", 4)},
              references=(("to", "address"),), compared=True,
              run=lambda a, x: _each(lambda m: _send(a, m[1]), batch_items("send_batch", x))),
    Operation("receive_batch", {"consumer": _req("str"), "count": _req("int")},
              references=(("consumer", "consumer"),), compared=True,
              run=lambda a, x: _each(lambda m: a.receive(m[1]), batch_items("receive_batch", x),
                                     until_empty=True)),
    Operation("ack_batch", {"consumer": _req("str"), "ids": _req("list")},
              references=(("consumer", "consumer"),), compared=True,
              run=lambda a, x: _each(lambda m: _ack(a, m[1]), batch_items("ack_batch", x))),
    # observations through call (not scenario steps)
    Operation("throttle_state", call=True, answer_keys=("in_flight", "blocked", "blocks", "waiting"),
              model=model.throttle_state),
    Operation("request", call=True, answer_keys=("answer", "at_ms", "text", "code"), model=model.request),
    Operation("store_state", call=True, answer_keys=_STORE_STATE, model=model.store_state),
    Operation("locate", call=True, model=model.locate),
    # RETENTION-1..10: the stream's stored messages (capability retention)
    Operation("retention_state", call=True, answer_keys=("messages",), model=model.retention_state),
    # RESTART-5 and DELIVERY-27..30: the queue as a JetStream stream and its durable consumer
    Operation("stream_state", call=True, model=model.stream_state,
              answer_keys=("msgs", "first_seq", "last_seq", "num_deleted", "num_pending", "num_ack_pending",
                           "num_redelivered", "delivered_seq", "ack_floor_seq")),
    Operation("consumer_state", call=True, answer_keys=CONSUMER_STATE_KEYS, model=model.consumer_state),
)}

#: the scenario language's operations (scenario/schema.py)
SCENARIO_OPS: Final = {name: op for name, op in OPERATIONS.items() if op.in_scenario}
#: `call` operations: op -> the keys of its value where it is a dict (None otherwise)
CALL_OPS: Final = {name: op.answer_keys for name, op in OPERATIONS.items() if op.call}
#: the string answers of `call` operations (docs/contract.md "call operations")
CALL_RESULTS: Final = {name: op.answers for name, op in OPERATIONS.items() if op.answers}
#: operations whose result is compared with the model's
COMPARED: Final = frozenset(name for name, op in OPERATIONS.items() if op.compared)


def process_of(op: str, args: Any) -> str:
    """Who performs a step, for the history's `process`: the consumer it names (its reference of
    kind consumer), "producer" for what it sends to an address, else "control"."""
    operation = OPERATIONS.get(op)
    for field, kind in operation.references if operation is not None else ():
        value = args if field == "" else args.get(field) if isinstance(args, Mapping) else None
        if kind == "consumer" and isinstance(value, str):
            return value
        if kind == "address" and field == "to":
            return "producer"
    return "control"


def call_operation(adapter: Adapter, op: str, args: Any) -> Result:
    """Run one scenario-language operation on an adapter (every caller's one way to run one)."""
    operation = SCENARIO_OPS.get(op)
    if operation is None:
        raise ValueError(f"unknown operation {op!r}")
    if operation.needs:
        refused = _missing(adapter, operation.needs)
        if refused is not None:
            return refused
    if operation.run is not None:
        return operation.run(adapter, args)
    return adapter.call(op, **({operation.keyword: args} if operation.keyword else dict(args)))
