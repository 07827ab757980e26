"""History checks, in-process engine; the check definitions shared with the Spark engine.

Every check is linear in the history. Input: normalised rows (:mod:`.store`). Keys:
E = (run, machine, example) -- each example is a fresh broker; G = E + queue; a check result is
per R = (run, machine, queue), its statistics summed over the examples. A *delivery* is a
``receive`` ``ok`` row with a message id; its queue is the consumer's queue. Message facts are keyed
by (E, msg); "sent" means a ``send`` invocation with that id in the same example (to any address:
routing may fan out). Engines compute only the statistics; :func:`verdict` turns them into the
verdict, count and sentence, so both engines share it.

``total-queue`` (DELIVERY-6, DELIVERY-2), Jepsen's total-queue accounting. Per send queue:
attempted (distinct ids invoked), acknowledged (send ok ``accepted``/``paged``), refused (send ok
``dropped``/``failed``, or send ``fail``), indeterminate (send ``info``, or ``blocked``: a blocked
send is held until the address has room, PAGING-26, so it may still arrive). Per delivering
queue: delivered (deliveries), duplicated (deliveries minus distinct (G, msg) delivered: a statistic,
redelivery and at-least-once are allowed), unexpected (deliveries of an id never sent: DELIVERY-6),
refused_delivered (deliveries of an id whose send was refused: DELIVERY-2), recovered (distinct ids
delivered whose send was indeterminate or blocked). Fails when unexpected + refused_delivered > 0.

``lost`` (DELIVERY-2, DELIVERY-15). The histories have no final drain, so Jepsen's "lost" (acknowledged
minus dequeued) is meaningless; instead, per G with acknowledged sends, against the *last* counters
observation of that queue in the example: lost = max(0, acknowledged - consumed - message_count -
replaced - killed), where consumed = distinct ids with an ``ack`` ``ok`` on that queue. That is, sends
the broker accepted that were neither acknowledged by a consumer, nor counted replaced/killed, nor still
in the queue at the end of the example. It can only under-count (an ack rolled back is counted
twice), never over-count. An example without a final counters observation carrying message_count,
replaced and killed is *unknown* (e.g. sends to an address: counters are per queue).

``delivery-after-ack`` (DELIVERY-7). Per (G, msg): deliveries with an index after the first
non-transactional ``ack`` ``ok`` of that id on that queue (redelivery only of unacknowledged messages).
Not applicable when nothing was acknowledged outside a transaction.

``counter-identity`` (DELIVERY-1). Per ``counters`` observation with all five fields:
message_count == pending + delivering + scheduled + paged. Unknown when no observation has them.

``ring-bound`` (RING-17). Per ``counters`` observation of a queue whose ring size in effect is >= 0:
pending_count <= ring size, unless a ``nack`` ``ok`` or a ``set_ring_size`` ``ok`` on that queue
came earlier in the example (RING-9, RING-2 exempt it: counted ``exempt``). Unknown when every
observation is exempt.

``throttle-bound`` (THROTTLE-7). Per ``throttle_state`` observation: 0 <= in_flight <= high + 1.

Not checked (no information in the histories today): delivery-count monotonicity, admission single
answer and wait bounds (answers are not recorded as history rows), per-consumer order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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
}

#: check name -> the statistics every engine reports (all ints)
STATS: dict[str, tuple[str, ...]] = {
    "total-queue": ("attempted", "acknowledged", "refused", "indeterminate", "delivered", "duplicated",
                    "unexpected", "refused_delivered", "recovered"),
    "lost": ("examples", "unknown_examples", "acknowledged", "consumed", "in_queue", "replaced", "killed",
             "lost"),
    "delivery-after-ack": ("acked", "delivered_after_ack"),
    "counter-identity": ("observations", "checked", "broken"),
    "ring-bound": ("observations", "checked", "exempt", "over_bound"),
    "throttle-bound": ("observations", "over_bound"),
}

StatKey = tuple[str, str, str | None, str]  # run, machine, queue, check
Stats = dict[StatKey, dict[str, int]]


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
        if s["unknown_examples"]:
            return "unknown", 0, (f"{s['unknown_examples']} of {s['examples']} examples have no final "
                                  f"counters for this queue")
        return "pass", 0, f"all {s['acknowledged']} accepted messages accounted for"
    if check == "delivery-after-ack":
        if s["delivered_after_ack"]:
            return "fail", s["delivered_after_ack"], \
                f"{s['delivered_after_ack']} deliveries of an already acknowledged message"
        if s["acked"] == 0:
            return "not_applicable", 0, "nothing acknowledged outside a transaction"
        return "pass", 0, f"none of {s['acked']} acknowledged messages delivered again"
    if check == "counter-identity":
        if s["broken"]:
            return "fail", s["broken"], f"{s['broken']} observations with messageCount != the sum of parts"
        if s["checked"] == 0:
            return "unknown", 0, "no observation reports all five counters"
        return "pass", 0, f"{s['checked']} observations consistent"
    if check == "ring-bound":
        if s["over_bound"]:
            return "fail", s["over_bound"], f"{s['over_bound']} observations with pending above ring size"
        if s["checked"] == 0:
            return "unknown", 0, "every ring observation follows a nack or a ring-size change"
        return "pass", 0, f"{s['checked']} observations within the ring size"
    if check == "throttle-bound":
        if s["over_bound"]:
            return "fail", s["over_bound"], f"{s['over_bound']} observations outside 0..high+1 in flight"
        return "pass", 0, f"{s['observations']} observations within 0..high+1"
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


# ---------------------------------------------------------------------------------- the engine
class _Msg:
    """Send-side facts of one message id in one example."""

    __slots__ = ("acked", "info", "queue", "refused", "sent")

    def __init__(self) -> None:
        self.sent = self.acked = self.refused = self.info = False
        self.queue: str | None = None


class _Dlv:
    """Delivery-side facts of one message id on one queue in one example."""

    __slots__ = ("acked_any", "count", "first_ack", "indices")

    def __init__(self) -> None:
        self.count = 0
        self.first_ack: int | None = None
        self.acked_any = False
        self.indices: list[int] = []


def compute_stats(columns: Iterable[Mapping[str, list[Any]]]) -> Stats:
    """Statistics of every check over column batches (dicts of equal-length lists)."""
    msgs: dict[tuple[str, str, int, str], _Msg] = {}
    dlvs: dict[tuple[str, str, int, str | None, str], _Dlv] = {}
    final: dict[tuple[str, str, int, str | None], tuple[int, int | None, int | None, int | None]] = {}
    exempt_from: dict[tuple[str, str, int, str | None], int] = {}
    observations: list[tuple[Any, ...]] = []
    stats: Stats = {}

    def add(run: str, machine: str, queue: str | None, check: str, **figures: int) -> None:
        entry = stats.setdefault((run, machine, queue, check), {})
        for name, value in figures.items():
            entry[name] = entry.get(name, 0) + value

    for batch in columns:
        for (run, machine, example, index, f, type_, queue, msg, result, tx, bound, c_message,
             c_pending, c_delivering, c_scheduled, c_paged, c_replaced, c_killed, in_flight) in zip(
                batch["run"], batch["machine"], batch["example"], batch["index"], batch["f"],
                batch["type"], batch["queue"], batch["msg"], batch["result"], batch["tx"], batch["bound"],
                batch["c_message"], batch["c_pending"], batch["c_delivering"], batch["c_scheduled"],
                batch["c_paged"], batch["c_replaced"], batch["c_killed"], batch["in_flight"], strict=True):
            if f == "send":
                if msg is None:
                    continue
                m = msgs.get((run, machine, example, msg))
                if m is None:
                    m = msgs[(run, machine, example, msg)] = _Msg()
                if type_ == "invoke":
                    m.sent = True
                    m.queue = queue
                elif type_ == "ok":
                    if result in ACCEPTED:
                        m.acked = True
                    elif result in REFUSED:
                        m.refused = True
                    elif result in DEFERRED:
                        m.info = True
                elif type_ == "fail":
                    m.refused = True
                else:
                    m.info = True
            elif f == "receive" or f == "ack":
                if msg is None or type_ != "ok":
                    continue
                d = dlvs.get((run, machine, example, queue, msg))
                if d is None:
                    d = dlvs[(run, machine, example, queue, msg)] = _Dlv()
                if f == "receive":
                    d.count += 1
                    d.indices.append(index)
                else:
                    d.acked_any = True
                    if not tx and (d.first_ack is None or index < d.first_ack):
                        d.first_ack = index
            elif f == "counters":
                g = (run, machine, example, queue)
                last = final.get(g)
                if last is None or index > last[0]:
                    final[g] = (index, c_message, c_replaced, c_killed)
                observations.append((g, index, bound, c_message, c_pending, c_delivering, c_scheduled,
                                     c_paged))
            elif (f == "nack" or f == "set_ring_size") and type_ == "ok":
                g = (run, machine, example, queue)
                if g not in exempt_from or index < exempt_from[g]:
                    exempt_from[g] = index
            elif f == "throttle_state" and in_flight is not None and bound is not None:
                add(run, machine, queue, "throttle-bound", observations=1,
                    over_bound=int(in_flight < 0 or in_flight > bound + 1))

    accepted_g: dict[tuple[str, str, int, str | None], int] = {}
    for (run, machine, example, _msg), m in msgs.items():
        if m.sent:
            add(run, machine, m.queue, "total-queue", attempted=1, acknowledged=int(m.acked),
                refused=int(m.refused), indeterminate=int(m.info))
        if m.acked:
            g = (run, machine, example, m.queue)
            accepted_g[g] = accepted_g.get(g, 0) + 1
    consumed_g: dict[tuple[str, str, int, str | None], int] = {}
    for (run, machine, example, queue, msg), d in dlvs.items():
        if d.acked_any:
            g = (run, machine, example, queue)
            consumed_g[g] = consumed_g.get(g, 0) + 1
        if d.first_ack is not None:
            after = sum(1 for i in d.indices if i > d.first_ack)
            add(run, machine, queue, "delivery-after-ack", acked=1, delivered_after_ack=after)
        if d.count:
            m = msgs.get((run, machine, example, msg))
            never_sent = m is None or not m.sent
            add(run, machine, queue, "total-queue", delivered=d.count, duplicated=d.count - 1,
                unexpected=d.count if never_sent else 0,
                refused_delivered=d.count if m is not None and m.refused else 0,
                recovered=int(m is not None and m.info))
            if d.first_ack is None:
                add(run, machine, queue, "delivery-after-ack", acked=0, delivered_after_ack=0)
    for g, accepted in accepted_g.items():
        run, machine, _example, queue = g
        last = final.get(g)
        if last is None or last[1] is None or last[2] is None or last[3] is None:
            add(run, machine, queue, "lost", examples=1, unknown_examples=1)
            continue
        consumed = consumed_g.get(g, 0)
        add(run, machine, queue, "lost", examples=1, acknowledged=accepted, consumed=consumed,
            in_queue=last[1], replaced=last[2], killed=last[3],
            lost=max(0, accepted - consumed - last[1] - last[2] - last[3]))
    for g, index, bound, c_message, c_pending, c_delivering, c_scheduled, c_paged in observations:
        run, machine, _example, queue = g
        parts = (c_message, c_pending, c_delivering, c_scheduled, c_paged)
        complete = all(p is not None for p in parts)
        add(run, machine, queue, "counter-identity", observations=1, checked=int(complete),
            broken=int(complete and c_message != c_pending + c_delivering + c_scheduled + c_paged))
        if bound is not None and bound >= 0 and c_pending is not None:
            exempt = index > exempt_from.get(g, index)
            add(run, machine, queue, "ring-bound", observations=1, exempt=int(exempt),
                checked=int(not exempt), over_bound=int(not exempt and c_pending > bound))
    return stats


def table_batches(table: Any, batch_rows: int = 1 << 20) -> Iterable[dict[str, list[Any]]]:
    """Column batches of an Arrow table, as Python lists (only the columns the checks read)."""
    needed = ["run", "machine", "example", "index", "f", "type", "queue", "msg", "result", "tx", "bound",
              "c_message", "c_pending", "c_delivering", "c_scheduled", "c_paged", "c_replaced", "c_killed",
              "in_flight"]
    for batch in table.select(needed).to_batches(max_chunksize=batch_rows):
        yield {name: batch.column(i).to_pylist() for i, name in enumerate(needed)}


def rows_batches(rows: list[dict[str, Any]]) -> Iterable[dict[str, list[Any]]]:
    """One column batch from normalised rows."""
    if rows:
        yield {name: [r[name] for r in rows] for name in rows[0]}
