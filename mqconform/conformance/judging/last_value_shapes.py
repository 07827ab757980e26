"""Counterexample shapes of the known-deviation registry for last-value queues, over the claimed model's
trace of a counterexample (:class:`.deviation_shapes.TraceStep`: ``op``, ``args``), registered in
:data:`.deviation_shapes.SHAPES`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _keys(trace: Sequence[Any]) -> dict[str, str]:
    """The destructive last-value queues the trace declares -> their key."""
    return {str(step.args.get("name")): str(step.args.get("last_value_key")) for step in trace
            if step.op == "queue" and isinstance(step.args, Mapping) and step.args.get("last_value_key")
            and not step.args.get("non_destructive")}


def last_value_direct_delivery(trace: Sequence[Any]) -> bool:
    """Shape ``last-value-direct-delivery`` (LASTVALUE-5): a send of a message with the key of a
    destructive last-value queue whose list was empty, at which the model's delivering count of that
    queue rises (a consumer takes it at once): Artemis delivers it directly (QueueImpl#deliverDirect),
    never lists it, and so keeps it its value's current message (LastValueQueue#refRemoved is not
    called)."""
    keys = _keys(trace)
    for before, step in zip([None, *trace[:-1]], trace, strict=True):
        if step.op not in ("send", "send_batch") or not isinstance(step.args, Mapping):
            continue
        properties = step.args.get("properties") or {}
        for queue, key in keys.items():
            was = before.queues.get(queue, {}) if before is not None else {}
            rose = step.queues.get(queue, {}).get("delivering_count", 0) > was.get("delivering_count", 0)
            if rose and not was.get("pending") and isinstance(properties, Mapping) and key in properties:
                return True
    return False


def last_value_nack(trace: Sequence[Any]) -> bool:
    """Shape ``last-value-nack`` (LASTVALUE-6): a nack that asks for a requeue at once (no delay) of a
    message sent with the key of the destructive last-value queue its consumer reads. Artemis puts it
    back untracked (QueueImpl#cancel, no trackLastValueIfAbsent) and prunes it before its nacker's
    credit returns if it is not current (bug model artemis-last-value-nack-pruned-before-credit)."""
    lvqs = _keys(trace)
    keys = set(lvqs.values())
    queue_of: dict[str, str] = {}  # consumer -> its queue
    keyed: set[str] = set()  # the ids sent with one of those keys
    for step in trace:
        args = step.args
        if not isinstance(args, Mapping):
            continue
        if step.op == "consumer":
            queue_of[str(args.get("name"))] = str(args.get("queue"))
        elif step.op in ("send", "send_batch"):
            properties = args.get("properties") or {}
            if isinstance(properties, Mapping) and set(map(str, properties)) & keys:
                keyed.update(str(i) for i in args.get("ids", [args.get("id")]) if i is not None)
        elif (step.op == "nack" and args.get("requeue", True) and not args.get("delay_ms")
              and queue_of.get(str(args.get("consumer"))) in lvqs and str(args.get("id")) in keyed):
            return True
    return False
