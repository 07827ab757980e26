"""The scenario language as data: every operation and `expect` key with its argument types.

Defaults shown here are documentation only: a declaration passes the keys the file gives, and the
model's configuration classes (reference_model/config.py and the flow-control components) hold the
same defaults, so an adapter sees exactly what the author wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from mqconform.adapters.contract import CONSUMER_STATE_KEYS

#: argument kinds: "str", "id" (str or int, stored as str), "int", "num", "bool", "map", "list",
#: "any", a tuple of allowed literal values; a trailing "?" allows null.
Kind = str | tuple[Any, ...]


@attrs.frozen
class Field:
    kind: Kind
    required: bool = False
    default: Any = None


@attrs.frozen
class Op:
    """One operation: either a scalar argument (`scalar` names its kind) or a mapping of fields."""

    fields: Mapping[str, Field] = attrs.field(factory=dict)
    scalar: Kind | None = None
    #: the declaration kind this op creates ("queue", "throttle", ...) with the field naming it
    declares: str | None = None


def _f(kind: Kind, default: Any = None) -> Field:
    return Field(kind, False, default)


def _req(kind: Kind) -> Field:
    return Field(kind, True)


POLICIES: Final = ("PAGE", "DROP", "BLOCK", "FAIL")
#: RING-28: queue overflow policies in the brokers' words (a profile has some: overflow_policies)
OVERFLOW_POLICIES: Final = ("drop-head", "reject-publish", "reject-publish-dlx", "discard-old", "discard-new",
                            None)

OPS: Final[Mapping[str, Op]] = {
    "address": Op({"name": _req("str"), "max_size_bytes": _f("int", -1), "max_size_messages": _f("int", -1),
                   "page_size_bytes": _f("int", 10485760), "full_policy": _f(POLICIES, "PAGE"),
                   "max_read_page_bytes": _f("int?"), "max_read_page_messages": _f("int", -1),
                   "page_limit_bytes": _f("int", -1), "page_limit_messages": _f("int", -1),
                   "page_full_policy": _f(("DROP", "FAIL", None)),
                   "retroactive_message_count": _f("int", 0),
                   # RETENTION-1..11: the address is a JetStream stream (feature retention)
                   "retention": _f(("limits", "interest", "workqueue", None))},
                  declares="address"),
    "queue": Op({"name": _req("str"), "address": _f("str?"), "ring_size": _f("int", -1), "filter": _f("str?"),
                 "max_delivery_attempts": _f("int", 10), "redelivery_delay_ms": _f("int", 0),
                 "redelivery_multiplier": _f("num", 1.0), "max_redelivery_delay_ms": _f("int?"),
                 "dead_letter": _f("str?"), "non_destructive": _f("bool", False),
                 "last_value_key": _f("str?"),
                 # the broker's own overflow policy and byte bound (RING-27, RING-28)
                 "overflow": _f(OVERFLOW_POLICIES), "max_length_bytes": _f("int", -1),
                 # EXPIRY-1 (x-message-ttl, max_age, expiry-delay), EXPIRY-6 (Artemis expiry-address)
                 "message_ttl_ms": _f("int?"), "expiry_address": _f("str?"),
                 # DELIVERY-26: RabbitMQ x-single-active-consumer
                 "single_active_consumer": _f("bool", False),
                 # RING-31..33: JetStream max_msgs_per_subject, discard_new_per_subject
                 "max_per_subject": _f("int", -1), "discard_new_per_subject": _f("bool", False)},
                declares="queue"),
    "consumer": Op({"name": _req("str"), "queue": _req("str"), "window_bytes": _f("int", 1048576),
                    "window_messages": _f("int?"), "max_unacked": _f("int?"), "selector": _f("str?"),
                    "browser": _f("bool", False), "cumulative_ack": _f("bool", False),
                    # REDELIVERY-27 (JetStream AckWait on the logical clock)
                    "ack_wait_ms": _f("int?"),
                    # REDELIVERY-32..35: JetStream consumer BackOff (ms per delivery)
                    "backoff_ms": _f("list?"),
                    # DELIVERY-25: RabbitMQ x-priority, ActiveMQ activemq.priority
                    "priority": _f("int", 0)},
                   declares="consumer"),
    "send": Op({"to": _req("str"), "id": _req("id"), "size": _f("int", 100), "priority": _f("int", 4),
                "scheduled_at_ms": _f("int?"), "properties": _f("map", {}),
                # EXPIRY-2: the message's own TTL (RabbitMQ expiration, JetStream Nats-TTL)
                "ttl_ms": _f("int?"),
                # RING-31: the subject below the address (JetStream per-subject limits)
                "subject": _f("str?")}),
    "receive": Op(scalar="str"),
    "ack": Op({"consumer": _req("str"), "id": _req("id"), "tx": _f("bool", False)}),
    "nack": Op({"consumer": _req("str"), "id": _req("id"),
                # REDELIVERY-24 (requeue=false), REDELIVERY-25 (multiple)
                "requeue": _f("bool", True), "multiple": _f("bool", False),
                # REDELIVERY-28 (-NAK with a delay)
                "delay_ms": _f("int", 0)}),
    "commit": Op(scalar="str"),
    "rollback": Op(scalar="str"),
    "close": Op(scalar="str"),
    "browse": Op(scalar="str"),
    "set_ring_size": Op({"queue": _req("str"), "size": _req("int")}),
    "advance": Op(scalar="int"),
    # REDELIVERY-27 (+WPI restarts the ack wait)
    "in_progress": Op({"consumer": _req("str"), "id": _req("id")}),
    # RING-29: purge a queue (the result is the number of messages removed)
    "purge": Op(scalar="str"),
    # RING-34: a stream update of max_msgs_per_subject
    "set_subject_limit": Op({"queue": _req("str"), "limit": _req("int")}),
    # DELIVERY-31..33: delete one message by id (the result is whether one was deleted)
    "delete": Op({"queue": _req("str"), "id": _req("id")}),
    # RESTART-1..4, the implementation restarts (SIGTERM or SIGKILL) on its own store
    "restart": Op(scalar=("graceful", "kill")),
    "throttle": Op({"name": _req("str"), "max_sessions": _req("int"), "low_equals_high": _f("bool", False),
                    "block_rule": _f(("gt", "ge"), "gt"),
                    "dispatch_crossing": _f(("before_block", "after_release"), "before_block"),
                    "listener": _f(("queue", "durable_topic", "nondurable_topic"), "queue")},
                   declares="throttle"),
    "offer": Op({"throttle": _req("str"), "id": _req("id")}),
    "complete": Op({"throttle": _req("str"), "id": _req("id"),
                    "outcome": _f(("commit", "rollback", "timeout"), "commit")}),
    "admission": Op({"name": _f("str", "broker"), "scan_start_ms": _f("int", 1000),
                     "scan_period_ms": _f("int", 10),
                     "enabled": _f("bool", True), "busy_after_ms": _f("int", 1000), "queues": _f("map")},
                    declares="admission"),
    "submit": Op({"queue": _req("str"), "id": _req("id"), "admission": _f("str?")}),
    "take": Op(scalar="str"),
    "lock": Op(scalar=("held", "released")),
    "store": Op({"name": _req("str"), "max_bytes": _req("int"), "block_size": _f("int", 4096),
                 "extent_size": _f("int", 1), "round_to": _f("int?"), "transaction_file": _f("bool", False)},
                declares="store"),
    "put": Op({"store": _req("str"), "id": _req("id"), "size": _req("int")}),
    "remove": Op({"store": _req("str"), "id": _req("id")}),
    "open_requester": Op(scalar="str"),
    "close_requester": Op(scalar="str"),
    "truncate": Op({"store": _req("str"), "caller": _f(("server", "requester"), "server")}),
    "close_session": Op(scalar="str"),
    # DELIVERY-34: the queue's consumers deliver nothing until the logical time until_ms
    "pause": Op({"queue": _req("str"), "until_ms": _req("int")}),
    # RETENTION-1..11: a durable consumer of a stream address, as queue `name` (value created or
    # refused); leave deletes it
    "join": Op({"name": _req("str"), "address": _req("str")}, declares="queue"),
    "leave": Op(scalar="str"),
    # DELIVERY-38..40: one pull request for up to `batch` messages within `max_bytes` (0: no budget)
    "fetch": Op({"consumer": _req("str"), "batch": _req("int"), "max_bytes": _f("int", 0)}),
    "send_batch": Op({"to": _req("str"), "ids": _req("list"), "size": _f("int", 100),
                      "priority": _f("int", 4)}),
    "receive_batch": Op({"consumer": _req("str"), "count": _req("int")}),
    "ack_batch": Op({"consumer": _req("str"), "ids": _req("list")}),
}

#: operations whose scalar or named argument must be a declared thing: op -> (field or "", kind)
REFERENCES: Final[Mapping[str, tuple[tuple[str, str], ...]]] = {
    "consumer": (("queue", "queue"),),
    "send": (("to", "address"),),
    "receive": (("", "consumer"),), "commit": (("", "consumer"),), "rollback": (("", "consumer"),),
    "close": (("", "consumer"),), "ack": (("consumer", "consumer"),), "nack": (("consumer", "consumer"),),
    "in_progress": (("consumer", "consumer"),), "purge": (("", "queue"),), "delete": (("queue", "queue"),),
    "browse": (("", "queue"),), "set_ring_size": (("queue", "queue"),),
    "set_subject_limit": (("queue", "queue"),),
    "offer": (("throttle", "throttle"),), "complete": (("throttle", "throttle"),),
    "put": (("store", "store"),), "remove": (("store", "store"),), "truncate": (("store", "store"),),
    "open_requester": (("", "store"),), "close_requester": (("", "store"),),
    "close_session": (("", "consumer"),), "pause": (("queue", "queue"),),
    "join": (("address", "address"),), "leave": (("", "queue"),),
    "fetch": (("consumer", "consumer"),),
    "send_batch": (("to", "address"),), "receive_batch": (("consumer", "consumer"),),
    "ack_batch": (("consumer", "consumer"),),
}

#: DELIVERY-30: the stream's own fields of `stream_state` (its consumer fields: `consumer_state`)
STREAM_STATE_KEYS: Final = ("msgs", "first_seq", "last_seq", "num_deleted")
QUEUE_COUNTERS: Final = ("message_count", "pending_count", "delivering_count", "scheduled_count",
                         "paged_count", "added", "acknowledged", "replaced", "killed", "expired")
ANSWERS: Final = (None, "processed", "TIMEOUT_CLEAN_QUEUE", "PCBUSY_CLEAN_QUEUE", "OVERLOAD")

#: expect key -> (fields of one entry, the declaration kind it names or None)
EXPECT_ENTRIES: Final[Mapping[str, tuple[Mapping[str, Field], str | None]]] = {
    "queue": ({"name": _f("str"), **{c: _f("int") for c in QUEUE_COUNTERS}, "pending": _f("list"),
               "paging": _f("bool")}, "queue"),
    "delivery_count": ({"queue": _f("str"), "id": _req("id"), "count": _req("int?")}, "queue"),
    # DELIVERY-23: what a consumer holding the message sees of its delivery
    "message": ({"queue": _f("str"), "id": _req("id"), "redelivered": _f("bool"),
                 "dead_letter_reason": _f("str?")}, "queue"),
    # DELIVERY-27..30: the queue as a JetStream stream and its durable consumer
    "consumer_state": ({"queue": _f("str"), **{k: _f("int") for k in CONSUMER_STATE_KEYS}}, "queue"),
    "stream_state": ({"queue": _f("str"), **{k: _f("int") for k in STREAM_STATE_KEYS}}, "queue"),
    "throttle": ({"name": _f("str"), "in_flight": _f("int"), "blocked": _f("bool"), "blocks": _f("int"),
                  "waiting": _f("list")}, "throttle"),
    "request": ({"id": _req("id"), "admission": _f("str"), "answer": _f(ANSWERS), "at_ms": _f("int?"),
                 "text": _f("str?"), "code": _f("int?")}, None),
    "store": ({"name": _f("str"), "used_bytes": _f("int"), "live": _f("int"), "free_slots": _f("int"),
               "index_entries": _f("int"), "blocks_used": _f("int"), "last_message": _f("int")}, "store"),
    # RETENTION-1..10: a stream address's stored messages (capability retention)
    "retention": ({"address": _f("str"), "messages": _f("int")}, "address"),
}
EXPECT_KEYS: Final = ("result", *EXPECT_ENTRIES)
#: the field that names the declared thing of an expect entry
NAME_FIELD: Final = {"queue": "name", "delivery_count": "queue", "throttle": "name", "store": "name",
                     "message": "queue", "consumer_state": "queue", "stream_state": "queue",
                     "retention": "address"}
