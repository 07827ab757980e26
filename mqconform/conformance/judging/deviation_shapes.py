"""The counterexample shapes of the known-deviation registry (mqconform/conformance/judging/deviations.yaml).

A counterexample is replayed on the claimed model (:func:`model_trace`, :func:`scenario_trace`): each
step with the model's counters, consumer state, answer and held ids right after it
(:class:`.shape_steps.TraceStep`). A **shape** (:data:`SHAPES`) is a named predicate over that trace:
what the counterexample does that a registered bug needs (a nack at the delivery limit, a restart past
max_deliver, ...); each predicate's docstring says exactly. The last-value and priority shapes live in
:mod:`.last_value_shapes` and :mod:`.priority_shapes`. An **observed** relation (:data:`OBSERVED`)
compares the model's value with the implementation's (higher, lower, an extra delivery, ...). The
registry (:mod:`.deviations`) matches findings with them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from .last_value_shapes import last_value_direct_delivery, last_value_nack
from .priority_shapes import (
    non_destructive_same_priority_send,
    removal_below_higher_priority,
    same_priority_send_not_reset,
)
from .shape_steps import TraceStep as TraceStep
from .shape_steps import ids as _ids
from .shape_steps import listed as _listed
from .shape_steps import non_destructive_queues as _non_destructive_queues
from .shape_steps import pairs as _pairs
from .shape_steps import rose as _rose


def model_trace(steps: Sequence[Any], profile: str) -> list[TraceStep] | None:
    """Replay a finding's steps (driver.Step) on the model of `profile`; None when it rejects them."""
    return scenario_trace([step.as_scenario() for step in steps], profile)


def scenario_trace(raw: Sequence[Mapping[str, Any]], profile: str) -> list[TraceStep] | None:
    """Replay scenario steps (``{op: args}``, an ``expect`` ignored) on the model of `profile`; None
    when it rejects them."""
    from mqconform.reference_model.profiles import profile as load_profile
    from mqconform.scenario.annotate import ModelRejected, annotate

    held: list[dict[str, frozenset[str]]] = []

    try:
        annotated = annotate([{k: v for k, v in s.items() if k != "expect"} for s in raw],
                             load_profile(profile), lambda model: held.append(model.held_ids()))
    except (ModelRejected, ValueError, KeyError, TypeError):
        return None
    trace = []
    for step, after in zip(annotated, held, strict=True):
        op = next(k for k in step if k != "expect")
        expect = step["expect"]
        queues = {q["name"]: q for q in expect.get("queue", [])}
        states = {c["queue"]: c for c in expect.get("consumer_state", [])}
        trace.append(TraceStep(op, step[op], queues, states, expect.get("result"), after))
    return trace


def _nack_at_delivery_limit(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a nack that asks for a requeue after which the model
    dead-letters or drops the message instead: it reached its delivery limit (the model's ``killed``
    count of the queue rises at the nack; a nack with ``requeue: false`` is not one)."""
    return any(step.op == "nack" and isinstance(step.args, Mapping) and step.args.get("requeue", True)
               and _rose(before, step, "killed") for before, step in _pairs(trace))


def _sent_with_ttl(trace: Sequence[TraceStep], at_least: int = 0) -> set[str]:
    """The ids of messages sent with their own TTL (``ttl_ms``: JetStream's Nats-TTL), of `at_least`
    ms."""
    ids: set[str] = set()
    for step in trace:
        if step.op in ("send", "send_batch") and isinstance(step.args, Mapping) \
                and step.args.get("ttl_ms") is not None and int(step.args["ttl_ms"]) >= at_least:
            ids.update(_ids(step))
    return ids


def _ended_by_own_ttl(trace: Sequence[TraceStep]) -> set[str]:
    """The ids of messages sent with a TTL of their own that ends no later than their queue's message
    TTL (JetStream ``max_age``, the queue's ``message_ttl_ms``), so their own TTL expires them. One
    whose own TTL is longer is expired by max_age all the same."""
    max_age: dict[str, int | None] = {}
    ids: set[str] = set()
    for step in trace:
        args = step.args
        if not isinstance(args, Mapping):
            continue
        if step.op == "queue":
            max_age[str(args.get("name"))] = args.get("message_ttl_ms")
        elif step.op in ("send", "send_batch") and args.get("ttl_ms") is not None:
            limit = max_age.get(str(args.get("to")))
            if limit is None or int(args["ttl_ms"]) <= int(limit):
                ids.update(_ids(step))
    return ids


def _expired_at(before: TraceStep | None, step: TraceStep) -> set[str]:
    """The ids an advance took out of the queues' stored messages (ready, or held by a consumer: JetStream
    expires a delivered message too) while their ``expired`` count rose."""
    gone: set[str] = set()
    for queue in _rose(before, step, "expired"):
        gone |= (_stored(before, queue) if before else set()) - _stored(step, queue)
    return gone


def _stored(step: TraceStep, queue: str) -> set[str]:
    """The ids `queue` holds after `step`: ready (``pending``) or held by its consumers."""
    return set(map(str, step.queues.get(queue, {}).get("pending", []))) | set(step.held.get(queue, ()))


def _last_advance(trace: Sequence[TraceStep]) -> int | None:
    return next((i for i in range(len(trace) - 1, -1, -1) if trace[i].op == "advance"), None)


#: the first TTL a signed 32-bit read turns negative (2**31 ms)
SIGNED_INT_TTL_MS: Final = 2**31


def _ttl_beyond_signed_int(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a message sent with a TTL of its own of 2**31 ms or more (above a
    signed 32-bit int: a broker that reads it so gets a negative TTL), which the model still stores
    at the failing step (ready or held): the implementation expired it at once, not days later."""
    if not trace:
        return False
    large = _sent_with_ttl(trace, SIGNED_INT_TTL_MS)
    last = trace[-1]
    return any(large & _stored(last, queue) for queue in last.queues)


def _max_age_expiry_due(trace: Sequence[TraceStep]) -> bool:
    """The last advance at or before the failing step is one at which the model expired a message by
    the queue's message TTL (JetStream ``max_age``): one sent without a TTL of its own, or with a
    longer one: the failing step observes the queue before the implementation's next expiry check."""
    index = _last_advance(trace)
    if index is None:
        return False
    return bool(_expired_at(trace[index - 1] if index else None, trace[index]) - _ended_by_own_ttl(trace))


def _max_age_expiry_after_ttl_expiry(trace: Sequence[TraceStep]) -> bool:
    """As ``max-age-expiry-due``, and an earlier advance expired a message by a TTL of its own
    (``ttl_ms``, JetStream's Nats-TTL, ending before max_age)."""
    index = _last_advance(trace)
    if index is None or not _max_age_expiry_due(trace):
        return False
    own = _ended_by_own_ttl(trace)
    return any(step.op == "advance" and _expired_at(before, step) & own
               for before, step in list(_pairs(trace))[:index])


def _max_age_expiry_after_ttl_send(trace: Sequence[TraceStep]) -> bool:
    """As ``max-age-expiry-due``, and between the send of the first message the last advance expired by
    max_age and that advance, a message with a TTL of its own (``ttl_ms``, Nats-TTL) was sent."""
    index = _last_advance(trace)
    if index is None:
        return False
    with_ttl = _sent_with_ttl(trace)
    due = _expired_at(trace[index - 1] if index else None, trace[index]) - _ended_by_own_ttl(trace)
    sends = [(i, set(_ids(step))) for i, step in enumerate(trace[:index])
             if step.op in ("send", "send_batch")]
    first = next((i for i, ids in sends if ids & due), None)
    return first is not None and any(i > first and ids & with_ttl for i, ids in sends)


def _restart_past_max_deliver(trace: Sequence[TraceStep]) -> bool:
    """The failing step is a restart, and right before it the model's consumer state of a queue
    counts more redelivered messages than messages pending acknowledgement: a redelivered message
    reached its delivery limit (MaxDeliver) and is still stored."""
    if len(trace) < 2 or trace[-1].op != "restart":
        return False
    return any(state.get("num_redelivered", 0) > state.get("num_ack_pending", 0)
               for state in trace[-2].consumer_state.values())


def _non_destructive_delete(trace: Sequence[TraceStep]) -> bool:
    """A delete by id that took a message off a non-destructive queue (Artemis counts it nowhere)."""
    kept = _non_destructive_queues(trace)
    return any(step.op == "delete" and isinstance(step.args, Mapping) and step.args.get("queue") in kept
               and step.result is not False for step in trace)


def _non_destructive_direct_delivery(trace: Sequence[TraceStep]) -> bool:
    """A send to a non-destructive queue that a consumer takes at once (the model's delivering count
    of the queue rises at the send): Artemis delivers it directly and does not keep it in the queue
    (QueueImpl#deliverDirect), where a non-destructive queue keeps every message it was sent."""
    kept = _non_destructive_queues(trace)
    return any(step.op in ("send", "send_batch") and set(_rose(before, step, "delivering_count")) & kept
               for before, step in _pairs(trace))


def _returns(trace: Sequence[TraceStep]) -> Iterator[tuple[TraceStep, TraceStep, set[str], set[str]]]:
    """Each close or nack with the step before it, the ids it returns (what the consumer received and
    has not acknowledged, or was pushed: what its queue's consumers held before the close and no longer
    hold after it; a nack's own ids) and the ids sent so far whose send answered ``paged``."""
    paged: set[str] = set()
    held: dict[str, set[str]] = {}  # consumer -> the ids it received and has not acknowledged
    queue_of: dict[str, str] = {}  # consumer -> its queue
    for before, step in _pairs(trace):
        consumer = str(step.args.get("consumer") if isinstance(step.args, Mapping) else step.args)
        if step.op == "consumer" and isinstance(step.args, Mapping):
            queue_of[str(step.args.get("name"))] = str(step.args.get("queue"))
        elif step.op in ("send", "send_batch"):
            answers = step.result if isinstance(step.result, list) else [step.result]
            paged |= {i for i, answer in zip(_ids(step), answers, strict=False) if answer == "paged"}
        elif step.op in ("receive", "receive_batch"):
            held.setdefault(consumer, set()).update(_ids(step))
        elif step.op in ("ack", "ack_batch"):
            held.get(consumer, set()).difference_update(_ids(step))
        elif step.op in ("close", "nack") and before is not None:
            queue = queue_of.get(consumer, "")
            released = set(before.held.get(queue, frozenset())) - set(step.held.get(queue, frozenset()))
            back = held.pop(consumer, set()) | released if step.op == "close" else set(_ids(step))
            held.get(consumer, set()).difference_update(back)
            yield before, step, back, set(paged)


def _ring_replaces_returning_paged(trace: Sequence[TraceStep]) -> bool:
    """A close or nack at which the model's ring replaces a returning message that had been written to
    a page file (its send answered ``paged``) while the ring's pending messages fill it. Artemis
    PagedReferenceImpl#isInDelivery is always false, so QueueImpl#enforceRing also takes the replaced
    paged reference off the pending count, where it never was (refRemoved): the next message returned
    or added is measured against a count one too low and kept over the ring."""
    for before, step, back, paged in _returns(trace):
        for queue in _rose(before, step, "replaced"):
            if (back & paged) - set(map(str, step.queues[queue].get("pending", []))):
                return True
    return False


def _close_returns_while_paging(trace: Sequence[TraceStep]) -> bool:
    """The failing step is a browse or a receive, and before it a close returned messages to a queue
    that still had paged messages. Artemis RefsOperation#afterRollback takes the returns out of the
    delivering count (checkRedelivery -> decDelivering -> deliverAsync, while the queue pages) before
    postRollback puts them back in memory; the paging executor's QueueImpl#needsDepage can read the
    budget in between and depage one more message, which a browse then lists from memory ahead of held
    paged messages and a receive gets where the read budget holds no more (a race: some runs only).
    The returns need not have been read from a page file: the read budget counts every delivering
    message (the 2.40.0 ci run of 2026-11-30: two messages accepted into memory, one paged, a read
    budget of 2 messages; the close's returns let the third be read)."""
    if not trace or trace[-1].op not in ("browse", "receive", "receive_batch"):
        return False
    return any(step.op == "close" and back
               and any(q.get("paged_count", 0) > 0 for q in step.queues.values())
               for _, step, back, _paged in _returns(trace))


def _non_destructive_ring_evicts_delivered(trace: Sequence[TraceStep]) -> bool:
    """A send at which the model's ring of a non-destructive queue replaces a message a consumer held
    at some step up to it (a non-destructive queue keeps delivered messages listed). Artemis
    QueueImpl#enforceRing polls that head off the list but skips refRemoved when it is in delivery
    (dispatched and not acknowledged since: a close leaves it so), so the pending count keeps it: one
    too many for every such eviction. Ever held is wider than in delivery (an acknowledgement ends
    that): a pre-filter, the bug model's replay decides."""
    kept = _non_destructive_queues(trace)
    ever: dict[str, set[str]] = {}  # queue -> the ids a consumer held at some step (this one too:
    for before, step in _pairs(trace):  # a send can dispatch a message and evict it)
        for queue, ids in step.held.items():
            ever.setdefault(queue, set()).update(ids)
        if before is None or step.op not in ("send", "send_batch"):
            continue
        for queue in set(_rose(before, step, "replaced")) & kept:
            gone = (_listed(before, queue) | set(_ids(step))) - _listed(step, queue)
            if gone & ever.get(queue, set()):
                return True
    return False


def _depaged_message_delivering(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a consumer holds (received, not acknowledged) a message whose
    send answered ``paged``: it was depaged and dispatched. HornetQ 2.4's MessagesAdded counts such a
    message twice until its acknowledgement commits or it goes back to the queue
    (QueueImpl#getInstantMessagesAdded: #refRemoved at dispatch takes it out of pagedReferences while
    the page counter keeps it)."""
    paged: set[str] = set()
    for step in trace:
        if step.op in ("send", "send_batch"):
            answers = step.result if isinstance(step.result, list) else [step.result]
            paged |= {i for i, answer in zip(_ids(step), answers, strict=False) if answer == "paged"}
        if any(ids & paged for ids in step.held.values()):
            return True
    return False


def _with_open_consumers(trace: Sequence[TraceStep]) -> Iterable[tuple[TraceStep | None, TraceStep,
                                                                         set[str]]]:
    """The (step before, step) pairs of the trace other than consumer opens and closes, each with the
    queues that have an open consumer at it."""
    consumers: dict[str, str] = {}  # open consumer -> its queue
    for before, step in _pairs(trace):
        if step.op == "consumer" and isinstance(step.args, Mapping):
            consumers[str(step.args.get("name"))] = str(step.args.get("queue"))
        elif step.op == "close":
            consumers.pop(str(step.args), None)
        else:
            yield before, step, set(consumers.values())


def _non_destructive_ring_repeats_replaced(trace: Sequence[TraceStep]) -> bool:
    """At a step before the failing one, a listed message of a non-destructive queue left its list (the
    ring replaced it, a newer last-value message pruned it, a delete or an expiry removed it) while a
    consumer of the queue was open. Artemis' consumer iterators are LinkedListImpl iterators: one that
    stopped at that message for a consumer without credit (busy: QueueImpl#deliver calls repeat()) is
    nudged on to the next node (or back to the previous one), and Iterator#next's repeat branch returns
    it without marking it as the last returned, so the next call returns it once more: a
    non-destructive queue delivers it to the consumer twice. A pre-filter: the bug model's replay
    decides (reference_model.bugs.artemis_linked_list_repeat)."""
    kept = _non_destructive_queues(trace)
    for before, step, consumed in _with_open_consumers(trace[:-1]):
        if before is None:
            continue
        for queue in kept & consumed:
            was = _listed(before, queue)
            if step.op in ("send", "send_batch"):
                was |= set(_ids(step))  # sent and replaced in one step
            if was - _listed(step, queue):
                return True
    return False


def _non_destructive_scheduled_fires(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a step at which the model's scheduled count of a non-destructive
    queue fell (due messages fired to its head) while a consumer of the queue was open. Artemis adds
    them with QueueImpl#addHead(List, scheduling) and then resets every consumer's iterator
    (resetAllIterators), so each consumer is offered again the messages the queue keeps listed."""
    kept = _non_destructive_queues(trace)
    for before, step, consumed in _with_open_consumers(trace):
        if before is not None:
            for queue in kept & consumed:
                was = before.queues.get(queue, {}).get("scheduled_count", 0)
                if step.queues.get(queue, {}).get("scheduled_count", 0) < was:
                    return True
    return False


def _message_limited(trace: Sequence[TraceStep]) -> tuple[dict[str, int], dict[str, str]]:
    """The addresses the trace declares with a message-count limit (max_size_messages >= 0) and that
    limit; the queue -> address of the queues it declares."""
    limits: dict[str, int] = {}
    queues: dict[str, str] = {}
    for step in trace:
        if not isinstance(step.args, Mapping):
            continue
        if step.op == "address" and int(step.args.get("max_size_messages", -1)) >= 0:
            limits[str(step.args.get("name"))] = int(step.args["max_size_messages"])
        elif step.op == "queue":
            queues[str(step.args.get("name"))] = str(step.args.get("address") or step.args.get("name"))
    return limits, queues


def _max_size_messages_browsed(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a send to an address with a message-count limit
    (max_size_messages) that the model takes into memory (answers accepted, below the limit) where the
    count Artemis keeps reaches the limit: the messages the address took into memory so far (sends
    answered accepted, this one's too) plus those it holds in memory right after the send (the model's
    message_count less paged_count, the largest of its queues), or, for a message of the send itself,
    those taken and held before it plus two for each earlier message of the send. Artemis counts a
    routed AMQP message with application properties twice once a browse (QueueControl#listMessages:
    the adapter's pending order, read after every step) decoded them
    (AMQPMessage#lazyDecodeApplicationProperties: addSize(addition, false) adds an element) and still
    once after its acknowledgement (QueueImpl#refDown takes one element off): the address is full at
    about half its limit (its paging flag, the next send dropped, failed or paged), and earlier after
    acknowledgements."""
    limits, queues = _message_limited(trace)
    if not limits:
        return False
    taken = dict.fromkeys(limits, 0)

    def held(step: TraceStep | None, address: str) -> int:
        return max((c.get("message_count", 0) - c.get("paged_count", 0)
                    for q, c in (step.queues.items() if step else ()) if queues.get(q) == address), default=0)

    for before, step in _pairs(trace):
        to = step.args.get("to") if isinstance(step.args, Mapping) else None
        if step.op not in ("send", "send_batch") or to not in limits:
            continue
        answers = step.result if isinstance(step.result, list) else [step.result]
        accepted = sum(1 for answer in answers if answer == "accepted")
        if not accepted:
            continue
        limit = limits[to]
        if taken[to] + held(before, to) + 2 * (accepted - 1) >= limit:
            return True  # a message of the send met a full address
        taken[to] += accepted
        if taken[to] + held(step, to) >= limit:
            return True  # the address is full after the send
    return False


def _pull_leaves_redelivery_waiting(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a receive or fetch before and after which a queue's consumer
    state has a message pending acknowledgement that no consumer holds (one waiting for redelivery)
    and counts fewer redelivered messages than pending ones (one of them was delivered only once): a
    pull request that was not given a waiting redelivery."""
    def waiting(step: TraceStep, queue: str) -> int:
        state = step.consumer_state.get(queue, {})
        return state.get("num_ack_pending", 0) - len(step.held.get(queue, ()))

    for before, step in _pairs(trace):
        if before is None or step.op not in ("receive", "fetch"):
            continue
        for queue, state in step.consumer_state.items():
            if waiting(before, queue) > 0 and waiting(step, queue) > 0 \
                    and state.get("num_ack_pending", 0) > state.get("num_redelivered", 0):
                return True
    return False


def _max_deliver_one_given_back(trace: Sequence[TraceStep]) -> bool:
    """The trace declares a queue (``queue`` or ``join``) with max_delivery_attempts 1, and after that,
    at or before the failing step, a nack or an advance (an ack wait may end there) gives a message
    back that the consumer will not be given again."""
    declared = False
    for step in trace:
        if step.op in ("queue", "join") and isinstance(step.args, Mapping) \
                and step.args.get("max_delivery_attempts") == 1:
            declared = True
        elif declared and step.op in ("nack", "advance"):
            return True
    return False


def _discard_new_send_under_max_bytes(trace: Sequence[TraceStep]) -> bool:
    """The trace declares a queue or address with a byte bound (max_length_bytes > 0) that refuses new
    messages (an overflow naming new or reject: discard-new), and after that, at or before the
    failing step, a send or send_batch."""
    declared = False
    for step in trace:
        args = step.args if isinstance(step.args, Mapping) else {}
        overflow = str(args.get("overflow", ""))
        limit = args.get("max_length_bytes")
        if step.op in ("queue", "address", "join") and isinstance(limit, int) and limit > 0 \
                and ("new" in overflow or "reject" in overflow):
            declared = True
        elif declared and step.op in ("send", "send_batch"):
            return True
    return False


def _first_subject_limit_set(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a set_subject_limit on a queue that no earlier step declared or
    set with a per-subject limit (max_per_subject unset: its first limit)."""
    limited: set[str] = set()
    for step in trace:
        args = step.args if isinstance(step.args, Mapping) else {}
        if step.op in ("queue", "join") and args.get("max_per_subject", -1) not in (-1, None):
            limited.add(str(args.get("name")))
        elif step.op == "set_subject_limit":
            if str(args.get("queue")) not in limited:
                return True
            limited.add(str(args.get("queue")))
    return False


def _overflow_both_thresholds(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a fetch that names both min_pending and min_ack_pending (an
    overflow priority group's pull request with two thresholds)."""
    return any(step.op == "fetch" and isinstance(step.args, Mapping)
               and (step.args.get("min_pending") or 0) > 0 and (step.args.get("min_ack_pending") or 0) > 0
               for step in trace)


def _removed_past_max_deliver(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a step other than a restart before which a queue's consumer
    state counts more redelivered messages than messages pending acknowledgement (one is kept past its
    delivery limit) and after which it counts fewer redelivered: the kept message left the stream."""
    for before, step in _pairs(trace):
        if before is None or step.op == "restart":
            continue
        for queue, state in step.consumer_state.items():
            was = before.consumer_state.get(queue, {})
            if was.get("num_redelivered", 0) > was.get("num_ack_pending", 0) \
                    and state.get("num_redelivered", 0) < was.get("num_redelivered", 0):
                return True
    return False


def _paused_pull(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a receive (or a receive_batch) of a consumer whose queue a pause
    step paused until a logical time after the receive's (the clock is the sum of the advances before
    it)."""
    now, paused, queue_of = 0, {}, {}
    for step in trace:
        args = step.args
        if step.op == "advance" and isinstance(args, int):
            now += args
        elif step.op == "consumer" and isinstance(args, Mapping):
            queue_of[str(args.get("name"))] = str(args.get("queue"))
        elif step.op == "pause" and isinstance(args, Mapping):
            paused[str(args.get("queue"))] = int(args.get("until_ms") or 0)
        elif step.op in ("receive", "receive_batch"):
            consumer = args.get("consumer") if isinstance(args, Mapping) else args
            if now < paused.get(queue_of.get(str(consumer), ""), 0):
                return True
    return False


#: shape name -> a predicate over the model's trace of a counterexample (its docstring says what it
#: accepts); a new bug that none describes needs a new one here, a few lines
SHAPES: Final[Mapping[str, Callable[[Sequence[TraceStep]], bool]]] = {
    "nack-at-delivery-limit": _nack_at_delivery_limit,
    "max-age-expiry-due": _max_age_expiry_due,
    "max-age-expiry-after-ttl-expiry": _max_age_expiry_after_ttl_expiry,
    "max-age-expiry-after-ttl-send": _max_age_expiry_after_ttl_send,
    "restart-past-max-deliver": _restart_past_max_deliver,
    "same-priority-send-not-reset": same_priority_send_not_reset,
    "removal-below-higher-priority": removal_below_higher_priority,
    "non-destructive-same-priority-send": non_destructive_same_priority_send,
    "non-destructive-direct-delivery": _non_destructive_direct_delivery,
    "last-value-direct-delivery": last_value_direct_delivery,
    "last-value-nack": last_value_nack,
    "non-destructive-delete": _non_destructive_delete,
    "ring-replaces-returning-paged": _ring_replaces_returning_paged,
    "depaged-message-delivering": _depaged_message_delivering,
    "close-returns-while-paging": _close_returns_while_paging,
    "non-destructive-ring-evicts-delivered": _non_destructive_ring_evicts_delivered,
    "non-destructive-ring-repeats-replaced": _non_destructive_ring_repeats_replaced,
    "non-destructive-scheduled-fires": _non_destructive_scheduled_fires,
    "max-size-messages-browsed": _max_size_messages_browsed,
    "pull-leaves-redelivery-waiting": _pull_leaves_redelivery_waiting,
    "max-deliver-one-given-back": _max_deliver_one_given_back,
    "discard-new-send-under-max-bytes": _discard_new_send_under_max_bytes,
    "first-subject-limit-set": _first_subject_limit_set,
    "overflow-both-thresholds": _overflow_both_thresholds,
    "removed-past-max-deliver": _removed_past_max_deliver,
    "paused-pull-served": _paused_pull,
    "ttl-beyond-signed-int": _ttl_beyond_signed_int,
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _sequence(value: Any) -> int | None:
    """The send order of a delivered id (``m7`` -> 7; the first of a batch's), else None."""
    if isinstance(value, list | tuple):
        value = next((v for v in value if v is not None), None)
    match = re.fullmatch(r"[A-Za-z]*(\d+)", str(value)) if value is not None else None
    return int(match.group(1)) if match else None


def _extra_delivery(want: Any, got: Any) -> bool:
    """A receive gets a message where the model has none; of a batch (a drain's receive_batch): the
    implementation's batch holds every message the model's does and at least one more."""
    if isinstance(want, list) and isinstance(got, list):
        wanted, given = Counter(m for m in want if m is not None), Counter(m for m in got if m is not None)
        return not wanted - given and given.total() > wanted.total()
    return want is None and got is not None


def _later_delivery(want: Any, got: Any) -> bool:
    first, other = _sequence(want), _sequence(got)
    return first is not None and other is not None and other > first


#: observed relation -> does it hold for (the model's value, the implementation's value)?
OBSERVED: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    "higher": lambda want, got: _number(want) and _number(got) and got > want,
    "lower": lambda want, got: _number(want) and _number(got) and got < want,
    "extra-delivery": _extra_delivery,
    # a receive gets a later message than the model's (one the model delivers here went elsewhere)
    "later-delivery": _later_delivery,
    # the same messages listed in another order (a browse)
    "reordered": lambda want, got: isinstance(want, list) and isinstance(got, list) and want != got
    and sorted(map(str, want)) == sorted(map(str, got)),
}
