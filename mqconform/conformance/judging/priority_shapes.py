"""Counterexample shapes of the known-deviation registry for message priorities (Artemis'
PriorityLinkedListImpl: a consumer's iterator that an add does not send back to the top), over the
claimed model's trace of a counterexample (:class:`.shape_steps.TraceStep`), registered in
:data:`.deviation_shapes.SHAPES`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .shape_steps import TraceStep, listed, non_destructive_queues, pairs, priorities, rose


def same_priority_send_not_reset(trace: Sequence[TraceStep]) -> bool:
    """A send at priority p to a queue whose previous add was at priority p too (a send, or a message
    a close or nack returned to it), while lower-priority messages are pending there: Artemis'
    PriorityLinkedListImpl#checkHighest then resets no consumer's iterator, and one that moved below p
    hands out the lower ones first."""
    priority = priorities(trace)
    last: dict[str, set[int]] = {}
    for before, step in pairs(trace):
        if step.op in ("close", "nack"):
            for queue in step.queues:
                back = listed(step, queue) - listed(before, queue)
                if back:
                    last[queue] = {priority.get(m, 4) for m in back}
        elif step.op in ("send", "send_batch") and isinstance(step.args, Mapping):
            level = int(step.args.get("priority", 4))
            for queue in rose(before, step, "added"):
                pending = step.queues[queue].get("pending", [])
                if level in last.get(queue, set()) and any(priority.get(str(m), 4) < level for m in pending):
                    return True
                last[queue] = {level}
    return False


def removal_below_higher_priority(trace: Sequence[TraceStep]) -> bool:
    """A step at which a queue's ``replaced`` count rises and a message leaves its pending list while
    a message of a higher priority stays pending there (a last-value prune below the top level:
    Artemis' PriorityLinkedListImpl iterator remove then lowers highestPriority under the higher one)."""
    priority = priorities(trace)
    for before, step in pairs(trace):
        for queue in rose(before, step, "replaced"):
            now = listed(step, queue)
            gone = listed(before, queue) - now
            if any(priority.get(m, 4) < priority.get(n, 4) for m in gone for n in now):
                return True
    return False


def non_destructive_same_priority_send(trace: Sequence[TraceStep]) -> bool:
    """A send at priority p to a non-destructive queue whose previous list add was at p too: Artemis'
    PriorityLinkedListImpl#checkHighest then resets no consumer's iterator, and a delivered message
    staying listed keeps highestPriority up, so an iterator that moved elsewhere while its consumer was
    busy stays there. A step's adds are the messages new in the queue's pending list (a send not
    scheduled for later, a scheduled message fired, a message a close or nack returned; a message a
    consumer took at its send without listing it is no add)."""
    kept = non_destructive_queues(trace)
    priority = priorities(trace)
    last: dict[str, set[int]] = {}
    for before, step in pairs(trace):
        sent = step.op in ("send", "send_batch") and isinstance(step.args, Mapping)
        for queue in kept & set(step.queues):
            added = {priority.get(m, 4) for m in listed(step, queue) - listed(before, queue)}
            if not added:
                continue
            if sent and added & last.get(queue, set()):
                return True
            last[queue] = added
    return False
