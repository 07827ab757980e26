"""The scenario language as data: every operation (from mqconform/operations.py) and `expect` key
with its argument types.

Defaults shown here are documentation only: a declaration passes the keys the file gives, and the
model's configuration classes (reference_model/config.py and the flow-control components) hold the
same defaults, so an adapter sees exactly what the author wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mqconform.adapters.contract import CONSUMER_STATE_KEYS
from mqconform.operations import SCENARIO_OPS, Field, Kind, Operation


def _f(kind: Kind, default: Any = None) -> Field:
    return Field(kind, False, default)


def _req(kind: Kind) -> Field:
    return Field(kind, True)


#: every operation of the language with its arguments (mqconform/operations.py)
OPS: Final[Mapping[str, Operation]] = SCENARIO_OPS
#: operations whose scalar or named argument must be a declared thing: op -> (field or "", kind)
REFERENCES: Final[Mapping[str, tuple[tuple[str, str], ...]]] = {
    name: op.references for name, op in SCENARIO_OPS.items() if op.references}

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
