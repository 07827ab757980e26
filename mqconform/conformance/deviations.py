"""The known-deviation registry: broker bugs the suite knows, each scoped to the finding it explains.

``deviations.yaml`` (next to this module) lists them, for the adapter, server version range and
profile of each entry. An entry with a **model** names a bug model (:mod:`mqconform.reference_model.bugs`:
the reference model with that one bug): it explains a finding, whatever check found it, only when the
counterexample, replayed on the implementation with the bug model's expectations, holds at every step
under every observation the scenario runner makes (:func:`holds_under`, the machinery of
:mod:`mqconform.conformance.minimize`); its **shape** (a step-shape predicate over the claimed model's
replay, :data:`SHAPES`) is only a cheap pre-filter, and anything the bug model does not reproduce
stays a failure. An entry without a model (a bug too intricate to model exactly, or not moved yet)
explains one kind of finding: the failing **check**, the shape and, optionally, the **observed**
relation and the compared **field**. The verdict is taken in :mod:`mqconform.conformance.verdict`.

An entry may instead name a **history** check of the report (``history: ring-bound``,
:data:`mqconform.reports.checks.python_engine.CHECKS`): a failing result of that check is a deviation
when every example that fails it has the entry's shape (the model's replay of the example's operations
as recorded; :mod:`mqconform.reports.excuse`).

The keys and how a version range counts as measured: docs/deviations.md. Loading checks every key
and value; a problem is a :class:`DeviationError` whose message starts ``<file>:<line>:``.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

#: the registry shipped with the suite
DEFAULT_PATH: Final = Path(__file__).resolve().parent / "deviations.yaml"

_REQUIRED: Final = ("adapter", "versions", "measured", "shape", "reason", "source")
#: an entry names the check it explains with `check` and `rules` (and optionally `observed` and
#: `field`), or several checks one bug shows through with `shows`: a list of those four keys each
_ONE_CHECK: Final = ("rules",)
_SHOWN_AS: Final = ("check", "history", "rules", "observed", "field")
_OPTIONAL: Final = ("profiles", "area", "observed", "field", "scenario", "check", "history", "rules", "shows",
                    "model", "unmodelled")
_OPS: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
    "<": operator.lt}
_CLAUSE: Final = re.compile(r"^(>=|<=|==|!=|>|<)?\s*(\d+(?:\.\d+){0,2})$")
_ADAPTER: Final = re.compile(r"^[A-Za-z0-9_.:-]+$")
_URL: Final = re.compile(r"^https?://\S+$")


class DeviationError(ValueError):
    """The registry file is malformed; the message is ``<file>:<line>: <problem>``."""


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"2.9.10"`` -> (2, 9, 10); leading digits of each part only (``"7.0.15-rc1"`` works);
    None when `text` has no version number."""
    parts: list[int] = []
    for part in text.strip().lstrip("v").split(".")[:3]:
        match = re.match(r"\d+", part)
        if match is None:
            break
        parts.append(int(match.group()))
    return tuple(parts) if parts else None


def _at(found: tuple[int, ...], width: int) -> tuple[int, ...]:
    """`found` cut or padded to `width` parts (``"<2.12"`` compares major.minor only)."""
    return found[:width] + (0,) * (width - len(found[:width]))


@attrs.frozen
class VersionRange:
    """``*`` (any version, also an unknown one) or clauses that must all hold."""

    text: str
    clauses: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        """ValueError naming the bad clause."""
        text = text.strip()
        if text == "*":
            return cls(text, ())
        clauses = []
        for raw in text.split(","):
            match = _CLAUSE.match(raw.strip())
            if match is None:
                raise ValueError(f"bad version clause {raw.strip()!r} (expected e.g. '>=2.9', '<2.12', "
                                 "'==7.0.15' or '*')")
            clauses.append((match.group(1) or "==", tuple(int(p) for p in match.group(2).split("."))))
        return cls(text, tuple(clauses))

    def contains(self, version: str) -> bool:
        """Does the server `version` fall in the range? An unknown version only matches ``*``."""
        if not self.clauses:
            return True
        found = parse_version(version)
        if found is None:
            return False
        return all(_OPS[op](_at(found, len(bound)), bound) for op, bound in self.clauses)

    def unmeasured_ends(self, fails: Sequence[str], holds: Sequence[str]) -> list[str]:
        """The ends of the range that `fails` / `holds` (releases replayed) do not pin down."""
        def hit(bound: tuple[int, ...], versions: Sequence[str]) -> bool:
            """Is the release the bound names (``2.11`` is 2.11.0) among `versions`?"""
            return any((v := parse_version(text)) is not None and _at(v, 3) == _at(bound, 3)
                       for text in versions)

        lower = [b for op, b in self.clauses if op in (">=", ">", "==")]
        upper = [(op, b) for op, b in self.clauses if op in ("<", "<=", "==")]
        ends: list[str] = []
        if not lower:
            ends.append("lower end (open)")
        elif not any(hit(b, fails) for op, b in self.clauses if op in (">=", "==")):
            ends.append(f"lower end {'.'.join(map(str, lower[0]))}")
        if not upper:
            ends.append("upper end (open)")
        elif not any(hit(b, holds if op == "<" else fails) for op, b in upper):
            ends.append(f"upper end {'.'.join(map(str, upper[0][1]))}")
        return ends


@attrs.frozen
class Measured:
    """How a version range was established (see the module docstring, ``measured``)."""

    fails: tuple[str, ...] = ()
    holds: tuple[str, ...] = ()
    unmeasured: str = ""


# ------------------------------------------------------------------------------------- step shapes
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


def _rose(before: TraceStep | None, after: TraceStep, counter: str) -> list[str]:
    """The queues whose model `counter` is higher after `after` than before it."""
    return [q for q, c in after.queues.items()
            if c.get(counter, 0) > (before.queues.get(q, {}).get(counter, 0) if before else 0)]


def _pairs(trace: Sequence[TraceStep]) -> Iterable[tuple[TraceStep | None, TraceStep]]:
    return zip([None, *trace[:-1]], trace, strict=True)


def _nack_at_delivery_limit(trace: Sequence[TraceStep]) -> bool:
    """At or before the failing step, a nack that asks for a requeue after which the model
    dead-letters or drops the message instead: it reached its delivery limit (the model's ``killed``
    count of the queue rises at the nack; a nack with ``requeue: false`` is not one)."""
    return any(step.op == "nack" and isinstance(step.args, Mapping) and step.args.get("requeue", True)
               and _rose(before, step, "killed") for before, step in _pairs(trace))


def _sent_with_ttl(trace: Sequence[TraceStep]) -> set[str]:
    """The ids of messages sent with their own TTL (``ttl_ms``: JetStream's Nats-TTL)."""
    ids: set[str] = set()
    for step in trace:
        if step.op in ("send", "send_batch") and isinstance(step.args, Mapping) \
                and step.args.get("ttl_ms") is not None:
            ids.update(_ids(step))
    return ids


def _expired_at(before: TraceStep | None, step: TraceStep) -> set[str]:
    """The ids an advance took out of the queues' ready messages while their ``expired`` count rose."""
    gone: set[str] = set()
    for queue in _rose(before, step, "expired"):
        was = set(map(str, before.queues.get(queue, {}).get("pending", []))) if before else set()
        gone |= was - set(map(str, step.queues[queue].get("pending", [])))
    return gone


def _last_advance(trace: Sequence[TraceStep]) -> int | None:
    return next((i for i in range(len(trace) - 1, -1, -1) if trace[i].op == "advance"), None)


def _max_age_expiry_due(trace: Sequence[TraceStep]) -> bool:
    """The last advance at or before the failing step is one at which the model expired a message
    sent without a TTL of its own, so by the queue's message TTL (JetStream ``max_age``): the failing
    step observes the queue before the implementation's next expiry check."""
    index = _last_advance(trace)
    if index is None:
        return False
    return bool(_expired_at(trace[index - 1] if index else None, trace[index]) - _sent_with_ttl(trace))


def _max_age_expiry_after_ttl_expiry(trace: Sequence[TraceStep]) -> bool:
    """As ``max-age-expiry-due``, and an earlier advance expired a message sent with a TTL of its own
    (``ttl_ms``, JetStream's Nats-TTL)."""
    index = _last_advance(trace)
    if index is None or not _max_age_expiry_due(trace):
        return False
    with_ttl = _sent_with_ttl(trace)
    return any(step.op == "advance" and _expired_at(before, step) & with_ttl
               for before, step in list(_pairs(trace))[:index])


def _restart_past_max_deliver(trace: Sequence[TraceStep]) -> bool:
    """The failing step is a restart, and right before it the model's consumer state of a queue
    counts more redelivered messages than messages pending acknowledgement: a redelivered message
    reached its delivery limit (MaxDeliver) and is still stored."""
    if len(trace) < 2 or trace[-1].op != "restart":
        return False
    return any(state.get("num_redelivered", 0) > state.get("num_ack_pending", 0)
               for state in trace[-2].consumer_state.values())


def _priorities(trace: Sequence[TraceStep]) -> dict[str, int]:
    """The priority each message was sent with (default 4)."""
    sent: dict[str, int] = {}
    for step in trace:
        if step.op in ("send", "send_batch") and isinstance(step.args, Mapping):
            for msg_id in _ids(step):
                sent[msg_id] = int(step.args.get("priority", 4))
    return sent


def _same_priority_send_not_reset(trace: Sequence[TraceStep]) -> bool:
    """A send at priority p to a queue whose previous add was at priority p too (a send, or a message
    a close or nack returned to it), while lower-priority messages are pending there: Artemis'
    PriorityLinkedListImpl#checkHighest then resets no consumer's iterator, and one that moved below p
    hands out the lower ones first."""
    priority = _priorities(trace)
    last: dict[str, set[int]] = {}
    for before, step in _pairs(trace):
        if step.op in ("close", "nack"):
            for queue, now in step.queues.items():
                was = set(map(str, before.queues.get(queue, {}).get("pending", []))) if before else set()
                back = set(map(str, now.get("pending", []))) - was
                if back:
                    last[queue] = {priority.get(m, 4) for m in back}
        elif step.op in ("send", "send_batch") and isinstance(step.args, Mapping):
            level = int(step.args.get("priority", 4))
            for queue in _rose(before, step, "added"):
                pending = step.queues[queue].get("pending", [])
                if level in last.get(queue, set()) and any(priority.get(str(m), 4) < level for m in pending):
                    return True
                last[queue] = {level}
    return False


def _non_destructive_queues(trace: Sequence[TraceStep]) -> set[str]:
    """The names of the queues the trace declares non-destructive (DELIVERY-12)."""
    return {str(step.args.get("name")) for step in trace
            if step.op == "queue" and isinstance(step.args, Mapping) and step.args.get("non_destructive")}


def _non_destructive_direct_delivery(trace: Sequence[TraceStep]) -> bool:
    """A send to a non-destructive queue that a consumer takes at once (the model's delivering count
    of the queue rises at the send): Artemis delivers it directly and does not keep it in the queue
    (QueueImpl#deliverDirect), where a non-destructive queue keeps every message it was sent."""
    kept = _non_destructive_queues(trace)
    return any(step.op in ("send", "send_batch") and set(_rose(before, step, "delivering_count")) & kept
               for before, step in _pairs(trace))


def _ids(step: TraceStep) -> list[str]:
    """The message ids a send, receive or ack step names or got, in order."""
    if step.op in ("receive", "receive_batch"):
        got = step.result if isinstance(step.result, list) else [step.result]
        return [str(i) for i in got if i is not None]
    if isinstance(step.args, Mapping):
        return [str(i) for i in step.args.get("ids", [step.args.get("id")]) if i is not None]
    return []


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


def _close_returns_paged_while_paging(trace: Sequence[TraceStep]) -> bool:
    """The failing step is a browse or a receive, and before it a close returned messages read from a
    page file (their sends answered ``paged``) to a queue that still had paged messages. Artemis
    RefsOperation#afterRollback takes the returns out of the delivering count (checkRedelivery ->
    decDelivering -> deliverAsync) before postRollback puts them back in memory; the paging executor's
    QueueImpl#needsDepage can read the budget in between and depage one more message, which a browse
    then lists from memory ahead of held paged messages and a receive gets where the read budget holds
    no more (a race: some runs only)."""
    if not trace or trace[-1].op not in ("browse", "receive", "receive_batch"):
        return False
    return any(step.op == "close" and back & paged
               and any(q.get("paged_count", 0) > 0 for q in step.queues.values())
               for _, step, back, paged in _returns(trace))


def _non_destructive_ring_evicts_delivered(trace: Sequence[TraceStep]) -> bool:
    """A send at which the model's ring of a non-destructive queue replaces a message a consumer holds
    (received, not acknowledged; a non-destructive queue keeps delivered messages listed). Artemis
    QueueImpl#enforceRing polls that head off the list but skips refRemoved because it is in delivery,
    so the pending count keeps it: one too many for every such eviction."""
    kept = _non_destructive_queues(trace)
    for before, step in _pairs(trace):
        if before is None or step.op not in ("send", "send_batch"):
            continue
        for queue in set(_rose(before, step, "replaced")) & kept:
            gone = set(map(str, before.queues.get(queue, {}).get("pending", []))) \
                - set(map(str, step.queues[queue].get("pending", [])))
            if gone & before.held.get(queue, frozenset()):
                return True
    return False


def _non_destructive_ring_repeats_replaced(trace: Sequence[TraceStep]) -> bool:
    """The failing step is a receive, and before it a send at which the model's ring of a
    non-destructive queue replaced a message no consumer held while a consumer of the queue was open.
    Artemis offered that head to the consumer, which had no credit (busy: QueueImpl#deliver calls the
    iterator's repeat()); the eviction moves the iterator's current node on (LinkedListImpl nudges it),
    and Iterator#next's repeat branch returns the new node without marking it as the last returned,
    so the next call returns it once more: a non-destructive queue delivers it to the consumer twice."""
    if not trace or trace[-1].op not in ("receive", "receive_batch"):
        return False
    kept = _non_destructive_queues(trace)
    consumers: dict[str, str] = {}  # open consumer -> its queue
    for before, step in _pairs(trace):
        if step.op == "consumer" and isinstance(step.args, Mapping):
            consumers[str(step.args.get("name"))] = str(step.args.get("queue"))
        elif step.op == "close":
            consumers.pop(str(step.args), None)
        elif step.op in ("send", "send_batch") and before is not None:
            for queue in set(_rose(before, step, "replaced")) & kept & set(consumers.values()):
                listed = set(map(str, before.queues.get(queue, {}).get("pending", []))) | set(_ids(step))
                gone = listed - set(map(str, step.queues[queue].get("pending", [])))
                if gone - before.held.get(queue, frozenset()):
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


#: shape name -> a predicate over the model's trace of a counterexample (its docstring says what it
#: accepts); a new bug that none describes needs a new one here, a few lines
SHAPES: Final[Mapping[str, Callable[[Sequence[TraceStep]], bool]]] = {
    "nack-at-delivery-limit": _nack_at_delivery_limit,
    "max-age-expiry-due": _max_age_expiry_due,
    "max-age-expiry-after-ttl-expiry": _max_age_expiry_after_ttl_expiry,
    "restart-past-max-deliver": _restart_past_max_deliver,
    "same-priority-send-not-reset": _same_priority_send_not_reset,
    "non-destructive-direct-delivery": _non_destructive_direct_delivery,
    "ring-replaces-returning-paged": _ring_replaces_returning_paged,
    "close-returns-paged-while-paging": _close_returns_paged_while_paging,
    "non-destructive-ring-evicts-delivered": _non_destructive_ring_evicts_delivered,
    "non-destructive-ring-repeats-replaced": _non_destructive_ring_repeats_replaced,
    "max-size-messages-browsed": _max_size_messages_browsed,
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _sequence(value: Any) -> int | None:
    """The send order of a delivered id (``m7`` -> 7; the first of a batch's), else None."""
    if isinstance(value, list | tuple):
        value = next((v for v in value if v is not None), None)
    match = re.fullmatch(r"[A-Za-z]*(\d+)", str(value)) if value is not None else None
    return int(match.group(1)) if match else None


def _later_delivery(want: Any, got: Any) -> bool:
    first, other = _sequence(want), _sequence(got)
    return first is not None and other is not None and other > first


#: observed relation -> does it hold for (the model's value, the implementation's value)?
OBSERVED: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    "higher": lambda want, got: _number(want) and _number(got) and got > want,
    "lower": lambda want, got: _number(want) and _number(got) and got < want,
    "extra-delivery": lambda want, got: want is None and got is not None,
    # a receive gets a later message than the model's (one the model delivers here went elsewhere)
    "later-delivery": _later_delivery,
    # the same messages listed in another order (a browse)
    "reordered": lambda want, got: isinstance(want, list) and isinstance(got, list) and want != got
    and sorted(map(str, want)) == sorted(map(str, got)),
}


# ------------------------------------------------------------------------------------- bug models
#: (scenario steps as ``{op: args}``, a bug model's name) -> do the steps hold on the implementation
#: against the model with that bug (:func:`holds_under` bound to an adapter)?
Replay = Callable[[Sequence[Mapping[str, Any]], str], bool]


def holds_under(steps: Sequence[Mapping[str, Any]], model: str, claimed: Any,
                adapter_factory: Callable[[], Any]) -> bool:
    """Do `steps` (``{op: args}``; an ``expect`` is ignored), replayed on the adapter as a scenario
    annotated with the expectations of the model `claimed` (ModelOptions: the claimed profile, held to
    the adapter's contract) with bug model `model`, pass at every step under every observation? The
    minimiser's test of a counterexample (mqconform.conformance.minimize), against the bug model
    instead of the claimed one. Steps the bug model rejects, and a replay with no answer, do not."""
    from mqconform.reference_model.bugs import bug_model
    from mqconform.scenario import ModelRejected, annotate, from_data, run_scenario

    options = bug_model(model).enable(claimed)
    raw = [{op: args} for step in steps for op, args in step.items() if op != "expect"]
    if not raw:
        return False
    try:
        scenario = from_data({"profile": options.name, "steps": annotate(raw, options)}, "bug-model")
    except (ModelRejected, ValueError):
        return False
    return run_scenario(scenario, adapter_factory(), namespace="mqc-bug-model").verdict == "pass"


# ---------------------------------------------------------------------------------------- entries
@attrs.frozen
class Deviation:
    """One registered broker bug, as one check shows it (see the module docstring)."""

    rules: tuple[str, ...]
    adapter: str
    versions: VersionRange
    check: str
    shape: str
    reason: str
    source: str
    measured: Measured = Measured()
    profiles: frozenset[str] | None = None
    area: str | None = None
    observed: str | None = None
    field: str | None = None
    scenario: str | None = None
    #: ``<file>:<line>`` of the entry
    location: str = attrs.field(default="", eq=False)
    #: `check` names a history check of the report (ring-bound, ...), not a step check
    history: bool = False
    #: the bug model (mqconform.reference_model.bugs) whose replay decides; `check` is then "" (any)
    model: str | None = None
    #: without a bug model: why the bug has none (too intricate to model exactly, or not yet)
    unmodelled: str = ""

    def applies(self, adapter: str, version: str, profile: str, claimed: str) -> bool:
        """Is the entry about `adapter` at server `version`, checked against `profile` (the adapter
        claims `claimed`)?"""
        profiles = self.profiles if self.profiles is not None else frozenset({claimed})
        return self.adapter == adapter and profile in profiles and self.versions.contains(version)

    def explains(self, finding: Any, profile: str, trace: Callable[[], Sequence[TraceStep] | None],
                 replay: Replay | None = None) -> bool:
        """Does the entry explain `finding` (runner.Finding) under `profile`? With a bug model: its
        area, the shape of its counterexample (a pre-filter) and `replay` of the counterexample on the
        implementation against the bug model holds (no replay: never). Without: its check (and
        area), the observed field and relation (of the check's difference or of the one the minimised
        counterexample ends at), its rules, and the shape of its counterexample (`trace`: the model's
        replay of it, computed on demand)."""
        if self.model is not None:
            if self.history or (self.area is not None and finding.machine != self.area):
                return False
            return replay is not None and self.has_shape(trace()) and \
                replay([step.as_scenario() for step in finding.steps], self.model)
        if self.history or finding.check != self.check or \
                (self.area is not None and finding.machine != self.area):
            return False
        # the difference the check saw, or the one the minimised counterexample shows at its end
        seen = [(getattr(finding, "field", ""), getattr(finding, "expected", None),
                 getattr(finding, "actual", None))]
        if getattr(finding, "shown", None) is not None:
            seen.append(finding.shown)
        if not any((self.field is None or field == self.field)
                   and (self.observed is None or OBSERVED[self.observed](want, got))
                   for field, want, got in seen):
            return False
        if not set(self.rules) & set(finding.rules):
            return False
        return self.has_shape(trace())

    def has_shape(self, trace: Sequence[TraceStep] | None) -> bool:
        """The model's replay (None: the model rejected the steps) has the entry's shape."""
        return trace is not None and len(trace) > 0 and SHAPES[self.shape](trace)

    def excuses(self, check: str, machine: str, trace: Sequence[TraceStep] | None) -> bool:
        """Does the entry explain one example that fails history check `check` in area `machine`:
        the model's replay of the example's operations (`trace`) has the entry's shape?"""
        if not self.history or check != self.check or (self.area is not None and machine != self.area):
            return False
        return self.has_shape(trace)

    def describe(self) -> str:
        return f"{self.reason} ({self.source})"


@attrs.frozen
class Registry:
    """Every registered deviation, in file order."""

    deviations: tuple[Deviation, ...] = ()

    def __len__(self) -> int:
        return len(self.deviations)

    def find(self, finding: Any, adapter: str, version: str, profile: str, claimed: str,
             replay: Replay | None = None) -> Deviation | None:
        """The first entry that explains `finding` for `adapter` at `version` checked against
        `profile` (claimed: `claimed`), else None (see Deviation.applies and .explains; `replay`
        decides for the entries with a bug model)."""
        cache: list[list[TraceStep] | None] = []

        def trace() -> list[TraceStep] | None:
            if not cache:
                cache.append(model_trace(finding.steps, profile))
            return cache[0]

        for deviation in self.deviations:
            if deviation.applies(adapter, version, profile, claimed) and \
                    deviation.explains(finding, profile, trace, replay):
                return deviation
        return None

    def for_history(self, check: str, adapter: str, version: str, profile: str,
                    claimed: str) -> tuple[Deviation, ...]:
        """The entries about history check `check` for `adapter` at `version` checked against `profile`."""
        return tuple(d for d in self.deviations if d.history and d.check == check
                     and d.applies(adapter, version, profile, claimed))

    def for_adapter(self, adapter: str) -> tuple[Deviation, ...]:
        return tuple(d for d in self.deviations if d.adapter == adapter)


class _Loader:
    """One YAML file being checked, with line numbers from its nodes."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self.text = path.read_text(encoding="utf-8")

    def error(self, node: Node | None, problem: str) -> DeviationError:
        line = node.start_mark.line + 1 if node is not None else 1
        return DeviationError(f"{self.name}:{line}: {problem}")

    def scalar(self, node: Node, key: str) -> str:
        if not isinstance(node, ScalarNode) or not str(node.value).strip():
            raise self.error(node, f"{key} must be a non-empty string")
        return str(node.value).strip()

    def names(self, node: Node, key: str, allow_empty: bool = False) -> list[tuple[Node, str]]:
        """A list of strings (a YAML sequence), each with its node."""
        if not isinstance(node, SequenceNode) or (not node.value and not allow_empty):
            raise self.error(node, f"{key} must be a {'' if allow_empty else 'non-empty '}list")
        return [(item, self.scalar(item, key)) for item in node.value]

    def root(self) -> Node | None:
        try:
            return yaml.compose(self.text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else 1
            problem = exc.problem or exc.context
            raise DeviationError(f"{self.name}:{line}: malformed YAML: {problem}") from None
        except yaml.YAMLError as exc:
            raise DeviationError(f"{self.name}:1: malformed YAML: {exc}") from None

    def mapping(self, node: Node, allowed: tuple[str, ...], required: tuple[str, ...],
                what: str) -> dict[str, Node]:
        if not isinstance(node, MappingNode):
            raise self.error(node, f"{what} must be a mapping with keys {', '.join(required)}")
        found: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if key in found:
                raise self.error(key_node, f"duplicate key {key!r} in {what}")
            if key not in allowed:
                raise self.error(key_node, f"unknown key {key!r} in {what} (allowed: {', '.join(allowed)})")
            found[key] = value_node
        for key in required:
            if key not in found:
                raise self.error(node, f"missing key {key!r} in {what}")
        return found


@attrs.frozen
class _Context:
    """What entries are checked against: the catalogue, the profiles and the check tables."""

    catalogue: Any
    profiles: tuple[str, ...]
    #: check -> area -> the rule ids it can report there
    checks: Mapping[str, Mapping[str, frozenset[str]]]

    @classmethod
    @functools.cache
    def load(cls) -> _Context:
        """Built once per process (the catalogue and the tables do not change while it runs)."""
        from mqconform.conformance.restart import AFTER_RESTART, FOLLOW_UP_CHECKS
        from mqconform.conformance.rules import TABLES
        from mqconform.spec import PROFILES, load_catalogue

        checks: dict[str, dict[str, frozenset[str]]] = {}
        for area, table in TABLES.items():
            for check, ids in table.items():
                extra = AFTER_RESTART if check in FOLLOW_UP_CHECKS else ()
                checks.setdefault(check, {})[area] = frozenset(ids) | frozenset(extra)
        return cls(load_catalogue(), tuple(PROFILES), checks)


def claimed_profile(adapter: str) -> str | None:
    """The profile the class of adapter `adapter` claims, when it says so at class level."""
    from mqconform.adapters.registry import AdapterLoadError, load_class

    try:
        claimed = getattr(load_class(adapter), "profile", None)
    except AdapterLoadError:
        return None
    return claimed if isinstance(claimed, str) and claimed else None


def _measured(file: _Loader, node: Node, versions: VersionRange) -> Measured:
    fields = file.mapping(node, ("fails", "holds", "unmeasured"), ("fails",), "measured")
    fails = [v for _, v in file.names(fields["fails"], "measured.fails")]
    holds = [v for _, v in file.names(fields["holds"], "measured.holds", allow_empty=True)] \
        if "holds" in fields else []
    for item, text in file.names(fields["fails"], "measured.fails"):
        if parse_version(text) is None or not versions.contains(text):
            raise file.error(item, f"measured.fails: {text} is not in the range {versions.text}")
    if "holds" in fields:
        for item, text in file.names(fields["holds"], "measured.holds", allow_empty=True):
            if parse_version(text) is None or versions.contains(text):
                raise file.error(item, f"measured.holds: {text} is in the range {versions.text}")
    note = file.scalar(fields["unmeasured"], "measured.unmeasured") if "unmeasured" in fields else ""
    ends = versions.unmeasured_ends(fails, holds)
    if ends and not note:
        raise file.error(node, f"versions {versions.text}: {' and '.join(ends)} not measured (replay the "
                               "release there, or say why not in measured.unmeasured)")
    return Measured(tuple(fails), tuple(holds), note)


def _entry(file: _Loader, node: Node, context: _Context,
           seen: dict[tuple[Any, ...], str]) -> list[Deviation]:
    """The deviations of one entry: one per check it shows through (``check`` or ``shows``)."""
    fields = file.mapping(node, _REQUIRED + _OPTIONAL, _REQUIRED, "deviation")
    model = _model(file, fields) if "model" in fields else None
    if model is not None and "unmodelled" in fields:
        raise file.error(fields["unmodelled"], "unmodelled does not apply to an entry with a bug model")
    unmodelled = file.scalar(fields["unmodelled"], "unmodelled") if "unmodelled" in fields else ""
    if model is None and ("shows" in fields) == any(key in fields for key in _SHOWN_AS):
        raise file.error(node, "a deviation names its check with check (or history) and rules (observed, "
                               "field), or several with shows: a list of those; not both, not neither")
    adapter = file.scalar(fields["adapter"], "adapter")
    if not _ADAPTER.match(adapter):
        raise file.error(fields["adapter"], f"malformed adapter name {adapter!r}")
    versions_text = file.scalar(fields["versions"], "versions")
    try:
        versions = VersionRange.parse(versions_text)
    except ValueError as exc:
        raise file.error(fields["versions"], str(exc)) from None
    measured = _measured(file, fields["measured"], versions)
    source = file.scalar(fields["source"], "source")
    if not _URL.match(source):
        raise file.error(fields["source"], f"source must be an http(s) link, not {source!r}")
    chosen: frozenset[str] | None = None
    if "profiles" in fields:
        names = file.names(fields["profiles"], "profiles")
        for item, name in names:
            if name not in context.profiles:
                raise file.error(item, f"unknown profile {name!r} (known: {', '.join(context.profiles)})")
        chosen = frozenset(name for _, name in names)
        profiles = sorted(chosen)
    else:
        claimed = claimed_profile(adapter)
        if claimed is None:
            raise file.error(node, f"adapter {adapter!r} does not claim one profile by its class: name the "
                                   "profiles the deviation is from (profiles: [...])")
        profiles = [claimed]
    areas_of = context.checks
    area = file.scalar(fields["area"], "area") if "area" in fields else None
    shape = file.scalar(fields["shape"], "shape")
    if shape not in SHAPES:
        raise file.error(fields["shape"], f"unknown shape {shape!r} (known: {', '.join(SHAPES)})")
    scenario = file.scalar(fields["scenario"], "scenario") if "scenario" in fields else None
    reason = file.scalar(fields["reason"], "reason")
    if model is not None:
        return [_modelled(file, node, fields, context, seen, profiles, model,
                          Deviation((), adapter, versions, "", shape, reason, source, measured, chosen,
                                    area, None, None, scenario, "", False, model.name))]
    if "shows" in fields:
        shows = fields["shows"]
        if not isinstance(shows, SequenceNode) or not shows.value:
            raise file.error(shows, "shows must be a non-empty list of {check or history, rules, observed, "
                                    "field}")
        views = [(item, file.mapping(item, _SHOWN_AS, _ONE_CHECK, "shows item")) for item in shows.value]
    else:
        views = [(node, fields)]
    found: list[Deviation] = []
    for at, view in views:
        rules = file.names(view["rules"], "rules")
        for item, rule in rules:
            if rule not in context.catalogue:
                raise file.error(item, f"unknown rule id {rule!r} (not in the spec catalogue)")
            outside = [p for p in profiles if not context.catalogue[rule].applies_to(p)]
            if outside:
                raise file.error(item, f"rule {rule} does not apply to {', '.join(outside)} (spec/: "
                                       f"{', '.join(sorted(context.catalogue[rule].profiles or ()))}), so "
                                       "no run of that profile can fail it")
        if ("check" in view) == ("history" in view):
            raise file.error(at, "name the check with check (a step check) or history (a history check "
                                 "of the report): one of the two")
        history = "history" in view
        areas: Mapping[str, frozenset[str]]
        if history:
            check, areas = _history_check(file, view)
        else:
            check = file.scalar(view["check"], "check")
            found_areas = areas_of.get(check)
            if found_areas is None:
                raise file.error(view["check"], f"unknown check {check!r} (not in "
                                                "mqconform.conformance.rules)")
            areas = found_areas
        if history and area is not None:
            known_areas = {name for by_area in areas_of.values() for name in by_area}
            if area not in known_areas:
                raise file.error(fields["area"], f"unknown area {area!r} "
                                                 f"(known: {', '.join(sorted(known_areas))})")
        elif area is not None and area not in areas:
            raise file.error(fields["area"], f"check {check} is not made in area {area!r} "
                                             f"(it is in: {', '.join(sorted(areas))})")
        reported = areas[area] if area is not None and not history else frozenset().union(*areas.values())
        for item, rule in rules:
            if rule not in reported:
                where = f" in area {area}" if area else ""
                raise file.error(item, f"check {check} does not report {rule}{where}")
        observed = file.scalar(view["observed"], "observed") if "observed" in view else None
        if observed is not None and observed not in OBSERVED:
            raise file.error(view["observed"], f"unknown observed relation {observed!r} "
                                               f"(known: {', '.join(OBSERVED)})")
        field = file.scalar(view["field"], "field") if "field" in view else None
        location = f"{file.name}:{at.start_mark.line + 1}"
        rule_ids = tuple(rule for _, rule in rules)
        key = (rule_ids, adapter, versions.text, check, history, area, shape, observed, field, chosen)
        if key in seen:
            raise file.error(at, f"duplicate deviation {check} [{', '.join(rule_ids)}] for {adapter} "
                                 f"{versions.text} (first at {seen[key]})")
        seen[key] = location
        found.append(Deviation(rule_ids, adapter, versions, check, shape, reason, source, measured, chosen,
                               area, observed, field, scenario, location, history, unmodelled=unmodelled))
    return found


def _model(file: _Loader, fields: dict[str, Node]) -> Any:
    """The entry's bug model (reference_model.bugs.BugModel); the keys that name checks do not apply."""
    from mqconform.reference_model.bugs import BUGS

    name = file.scalar(fields["model"], "model")
    if name not in BUGS:
        raise file.error(fields["model"], f"unknown bug model {name!r} (known: {', '.join(BUGS)}; "
                                          "mqconform/reference_model/bugs/)")
    for key in ("shows", "check", "history", "observed", "field"):
        if key in fields:
            raise file.error(fields[key], f"{key} does not apply to an entry with a bug model (its replay "
                                          "decides, whatever check found the bug)")
    return BUGS[name]


def _modelled(file: _Loader, node: Node, fields: dict[str, Node], context: _Context,
              seen: dict[tuple[Any, ...], str], profiles: list[str], bug: Any, entry: Deviation) -> Deviation:
    """The deviation of an entry with a bug model: the rules are the bug model's unless the entry
    names them (each in the catalogue and applying to the entry's profiles); the area, when given, is
    a known one; one entry per bug model, adapter, range and profiles."""
    rules: list[tuple[Node, str]] = file.names(fields["rules"], "rules") if "rules" in fields else \
        [(node, rule) for rule in bug.rules]
    for item, rule in rules:
        if rule not in context.catalogue:
            raise file.error(item, f"unknown rule id {rule!r} (not in the spec catalogue)")
        outside = [p for p in profiles if not context.catalogue[rule].applies_to(p)]
        if outside:
            raise file.error(item, f"rule {rule} does not apply to {', '.join(outside)}, so no run of that "
                                   "profile can fail it")
    if entry.area is not None:
        known_areas = {name for by_area in context.checks.values() for name in by_area}
        if entry.area not in known_areas:
            raise file.error(fields["area"], f"unknown area {entry.area!r} "
                                             f"(known: {', '.join(sorted(known_areas))})")
    location = f"{file.name}:{node.start_mark.line + 1}"
    key = ("model", bug.name, entry.adapter, entry.versions.text, entry.area, entry.profiles)
    if key in seen:
        raise file.error(node, f"duplicate deviation: bug model {bug.name} for {entry.adapter} "
                               f"{entry.versions.text} (first at {seen[key]})")
    seen[key] = location
    return attrs.evolve(entry, rules=tuple(rule for _, rule in rules), location=location)


def _history_check(file: _Loader, view: dict[str, Node]) -> tuple[str, Mapping[str, frozenset[str]]]:
    """A ``history:`` view: the report's history check and the rules it reports (any area); the
    compared-value keys do not apply (a history check compares no two values)."""
    from mqconform.reports.checks.python_engine import CHECKS

    check = file.scalar(view["history"], "history")
    if check not in CHECKS:
        raise file.error(view["history"], f"unknown history check {check!r} (known: {', '.join(CHECKS)})")
    for key in ("observed", "field"):
        if key in view:
            raise file.error(view[key], f"{key} does not apply to a history check (it compares no values)")
    return check, {"": frozenset(CHECKS[check])}


def load_registry(paths: Iterable[Path] | None = None) -> Registry:
    """Load and check the registry files (default: the shipped ``deviations.yaml``)."""
    context = _Context.load()
    found: list[Deviation] = []
    seen: dict[tuple[Any, ...], str] = {}
    for path in (DEFAULT_PATH,) if paths is None else tuple(paths):
        try:
            file = _Loader(Path(path))
        except OSError as exc:
            raise DeviationError(f"{path}:1: cannot read: {exc.strerror or exc}") from None
        root = file.root()
        if root is None:
            continue  # an empty file registers nothing
        top = file.mapping(root, ("deviations",), ("deviations",), "file")
        entries = top["deviations"]
        if isinstance(entries, ScalarNode) and entries.tag.endswith(":null"):
            continue
        if not isinstance(entries, SequenceNode):
            raise file.error(entries, "deviations must be a list of entries")
        for item in entries.value:
            found.extend(_entry(file, item, context, seen))
    return Registry(tuple(found))
