"""The history checks' definitions, read by both engines (:mod:`.python_engine`, :mod:`.spark_engine`).

Each check's rules and statistics, the verdict and sentence it gives from them, the columns and codes
the checks read, and the facts both engines derive alike from the few rows whose JSON ``value`` is read
(queue declarations, drains, admission answers): which queue a send reaches, which queues are shared
listings, which were drained, and the ``lost`` statistics of one example. What each check computes:
docs/reports.md, *The history checks*.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from mqconform.reports.api import CheckResult, RunInfo, Verdict

ACCEPTED = frozenset({"accepted", "paged"})
REFUSED = frozenset({"dropped", "failed"})
#: a blocked send is held until the address has room (PAGING-26): deferred, like an indeterminate one
DEFERRED = frozenset({"blocked"})

#: check name -> rule ids it evidences
CHECKS: dict[str, tuple[str, ...]] = {
    "total-queue": ("DELIVERY-6", "DELIVERY-2"),
    "lost": ("DELIVERY-2", "DELIVERY-15"),
    "delivery-after-ack": ("DELIVERY-7",),
    "counter-identity": ("DELIVERY-1",),
    "ring-bound": ("RING-17",),
    "throttle-bound": ("THROTTLE-7",),
    "admission-answer": ("ADMISSION-7", "ADMISSION-3"),
    "order": ("DELIVERY-4",),
    "delivery-count": ("REDELIVERY-1", "REDELIVERY-2", "REDELIVERY-12", "REDELIVERY-19", "REDELIVERY-22"),
}

#: check name -> the statistics every engine reports (all ints)
STATS: dict[str, tuple[str, ...]] = {
    "total-queue": ("attempted", "acknowledged", "refused", "indeterminate", "delivered", "duplicated",
                    "unexpected", "refused_delivered", "recovered"),
    "lost": ("examples", "unknown_examples", "not_applicable_examples", "drained_examples", "acknowledged",
             "consumed", "possibly_consumed", "in_queue", "replaced", "killed", "expired", "lost"),
    "delivery-after-ack": ("acked", "delivered_after_ack"),
    "counter-identity": ("observations", "checked", "broken"),
    "ring-bound": ("observations", "checked", "exempt", "over_bound"),
    "throttle-bound": ("observations", "over_bound"),
    "admission-answer": ("requests", "answers", "multiple", "timeouts", "early_timeouts"),
    "order": ("first_deliveries", "consumers", "out_of_order"),
    "delivery-count": ("observations", "messages", "decreased"),
}

StatKey = tuple[str, str, str | None, str]  # run, machine, queue, check
#: per failing result, its earliest violation: ((example, history index), sentence) (checks of WITNESSED)
Witnesses = dict[StatKey, tuple[tuple[int, int], str]]
WITNESSED = frozenset({"order", "delivery-count"})
#: a row of the few whose JSON value is parsed, with its value
JsonRow = tuple[dict[str, Any], dict[str, Any]]
Stats = dict[StatKey, dict[str, int]]


@attrs.frozen
class SimpleVerdict:
    """A check that fails on the sum of its `bad` statistics, has nothing to say (`empty_verdict`) when
    its `empty` statistic is 0, and passes otherwise; sentences are ``str.format`` templates over the
    statistics."""

    bad: tuple[str, ...]
    fail: str
    passed: str
    empty: str | None = None
    empty_text: str = ""
    empty_verdict: Verdict = "not_applicable"


SIMPLE_VERDICTS: dict[str, SimpleVerdict] = {
    "delivery-after-ack": SimpleVerdict(
        ("delivered_after_ack",), "{delivered_after_ack} deliveries of an already acknowledged message",
        "none of {acked} acknowledged messages delivered again",
        "acked", "nothing acknowledged outside a transaction"),
    # checked == 0: the implementation does not show all five counters (a capability gap)
    "counter-identity": SimpleVerdict(
        ("broken",), "{broken} observations with messageCount != the sum of parts",
        "{checked} observations consistent", "checked", "no observation reports all five counters"),
    "ring-bound": SimpleVerdict(
        ("over_bound",), "{over_bound} observations with pending above ring size",
        "{checked} observations within the ring size",
        "checked", "every ring observation follows a nack or a ring-size change", "unknown"),
    "throttle-bound": SimpleVerdict(
        ("over_bound",), "{over_bound} observations outside 0..high+1 in flight",
        "{observations} observations within 0..high+1"),
    "admission-answer": SimpleVerdict(
        ("multiple", "early_timeouts"),
        "{multiple} requests answered more than once, {early_timeouts} timed out before their wait limit",
        "{requests} requests answered once each, {timeouts} timeouts none before the limit",
        "requests", "no answers recorded"),
    "order": SimpleVerdict(
        ("out_of_order",),
        "{out_of_order} first deliveries came after a message whose send began only after theirs had "
        "completed (same priority)",
        "{first_deliveries} first deliveries to {consumers} consumers in send order",
        "first_deliveries", "no first deliveries of unscheduled messages sent once"),
    "delivery-count": SimpleVerdict(
        ("decreased",), "{decreased} delivery counts lower than an earlier one",
        "{observations} delivery counts of {messages} messages, none lower than an earlier one",
        "observations", "no delivery counts recorded"),
}


def verdict(check: str, stats: Mapping[str, int]) -> tuple[Verdict, int, str]:
    """The verdict, anomaly count and sentence of one check from its statistics (both engines)."""
    s = stats
    if check == "total-queue":
        bad = s["unexpected"] + s["refused_delivered"]
        if bad:
            return "fail", bad, (f"{s['unexpected']} deliveries of never-sent ids, {s['refused_delivered']} "
                                 f"of refused sends")
        if s["attempted"] + s["delivered"] == 0:
            return "not_applicable", 0, "no sends or deliveries"
        return "pass", 0, (f"{s['attempted']} sent, {s['acknowledged']} accepted, {s['delivered']} "
                           f"delivered ({s['duplicated']} again), nothing unexpected")
    if check == "lost":
        if s["lost"]:
            return "fail", s["lost"], f"{s['lost']} accepted messages neither consumed, counted nor queued"
        if s["examples"] == 0:
            return "not_applicable", 0, "no accepted sends"
        if s["not_applicable_examples"] == s["examples"]:
            return "not_applicable", 0, ("a filter on this queue makes the routing of its address's sends "
                                         "unknowable, or a bound that drops silently their fate")
        if s["unknown_examples"] == s["examples"] - s["not_applicable_examples"]:
            # no example could be accounted for: the implementation shows no replaced/killed counters
            # and the run has no drain (a capability gap, like a missing counter), not a doubt
            return "not_applicable", 0, ("the implementation reports no final message_count, replaced and "
                                         "killed counters and the run has no drain")
        if s["unknown_examples"]:
            return "unknown", 0, (f"{s['unknown_examples']} of {s['examples']} examples have neither a final "
                                  f"drain nor final counters (with expired, where needed) for this queue")
        skipped = s["not_applicable_examples"]
        note = f" ({skipped} examples with a filter or a silent bound not checked)" if skipped else ""
        drained = f", {s['drained_examples']} examples drained" if s["drained_examples"] else ""
        maybe = (f", {s['possibly_consumed']} possibly acknowledged (ack indeterminate)"
                 if s["possibly_consumed"] else "")
        return "pass", 0, f"all {s['acknowledged']} accepted messages accounted for{drained}{maybe}{note}"
    if check in SIMPLE_VERDICTS:
        v = SIMPLE_VERDICTS[check]
        bad = sum(s[name] for name in v.bad)
        if bad:
            return "fail", bad, v.fail.format(**s)
        if v.empty is not None and s[v.empty] == 0:
            return v.empty_verdict, 0, v.empty_text.format(**s)
        return "pass", 0, v.passed.format(**s)
    raise ValueError(f"unknown check {check!r}")


def results(stats: Stats, runs: Mapping[str, RunInfo]) -> list[CheckResult]:
    """Check results from engine statistics, sorted (run, machine, queue, check)."""
    out = []
    for (run, machine, queue, check), figures in sorted(stats.items(), key=lambda kv: _sort_key(kv[0])):
        info = runs.get(run)
        full = {name: int(figures.get(name, 0)) for name in STATS[check]}
        v, count, detail = verdict(check, full)
        out.append(CheckResult(run=run, adapter=info.adapter if info else "unknown",
                               profile=info.profile if info else "unknown", machine=machine, queue=queue,
                               check=check, rules=CHECKS[check], verdict=v, count=count, detail=detail,
                               stats=full))
    return out


def _sort_key(key: StatKey) -> tuple[str, str, str, str]:
    return key[0], key[1], key[2] if key[2] is not None else "", key[3]


#: the columns the checks read (``value`` only for the few declaration, drain and answer rows)
NEEDED = ("run", "machine", "example", "index", "process", "f", "type", "queue", "msg", "result", "tx",
          "bound", "priority", "scheduled_at", "delivery_count",
          "c_message", "c_pending", "c_delivering", "c_scheduled", "c_paged", "c_replaced", "c_killed",
          "c_expired", "in_flight", "profile", "value")
#: stands for a null queue so that group-bys and joins treat nulls alike in both engines
NULLQ = "\u0000"
E = ["run", "machine", "example"]
R = ["run", "machine", "queue"]
FS = ("send", "receive", "ack", "counters", "nack", "set_ring_size", "throttle_state", "queue", "drain",
      "answer", "delivery_count", "close", "close_session", "rollback", "delete", "stop", "start", "restart",
      "fetch", "move")
#: the consumer operations after which a message it was sent but never received may be delivered again
#: (REDELIVERY-8, REDELIVERY-30: a consumer or session close, a rollback): the order check's cuts
RETURNS = ("close", "close_session", "rollback")
#: a settle the implementation answered ``failed`` (it named a message the consumer does not hold) is a
#: return event too where the broker answers one by closing the consumer's channel, which gives back every
#: message the consumer was sent (DELIVERY-22 ``closes_channel``, RabbitMQ's 406 "unknown delivery
#: tag"): under every profile but those of :func:`keeps_channel_profiles` (an unknown profile may close)
SETTLES = ("ack", "nack")


def keeps_channel_profiles() -> tuple[str, ...]:
    """The profiles whose answer to a settle of a message the consumer does not hold leaves the
    consumer's channel open (DELIVERY-22: ``invalid_ack`` other than ``closes_channel``)."""
    from mqconform.reference_model.profiles import PROFILES

    return tuple(sorted(name for name, options in PROFILES.items()
                        if options.invalid_ack != "closes_channel"))


#: a broker stop or start (a soak's nemesis) or a machine's restart step: a cut for the whole example;
#: and a pull batch (``fetch``, DELIVERY-38..): the history records its ids as one answer, not as
#: deliveries, so a message's first receive after one may be a redelivery of a fetched message
NEMESIS = ("stop", "start", "restart", "fetch")
#: a broker stop, start or restart: a queue's cumulative counters (replaced, killed, expired) are the
#: broker's memory and start again from zero (Artemis' QueueImpl counters; the model's restart), so the
#: last observation after one no longer counts what left the queue before it (the lost check)
RESETS = ("stop", "start", "restart")
#: the counters of the lost check that count what left a queue (replaced, killed, expired): a broker
#: that keeps them in memory starts them again at 0 after a restart, so each observation that is lower
#: than the one before it (the same example and queue) adds that earlier value to the later ones, as a
#: monitoring system reads a counter reset. A counter the broker keeps over restarts
#: never falls, so nothing is added twice; what a zeroed counter counted between its last observation
#: and the restart is not seen, which leaves a loss (then unknown, as before), never hides one
CARRIED = ("c_replaced", "c_killed", "c_expired")
TYPES = ("invoke", "ok", "fail", "info")
TIMEOUT = "TIMEOUT_CLEAN_QUEUE"


def add_figures(stats: Stats, run: str, machine: str, queue: str | None, check: str,
                figures: Mapping[str, Any]) -> None:
    """Add `figures` to the statistics of (run, machine, queue, check)."""
    entry = stats.setdefault((run, machine, None if queue in (None, NULLQ) else queue, check), {})
    for name, value in figures.items():
        entry[name] = entry.get(name, 0) + int(value or 0)



def json_rows(table: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(row, parsed value) of each row whose value is a JSON object (declarations, drains, answers)."""
    out = []
    for row in table.to_pylist():
        try:
            value = json.loads(row["value"]) if row["value"] is not None else None
        except ValueError:
            value = None
        if isinstance(value, dict):
            out.append((row, value))
    return out



def drops_silently(profile: object, declaration: Mapping[str, Any]) -> bool:
    """RING-21: the queue is declared with a bound (ring_size or max_length_bytes >= 0) under a profile
    whose bound drops new messages silently (option silent_overflow, Mosquitto: the publisher still gets
    PUBACK), so an accepted send may never have entered it."""
    from mqconform.reference_model.profiles import PROFILES

    options = PROFILES.get(profile) if isinstance(profile, str) else None
    if options is None or not options.silent_overflow:
        return False
    bounds = (declaration.get("ring_size"), declaration.get("max_length_bytes"))
    return any(isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in bounds)



def routing_table(decl_rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
    """Queue declarations -> (E, target address, queue, declared at index, filtered) rows, one per
    (E, queue): the first declaration's address and index, filtered (what reaches the queue is
    unknowable) if any declaration has a filter or a bound that drops silently (:func:`drops_silently`)."""
    first: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row, value in decl_rows:
        name = value.get("name")
        if not isinstance(name, str):
            continue
        address = value.get("address")
        key = (row["run"], row["machine"], row["example"], name)
        # LASTVALUE-7: a last-value queue's message count leaves its delivering messages out, so what
        # it holds cannot be counted against what was accepted: `lost` does not apply to it
        filtered = int(value.get("filter") is not None or drops_silently(row.get("profile"), value)
                       or value.get("last_value_key") is not None)
        known = first.get(key)
        if known is None or row["index"] < known["didx"]:
            first[key] = {"run": key[0], "machine": key[1], "example": key[2], "target": (
                address if isinstance(address, str) else name), "dq": name, "didx": row["index"],
                "filt": max(filtered, known["filt"] if known else 0)}
        else:
            known["filt"] = max(known["filt"], filtered)
    return list(first.values())



def shared_listing(decl_rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> set[tuple[str, str, int, str]]:
    """(E, queue) of every queue declared non-destructive or last-value: delivery-after-ack and
    counter-identity do not apply to them (DELIVERY-12)."""
    return {(row["run"], row["machine"], row["example"], value["name"]) for row, value in decl_rows
            if isinstance(value.get("name"), str)
            and (value.get("non_destructive") or value.get("last_value_key") is not None)}



def drained_keys(drain_rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> set[tuple[Any, ...]]:
    """(E, queue) of every ``drain`` ``ok`` record with ``{"empty": true}`` (Jepsen's final drain)."""
    return {(row["run"], row["machine"], row["example"], row["queue"]) for row, value in drain_rows
            if value.get("empty") is True}



def lost_example(accepted: int, filtered: bool, drained: bool, delivered: int, consumed: tuple[int, int],
                 final: tuple[int | None, int | None, int | None, int | None] | None,
                 reset: bool = False) -> dict[str, int]:
    """The ``lost`` statistics of one (example, queue) (both engines' definition, see the docstring):
    `final` is the last counters observation's (message_count, replaced, killed, expired), the last three
    with what a restart zeroed carried over (:data:`CARRIED`); `reset`: that observation came after one of
    :data:`RESETS`, whose zeroed counters may still account for what is missing."""
    if filtered:
        return {"examples": 1, "not_applicable_examples": 1}
    m, r, k, x = final if final is not None else (None, None, None, None)
    if r is None or k is None or (m is None and not drained):
        return {"examples": 1, "unknown_examples": 1}
    gone = r + k + (x or 0)
    done, maybe = consumed
    if drained:
        lost = max(0, accepted - delivered - gone)
    else:
        assert m is not None
        lost = max(0, accepted - done - maybe - m - gone)
    if lost and (x is None or reset):  # no expired counter, or counters zeroed: they may account for it
        return {"examples": 1, "unknown_examples": 1}
    if drained:
        return {"examples": 1, "drained_examples": 1, "acknowledged": accepted, "consumed": delivered,
                "in_queue": m or 0, "replaced": r, "killed": k, "expired": x or 0, "lost": lost}
    assert m is not None
    return {"examples": 1, "acknowledged": accepted, "consumed": done, "possibly_consumed": maybe,
            "in_queue": m, "replaced": r, "killed": k, "expired": x or 0, "lost": lost}



def answer_key(value: Mapping[str, Any]) -> str:
    """The identity of one answer (ADMISSION-7): answer kind and time, as the Spark engine builds it."""
    return "@".join(str(x) for x in (value.get("answer"), value.get("at_ms")) if x is not None)
