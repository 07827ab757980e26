"""The steps of a counterexample as the known-deviation registry's shapes read them: the claimed model's
state after each step (:class:`TraceStep`) and the small readings every shape module shares (which
counter rose, the ids a step names, each message's priority, the non-destructive queues)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs


@attrs.frozen
class TraceStep:
    """One step of a counterexample and the claimed model's state right after it."""

    op: str
    args: Any
    #: queue name -> the model's counters (mqconform.adapters.contract.COUNTERS) and ``pending`` ids
    queues: Mapping[str, Mapping[str, Any]]
    #: queue name -> the model's JetStream consumer state (only under profiles that have it)
    consumer_state: Mapping[str, Mapping[str, int]]
    #: the model's answer to the step (a send's result, the ids a receive got), if it has one
    result: Any = None
    #: queue name -> the ids its consumers hold right after the step (dispatched or received, not
    #: acknowledged: a push consumer holds what it was sent without a receive step)
    held: Mapping[str, frozenset[str]] = attrs.field(factory=dict)


def rose(before: TraceStep | None, after: TraceStep, counter: str) -> list[str]:
    """The queues whose model `counter` is higher after `after` than before it."""
    return [q for q, c in after.queues.items()
            if c.get(counter, 0) > (before.queues.get(q, {}).get(counter, 0) if before else 0)]


def listed(step: TraceStep | None, queue: str) -> set[str]:
    """The ids the model lists in `queue`'s pending list right after `step` (none before the first)."""
    return set(map(str, step.queues.get(queue, {}).get("pending", []))) if step is not None else set()


def pairs(trace: Sequence[TraceStep]) -> Iterable[tuple[TraceStep | None, TraceStep]]:
    return zip([None, *trace[:-1]], trace, strict=True)


def priorities(trace: Sequence[TraceStep]) -> dict[str, int]:
    """The priority each message was sent with (default 4)."""
    sent: dict[str, int] = {}
    for step in trace:
        if step.op in ("send", "send_batch") and isinstance(step.args, Mapping):
            for msg_id in ids(step):
                sent[msg_id] = int(step.args.get("priority", 4))
    return sent


def non_destructive_queues(trace: Sequence[TraceStep]) -> set[str]:
    """The names of the queues the trace declares non-destructive (DELIVERY-12)."""
    return {str(step.args.get("name")) for step in trace
            if step.op == "queue" and isinstance(step.args, Mapping) and step.args.get("non_destructive")}


def ids(step: TraceStep) -> list[str]:
    """The message ids a send, receive or ack step names or got, in order."""
    if step.op in ("receive", "receive_batch"):
        got = step.result if isinstance(step.result, list) else [step.result]
        return [str(i) for i in got if i is not None]
    if isinstance(step.args, Mapping):
        return [str(i) for i in step.args.get("ids", [step.args.get("id")]) if i is not None]
    return []
