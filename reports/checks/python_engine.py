"""History checks, in-process engine (the checks' definitions: :mod:`.definitions`).

Every check is linear in the history. Input: normalised rows (:mod:`..read.store`). The engine computes
only the statistics; :func:`~.definitions.verdict` turns them into the verdict, count and sentence.

Engine: one coding pass (:mod:`.encode`) turns strings into integer codes and every composite key
into one int64; the statistics are then vectorised ``pyarrow.compute`` with Arrow's hash group-by and
hash join (C++), and the two sequence checks a sort plus a running maximum (numpy). Python loops
only over the per-example and per-queue results and over the few declaration, drain and answer rows
(whose JSON ``value`` is parsed).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from mqconform.reference_model.config import DEFAULT_PRIORITY
from mqconform.reports.checks.arrow_ops import agg as _agg
from mqconform.reports.checks.arrow_ops import i8 as _i8
from mqconform.reports.checks.definitions import (
    FS,
    NEEDED,
    NEMESIS,
    RESETS,
    RETURNS,
    SETTLES,
    TIMEOUT,
    TYPES,
    E,
    JsonRow,
    StatKey,
    Stats,
    Witnesses,
    add_figures,
    answer_key,
    json_rows,
    keeps_channel_profiles,
    routing_table,
    shared_listing,
)
from mqconform.reports.checks.encode import LIMIT, RESULT_CLASSES, Codes, TooLarge
from mqconform.reports.checks.python_lost import lost as _lost


def _emit(stats: Stats, codes: Codes, table: Any, check: str) -> None:
    """Add a per-R table (column ``rk`` + statistics columns) to `stats`."""
    names = [n for n in table.column_names if n != "rk"]
    for row in table.to_pylist():
        run, machine, queue = codes.run_machine_queue(row["rk"])
        add_figures(stats, run, machine, queue, check, {n: row[n] for n in names})


class _Ops:
    """Masks of one (coded) table: ``f(name)`` operation, ``t(name)`` record type."""

    def __init__(self, table: Any) -> None:
        self.fs, self.ty = table["fs"], table["ty"]

    def f(self, name: str) -> Any:
        import pyarrow.compute as pc

        return pc.equal(self.fs, FS.index(name))

    def t(self, name: str) -> Any:
        import pyarrow.compute as pc

        return pc.equal(self.ty, TYPES.index(name))


def compute_stats(table: Any, witnesses: Witnesses | None = None) -> Stats:
    """Statistics of every check over an Arrow table of normalised rows (columns :data:`NEEDED`, plain or
    dictionary strings; ``value`` may be absent when no row needs it). Vectorised on integer keys
    (:mod:`.encode`): pyarrow.compute, hash group-by and hash join. With `witnesses`, the sequence checks
    also describe their earliest violation per result (:data:`WITNESSED`)."""
    import pyarrow as pa

    t = table.select([c for c in NEEDED if c in table.column_names])
    for name in ("priority", "scheduled_at", "delivery_count"):  # absent from tables built by hand
        if name not in t.column_names:
            t = t.append_column(name, pa.nulls(t.num_rows, pa.int64()))
    codes = Codes(t, FS, TYPES)
    c = codes.table
    op = _Ops(c)
    decl_rows, drain_rows, answer_rows = _small_rows(t, op)
    routes = routing_table(decl_rows)
    codes.add_queues([*(r["target"] for r in routes), *(r["dq"] for r in routes),
                      *(row["queue"] for row, _ in drain_rows)])
    stats: Stats = {}
    shared = [gk for key in shared_listing(decl_rows) if (gk := codes.gk_for(*key)) is not None]
    for part in _example_chunks(c):
        _chunk_stats(stats, codes, part, routes, drain_rows, witnesses, shared)
    for key, entry in stats.items():
        if key[3] == "delivery-after-ack":
            entry.setdefault("delivered_after_ack", 0)
    if answer_rows:  # admission answers (few rows: JSON values parsed in Python)
        _answers(stats, answer_rows)
    return stats


#: rows per chunk of whole examples: hash tables that stay in cache (measured here: 30 M rows in one
#: pass 1.3 M rows/s, in 8 chunks 2.2 M rows/s)
CHUNK_ROWS = 3_000_000


def _example_chunks(c: Any) -> list[Any]:
    """Zero-copy slices of whole examples, about :data:`CHUNK_ROWS` rows each. Every statistic is a sum
    over examples, so chunks add up exactly; the table is one chunk unless each example's rows are one
    contiguous block (the store and run directories write examples one after another)."""
    import numpy as np
    import pyarrow.compute as pc

    if c.num_rows <= CHUNK_ROWS:
        return [c]
    ek = c["ek"].to_numpy()
    starts = np.flatnonzero(ek[1:] != ek[:-1]) + 1
    if len(starts) + 1 != pc.count_distinct(c["ek"]).as_py():
        return [c]  # an example is split over the table: one pass keeps it whole
    cuts = np.unique(starts[np.searchsorted(starts, np.arange(CHUNK_ROWS, c.num_rows, CHUNK_ROWS))
                            .clip(max=len(starts) - 1)]) if len(starts) else np.array([], dtype=np.int64)
    bounds = [0, *(int(x) for x in cuts), c.num_rows]
    return [c.slice(a, b - a) for a, b in itertools.pairwise(bounds) if b > a]


def _chunk_stats(stats: Stats, codes: Codes, c: Any, routes: list[dict[str, Any]], drain_rows: list[JsonRow],
                 witnesses: Witnesses | None, shared: Sequence[int] = ()) -> None:
    """Add the statistics of the whole examples in `c` (coded rows) to `stats`; `shared`: the
    example-queue keys of the non-destructive and last-value queues (:func:`shared_listing`)."""
    import pyarrow.compute as pc

    op = _Ops(c)
    msgs = _send_side(stats, codes, c, op)
    d, dlv, joined, n_proc = _delivery_side(stats, codes, c, op, msgs)
    _order(stats, codes, joined, n_proc, _return_cuts(codes, c, op), witnesses)
    _delivery_counts(stats, codes, c.filter(pc.and_(op.f("delivery_count"), op.t("ok"))), witnesses, shared)
    _delivery_after_ack(stats, codes, d, dlv, shared)
    counters = _counters(codes, c, op)
    _lost(stats, codes, routes, drain_rows, msgs, dlv, counters, _first_resets(c))
    _counter_identity(stats, codes, counters, shared)
    _ring_bound(stats, codes, c, op, counters)
    _throttle_bound(stats, codes, c, op)


def _send_side(stats: Stats, codes: Codes, c: Any, op: _Ops) -> Any:
    """The total-queue statistics of the sends, and the facts of each sent message per (E, msg)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    null_i = pa.scalar(None, pa.int64())
    smask = pc.and_(op.f("send"), pc.is_valid(c["m"]))
    s = c.select(["ek", "m", "q", "index", "fs", "ty", "rs", "priority", "scheduled_at"]).filter(smask)
    so = _Ops(s)
    s_inv, s_ok, rs = so.t("invoke"), so.t("ok"), s["rs"]
    sends = pa.table({
        "mk": codes.mk(s["ek"], s["m"]), "sent": _i8(s_inv),
        "squeue": pc.if_else(s_inv, s["q"], null_i), "sidx": pc.if_else(s_inv, s["index"], null_i),
        "acked": _i8(pc.and_(s_ok, pc.equal(rs, RESULT_CLASSES["accepted"]))),
        "refused": _i8(pc.or_(pc.and_(s_ok, pc.equal(rs, RESULT_CLASSES["dropped"])), so.t("fail"))),
        "info": _i8(pc.or_(so.t("info"), pc.and_(s_ok, pc.equal(rs, RESULT_CLASSES["blocked"])))),
        # order facts: the completion that proves arrival, the priority and schedule of the invocation
        "soidx": pc.if_else(pc.and_(s_ok, pc.equal(rs, RESULT_CLASSES["accepted"])), s["index"], null_i),
        "prio": pc.if_else(s_inv, pc.fill_null(s["priority"], DEFAULT_PRIORITY), null_i),
        # a send invocation without a priority comes from a store of schema 1, which kept no schedule
        "sched": _i8(pc.and_(s_inv, pc.or_(pc.is_valid(s["scheduled_at"]), pc.is_null(s["priority"])))),
    })
    msgs = _agg(sends, ["mk"], {
        "sent": ("sent", "max"), "nsend": ("sent", "sum"), "squeue": ("squeue", "max"),
        "sidx": ("sidx", "min"), "acked": ("acked", "max"), "refused": ("refused", "max"),
        "info": ("info", "max"), "soidx": ("soidx", "min"), "prio": ("prio", "max"),
        "sched": ("sched", "max")})
    msgs = msgs.set_column(msgs.column_names.index("squeue"), "squeue",
                           pc.fill_null(msgs["squeue"], codes.null_queue))
    sent = msgs.filter(pc.equal(msgs["sent"], 1))
    _emit(stats, codes, _agg(pa.table({
        "rk": codes.rk(codes.split_mk(sent["mk"])[0], sent["squeue"]), "acked": sent["acked"],
        "refused": sent["refused"], "info": sent["info"]}), ["rk"], {
        "attempted": ("", "count_all"), "acknowledged": ("acked", "sum"), "refused": ("refused", "sum"),
        "indeterminate": ("info", "sum")}), "total-queue")
    return msgs


def _delivery_side(stats: Stats, codes: Codes, c: Any, op: _Ops, msgs: Any) -> tuple[Any, Any, Any, int]:
    """The total-queue statistics of the deliveries; (the delivery rows, the facts per (E, queue, msg),
    those joined with their sends, the process code count)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    null_i = pa.scalar(None, pa.int64())
    recv_ok = pc.and_(op.f("receive"), op.t("ok"))
    ack_done = pc.and_(op.f("ack"), pc.or_(op.t("ok"), op.t("info")))
    # a delete or a move by id answered true (store.normalise: result "deleted")
    deleted = pc.and_(op.t("ok"), pc.equal(c["rs"], RESULT_CLASSES["deleted"]))
    dmask = pc.and_(pc.or_(pc.or_(recv_ok, ack_done), deleted), pc.is_valid(c["m"]))
    d = c.select(["ek", "q", "m", "p", "index", "tx", "fs", "ty", "rs"]).filter(dmask)
    do = _Ops(d)
    d_recv, d_ack, d_ok, d_info = do.f("receive"), do.f("ack"), do.t("ok"), do.t("info")
    d_dk = codes.dk(d["ek"], d["q"], d["m"])
    not_tx = pc.invert(pc.fill_null(d["tx"], False))
    # an ack the implementation answered `failed` (an invalid ack, DELIVERY-8/22) acknowledged nothing
    d_acked = pc.and_(pc.and_(d_ack, d_ok), pc.not_equal(d["rs"], RESULT_CLASSES["failed"]))
    # a delete (DELIVERY-31) or a move (DELIVERY-48) by id answered true took the message out of the
    # queue as an ack does
    d_gone = pc.or_(d_acked, pc.equal(d["rs"], RESULT_CLASSES["deleted"]))
    n_proc = len(codes.processes) + 1  # the last code: no process
    _fits(n_proc, d["index"])
    by_whom = pc.add(pc.multiply(d["index"], n_proc), pc.fill_null(d["p"], n_proc - 1))
    dlv = _agg(pa.table({
        "dk": d_dk, "recv": _i8(d_recv), "ridx": pc.if_else(d_recv, d["index"], null_i),
        "first_recv": pc.if_else(d_recv, by_whom, null_i),
        "aidx": pc.if_else(pc.and_(d_acked, not_tx), d["index"], null_i),
        "ack_ok": _i8(d_gone), "ack_info": _i8(pc.and_(d_ack, d_info)),
    }), ["dk"], {"count": ("recv", "sum"), "last_recv": ("ridx", "max"), "first_recv": ("first_recv", "min"),
                 "first_ack": ("aidx", "min"),
                 "ack_ok": ("ack_ok", "max"), "ack_info": ("ack_info", "max")})
    gk, m = codes.split_dk(dlv["dk"])
    ek, q = codes.split_gk(gk)
    dlv = dlv.append_column("gk", gk).append_column("rk", codes.rk(ek, q))
    dlv = dlv.append_column("mk", codes.mk(ek, m))
    facts = ["mk", "sent", "refused", "info", "nsend", "sidx", "soidx", "prio", "sched"]
    joined = dlv.join(msgs.select(facts), "mk", join_type="left outer")
    delivered = joined.filter(pc.greater(joined["count"], 0))
    count = delivered["count"]
    zero = pa.scalar(0, pa.int64())
    _emit(stats, codes, _agg(pa.table({
        "rk": delivered["rk"], "count": count, "dup": pc.subtract(count, 1),
        "unexpected": pc.if_else(pc.equal(pc.fill_null(delivered["sent"], 0), 0), count, zero),
        "refused_delivered": pc.if_else(pc.equal(pc.fill_null(delivered["refused"], 0), 1), count, zero),
        "recovered": _i8(pc.equal(delivered["info"], 1))}), ["rk"],
        {"delivered": ("count", "sum"), "duplicated": ("dup", "sum"), "unexpected": ("unexpected", "sum"),
         "refused_delivered": ("refused_delivered", "sum"), "recovered": ("recovered", "sum")}),
        "total-queue")
    return d, dlv, joined, n_proc


def _delivery_after_ack(stats: Stats, codes: Codes, d: Any, dlv: Any, shared: Sequence[int]) -> None:
    """delivery-after-ack: exact only where a delivery came after the first ack (rare)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    acked_first = pc.is_valid(dlv["first_ack"])
    daa = dlv.filter(pc.or_(pc.greater(dlv["count"], 0), acked_first))
    _emit(stats, codes, _agg(pa.table({"rk": daa["rk"], "acked": _i8(pc.is_valid(daa["first_ack"]))}), ["rk"],
                             {"acked": ("acked", "sum")}), "delivery-after-ack")
    cand = dlv.filter(pc.and_(pc.fill_null(pc.greater(dlv["last_recv"], dlv["first_ack"]), False),
                              pc.invert(pc.is_in(dlv["gk"], pa.array(shared, pa.int64())))))
    if cand.num_rows:
        d_dk = codes.dk(d["ek"], d["q"], d["m"])
        recvs = pa.table({"dk": d_dk, "index": d["index"]}).filter(_Ops(d).f("receive"))
        late = recvs.join(cand.select(["dk", "rk", "first_ack"]), "dk", join_type="inner")
        late = late.filter(pc.greater(late["index"], late["first_ack"]))
        _emit(stats, codes, _agg(late, ["rk"], {"delivered_after_ack": ("", "count_all")}),
              "delivery-after-ack")


def _counters(codes: Codes, c: Any, op: _Ops) -> Any:
    """The counters observations, with their example-queue and run-machine-queue keys."""
    counters = c.select(["ek", "q", "index", "bound", "c_message", "c_pending", "c_delivering", "c_scheduled",
                         "c_paged", "c_replaced", "c_killed", "c_expired"]).filter(op.f("counters"))
    counters = counters.append_column("gk", codes.gk(counters["ek"], counters["q"])) \
        .append_column("rk", codes.rk(counters["ek"], counters["q"]))
    return counters


def _first_in_example(c: Any, operations: tuple[str, ...], name: str) -> Any:
    """Per example key ``ek``: the index of its first record of one of `operations`, as column `name`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = c.select(["ek", "index"]).filter(pc.is_in(c["fs"], pa.array([FS.index(f) for f in operations])))
    return _agg(rows, ["ek"], {name: ("index", "min")})


def _first_resets(c: Any) -> dict[int, int]:
    """Example key -> the index of its first broker stop, start or restart (:data:`RESETS`)."""
    return {row["ek"]: row["index"] for row in _first_in_example(c, RESETS, "index").to_pylist()}


def _counter_identity(stats: Stats, codes: Codes, counters: Any, shared: Sequence[int]) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = [counters[c] for c in ("c_message", "c_pending", "c_delivering", "c_scheduled", "c_paged")]
    complete = pc.and_(pc.and_(pc.and_(pc.is_valid(parts[0]), pc.is_valid(parts[1])),
                               pc.and_(pc.is_valid(parts[2]), pc.is_valid(parts[3]))), pc.is_valid(parts[4]))
    complete = pc.and_(complete, pc.invert(pc.is_in(counters["gk"], pa.array(shared, pa.int64()))))
    total = pc.add(pc.add(parts[1], parts[2]), pc.add(parts[3], parts[4]))
    broken = _i8(pc.and_(complete, pc.not_equal(parts[0], total)))
    _emit(stats, codes, _agg(pa.table({"rk": counters["rk"], "checked": _i8(complete), "broken": broken}),
                             ["rk"], {"observations": ("", "count_all"), "checked": ("checked", "sum"),
                                      "broken": ("broken", "sum")}), "counter-identity")


def _ring_bound(stats: Stats, codes: Codes, c: Any, op: _Ops, counters: Any) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    in_ring = pc.and_(pc.greater_equal(counters["bound"], 0), pc.is_valid(counters["c_pending"]))
    ring = counters.filter(in_ring)
    if ring.num_rows:
        emask = pc.and_(pc.or_(op.f("nack"), op.f("set_ring_size")), op.t("ok"))
        ex = c.select(["ek", "q", "index"]).filter(emask)
        exempt_from = _agg(pa.table({"gk": codes.gk(ex["ek"], ex["q"]), "index": ex["index"]}), ["gk"],
                           {"exempt_from": ("index", "min")})
        ring = ring.select(["gk", "rk", "index", "bound", "c_pending"]).join(exempt_from, "gk",
                                                                           join_type="left outer")
        exempt = pc.fill_null(pc.greater(ring["index"], ring["exempt_from"]), False)
        _emit(stats, codes, _agg(pa.table({
            "rk": ring["rk"], "exempt": _i8(exempt), "checked": _i8(pc.invert(exempt)),
            "over": _i8(pc.and_(pc.invert(exempt), pc.greater(ring["c_pending"], ring["bound"])))}), ["rk"],
            {"observations": ("", "count_all"), "exempt": ("exempt", "sum"), "checked": ("checked", "sum"),
             "over_bound": ("over", "sum")}), "ring-bound")


def _throttle_bound(stats: Stats, codes: Codes, c: Any, op: _Ops) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    th = c.select(["ek", "q", "in_flight", "bound"]).filter(pc.and_(op.f("throttle_state"), pc.and_(
        pc.is_valid(c["in_flight"]), pc.is_valid(c["bound"]))))
    if th.num_rows:
        over = pc.or_(pc.less(th["in_flight"], 0), pc.greater(th["in_flight"], pc.add(th["bound"], 1)))
        _emit(stats, codes, _agg(pa.table({"rk": codes.rk(th["ek"], th["q"]), "over": _i8(over)}), ["rk"],
                                 {"observations": ("", "count_all"), "over_bound": ("over", "sum")}),
              "throttle-bound")



def _fits(factor: int, column: Any) -> None:
    """Refuse (never fold) when ``column * factor`` could leave the 62-bit key space."""
    import pyarrow.compute as pc

    high = pc.max(column).as_py() if len(column) else None
    if high is not None and (high + 1) * factor >= LIMIT:
        raise TooLarge(f"index {high} x {factor} does not fit the python engine's keys; use --engine spark")


def _earlier_max(new: Any, values: Any) -> Any:
    """Per row of a table sorted by segment (``new`` marks each segment's first row): the largest
    `values` of the EARLIER rows of its segment, -1 where there is none (values must be >= 0)."""
    import numpy as np

    seg = np.cumsum(new)
    big = int(values.max()) + 1 if len(values) else 1
    if int(seg[-1] if len(seg) else 0) * big >= LIMIT:
        raise TooLarge("too many rows for the python engine's keys; use --engine spark")
    running = np.maximum.accumulate(seg * big + values)
    before = np.empty_like(running)
    before[:1] = -1
    before[1:] = running[:-1] - seg[1:] * big
    return np.where(new, -1, before)


def _witness(witnesses: Witnesses, key: StatKey, when: tuple[int, int], text: str) -> None:
    """Keep the violation earliest in the history (example, index) per result, whatever the chunking."""
    if key not in witnesses or when < witnesses[key][0]:
        witnesses[key] = (when, text)


def _earliest(mask: Any, rk: Any, ek: Any, index: Any) -> list[int]:
    """Per result key, the row of `mask` earliest in the history (smallest example key, then index)."""
    import numpy as np

    rows = np.nonzero(mask)[0]
    rows = rows[np.lexsort((index[rows], ek[rows], rk[rows]))]
    _, first = np.unique(rk[rows], return_index=True)
    return [int(r) for r in rows[first]]


def _segments(*keys: Any) -> Any:
    """Mark where any of the sorted key arrays changes (the first row of each segment)."""
    import numpy as np

    new = np.zeros(len(keys[0]), dtype=bool)
    new[:1] = True
    for key in keys:
        new[1:] |= key[1:] != key[:-1]
    return new


def _return_cuts(codes: Codes, c: Any, op: _Ops) -> Any:
    """Per (example, queue): the index of the first event that may return messages a consumer was sent
    but never received (:data:`RETURNS` on the queue, a failed settle there under a profile that may
    close the channel (:data:`SETTLES`), :data:`NEMESIS` in the example); null where there is none.
    After it, a message's first receive may be a
    redelivery of an invisible dispatch (returned to the head or rescheduled, REDELIVERY-2, SCHED-4)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    closes = pc.invert(pc.fill_null(pc.is_in(c["profile"], pa.array(keeps_channel_profiles())), False)) \
        if "profile" in c.column_names else pa.scalar(True)
    failed_settle = pc.and_(pc.and_(pc.is_in(c["fs"], pa.array([FS.index(f) for f in SETTLES])),
                                    pc.equal(c["rs"], RESULT_CLASSES["failed"])), closes)
    returns = pc.or_(pc.is_in(c["fs"], pa.array([FS.index(f) for f in RETURNS])),
                     pc.fill_null(failed_settle, False))
    ret = c.select(["ek", "q", "index"]).filter(returns)
    per_g = _agg(pa.table({"gk": codes.gk(ret["ek"], ret["q"]), "index": ret["index"]}), ["gk"],
                 {"cut": ("index", "min")})
    return per_g, _first_in_example(c, NEMESIS, "cut")


def _order(stats: Stats, codes: Codes, joined: Any, n_proc: int, cuts: Any,
           witnesses: Witnesses | None) -> None:
    """``order`` (DELIVERY-4; DELIVERY-3's FIFO within a priority level). Per consumer (example, queue,
    process) and priority, in the order of its FIRST deliveries (a message's first delivery on the
    queue; redeliveries are ordered by other rules): a delivery of m is out of order when an earlier one
    of the same consumer was of a message whose send was invoked only after m's send had completed
    (accepted): m had arrived first, so pending order put it first. Only messages sent once and not
    scheduled take part; a send that completed blocked, paged-for-later or indeterminately proves no
    arrival time (it may only be the earlier one). Concurrent sends are never ordered. Only first
    deliveries before the queue's first return event (:func:`_return_cuts`) are ordered."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    take = pc.and_(pc.and_(pc.greater(joined["count"], 0), pc.equal(pc.fill_null(joined["nsend"], 0), 1)),
                   pc.equal(pc.fill_null(joined["sched"], 1), 0))
    f = joined.filter(take)
    per_g, nemesis = cuts
    f = f.append_column("ek", codes.split_gk(f["gk"])[0])
    f = f.join(per_g, "gk", join_type="left outer").join(nemesis.rename_columns(["ek", "cut2"]), "ek",
                                                         join_type="left outer")
    first = pc.divide(f["first_recv"], n_proc)
    before = pc.and_(pc.fill_null(pc.less(first, f["cut"]), True),
                     pc.fill_null(pc.less(first, f["cut2"]), True))
    f, first = f.filter(before), first.filter(before)
    if not f.num_rows:
        return
    proc = pc.subtract(f["first_recv"], pc.multiply(first, n_proc))
    f = pa.table({"gk": f["gk"], "rk": f["rk"], "proc": proc, "prio": f["prio"], "first": first,
                  "sidx": f["sidx"], "soidx": pc.fill_null(f["soidx"], -1), "m": codes.split_mk(f["mk"])[1]})
    f = f.take(pc.sort_indices(f, [("gk", "ascending"), ("proc", "ascending"), ("prio", "ascending"),
                                   ("first", "ascending")]))
    gk, proc, prio = (f[n].to_numpy() for n in ("gk", "proc", "prio"))
    soidx = f["soidx"].to_numpy()
    earlier = _earlier_max(_segments(gk, proc, prio), f["sidx"].to_numpy())
    late = (soidx >= 0) & (earlier > soidx)
    if witnesses is not None and late.any():
        sidx, m, first_at = f["sidx"].to_numpy(), f["m"].to_numpy(), f["first"].to_numpy()
        for j in _earliest(late, f["rk"].to_numpy(), gk // codes.nq, first_at):
            i = j - 1
            while sidx[i] != earlier[j]:  # the earlier delivery whose send began latest (same segment)
                i -= 1
            run, machine, example, queue = codes.example_queue(int(gk[j]))
            who = codes.processes[proc[j]] if proc[j] < len(codes.processes) else "a consumer"
            _witness(witnesses, (run, machine, queue, "order"), (example, int(first_at[j])),
                     f"example {example}: {who} received {codes.msgs[m[i]]} (sent at #{sidx[i]}) before "
                     f"{codes.msgs[m[j]]} (whose send completed at #{soidx[j]})")
    _emit(stats, codes, _agg(pa.table({"rk": f["rk"], "late": late.astype(np.int8),
                                       "consumer": _segments(gk, proc).astype(np.int8)}), ["rk"],
                             {"first_deliveries": ("", "count_all"), "consumers": ("consumer", "sum"),
                              "out_of_order": ("late", "sum")}), "order")


def _delivery_counts(stats: Stats, codes: Codes, rows: Any, witnesses: Witnesses | None,
                     shared: Sequence[int] = ()) -> None:
    """``delivery-count`` (REDELIVERY-1, REDELIVERY-2, REDELIVERY-12, REDELIVERY-19, REDELIVERY-22). The
    suite records the implementation's delivery count of a message right after each delivery of it; a
    cancel may undo the increment of a dispatch (REDELIVERY-2) but never more, so per (example, queue,
    message), in history order, no observed count is lower than an earlier one. Not on the `shared`
    queues (non-destructive, last-value): there each consumer's delivery of a listed message is a copy
    with its own count (DELIVERY-12, LASTVALUE-8)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = rows.filter(pc.and_(pc.is_valid(rows["m"]), pc.is_valid(rows["delivery_count"])))
    if shared:
        rows = rows.filter(pc.invert(pc.is_in(codes.gk(rows["ek"], rows["q"]), pa.array(shared, pa.int64()))))
    if not rows.num_rows:
        return
    t = pa.table({"dk": codes.dk(rows["ek"], rows["q"], rows["m"]), "rk": codes.rk(rows["ek"], rows["q"]),
                  "index": rows["index"], "count": rows["delivery_count"]})
    t = t.take(pc.sort_indices(t, [("dk", "ascending"), ("index", "ascending")]))
    count = t["count"].to_numpy()
    low = int(count.min())
    new = _segments(t["dk"].to_numpy())
    earlier = _earlier_max(new, count - low)
    decreased = (earlier >= 0) & (earlier > count - low)
    if witnesses is not None and decreased.any():
        gk, m = codes.split_dk(t["dk"])
        gk, m, index = gk.to_numpy(), m.to_numpy(), t["index"].to_numpy()
        for j in _earliest(decreased, t["rk"].to_numpy(), gk // codes.nq, index):
            run, machine, example, queue = codes.example_queue(int(gk[j]))
            _witness(witnesses, (run, machine, queue, "delivery-count"), (example, int(index[j])),
                     f"example {example}: the delivery count of {codes.msgs[m[j]]} went from "
                     f"{earlier[j] + low} to {count[j]} at #{index[j]}")
    _emit(stats, codes, _agg(pa.table({"rk": t["rk"], "new": new.astype(np.int8),
                                       "down": decreased.astype(np.int8)}), ["rk"],
                             {"observations": ("", "count_all"), "messages": ("new", "sum"),
                              "decreased": ("down", "sum")}), "delivery-count")


def _small_rows(t: Any, op: _Ops) -> tuple[list[JsonRow], ...]:
    """(declarations, drains, answers) with parsed values: the few rows whose JSON ``value`` is read."""
    import pyarrow.compute as pc

    if "value" not in t.column_names:
        return [], [], []
    mask = pc.or_(pc.or_(pc.and_(op.f("queue"), op.t("invoke")), pc.and_(op.f("drain"), op.t("ok"))),
                  pc.and_(op.f("answer"), op.t("ok")))
    columns = [*E, "index", "queue", "f", "value"] + (["profile"] if "profile" in t.column_names else [])
    rows = json_rows(t.select(columns).filter(mask))
    return tuple([(row, value) for row, value in rows if row["f"] == f] for f in ("queue", "drain", "answer"))


def _answers(stats: Stats, rows: list[JsonRow]) -> None:
    per: dict[tuple[Any, ...], set[str]] = {}
    for row, value in rows:
        key = (row["run"], row["machine"], row["queue"], row["example"], str(value.get("id")))
        per.setdefault(key, set()).add(answer_key(value))
    for row, value in rows:
        timeout = value.get("answer") == TIMEOUT
        at, sub, wait = value.get("at_ms"), value.get("submitted_ms"), value.get("wait_ms")
        early = timeout and all(isinstance(x, int) for x in (at, sub, wait)) and at - sub < wait
        add_figures(stats, row["run"], row["machine"], row["queue"], "admission-answer",
             {"answers": 1, "timeouts": int(timeout), "early_timeouts": int(bool(early))})
    for (run, machine, queue, _example, _id), keys in per.items():
        add_figures(stats, run, machine, queue, "admission-answer",
                    {"requests": 1, "multiple": int(len(keys) > 1)})


def rows_table(rows: list[dict[str, Any]]) -> Any:
    """Normalised rows (:mod:`..read.store`) as an Arrow table with the store schema."""
    from mqconform.reports.read.store import rows_to_table

    return rows_to_table(rows)
