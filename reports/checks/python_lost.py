"""The python engine's ``lost`` check (DELIVERY-2, DELIVERY-15): what was accepted for each queue of an
example against what left it (consumed, counted replaced, killed or expired, with what a restart
zeroed carried over: definitions.CARRIED) and what it still holds, or against a final drain
(definitions.lost_example, shared with the Spark engine)."""

from __future__ import annotations

from typing import Any

from mqconform.reports.checks.arrow_ops import agg as _agg
from mqconform.reports.checks.arrow_ops import i8 as _i8
from mqconform.reports.checks.definitions import (
    CARRIED,
    JsonRow,
    Stats,
    add_figures,
    drained_keys,
    lost_example,
)
from mqconform.reports.checks.encode import Codes


def lost(stats: Stats, codes: Codes, routes: list[dict[str, Any]], drain_rows: list[JsonRow], msgs: Any,
         dlv: Any, counters: Any, resets: dict[int, int]) -> None:
    """Add the ``lost`` statistics of the examples of one chunk (:func:`.python_engine._chunk_stats`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    acc = msgs.filter(pc.equal(msgs["acked"], 1))
    ek, m = codes.split_mk(acc["mk"])
    acc = pa.table({"ek": ek, "m": m, "target": acc["squeue"], "sidx": acc["sidx"]})
    decl_rows = [(codes.ek_for(r["run"], r["machine"], r["example"]), codes.queue_code[r["target"]],
                  codes.queue_code[r["dq"]], r["didx"], r["filt"]) for r in routes]
    decl_rows = [r for r in decl_rows if r[0] is not None]
    if decl_rows:
        decl = pa.table({name: pa.array([r[i] for r in decl_rows], kind) for i, (name, kind) in enumerate(
            [("ek", pa.int64()), ("target", pa.int64()), ("dq", pa.int64()), ("didx", pa.int64()),
             ("filt", pa.int8())])})
        routed = acc.join(decl, ["ek", "target"], join_type="inner")
        routed = routed.filter(pc.less(routed["didx"], pc.fill_null(routed["sidx"], 2**62)))
        unbound = acc.join(decl.select(["ek", "target"]), ["ek", "target"], join_type="left anti")
        dest = pa.concat_tables([
            routed.select(["ek", "m", "dq", "filt"]),
            pa.table({"ek": unbound["ek"], "m": unbound["m"], "dq": unbound["target"],
                      "filt": pa.array([0] * unbound.num_rows, pa.int8())})])
    else:
        dest = pa.table({"ek": acc["ek"], "m": acc["m"], "dq": acc["target"],
                         "filt": pa.nulls(acc.num_rows, pa.int8()).fill_null(0)})
    dest_gk = codes.gk(dest["ek"], dest["dq"])
    per_g = _agg(pa.table({"gk": dest_gk, "filt": dest["filt"]}), ["gk"],
                 {"accepted": ("", "count_all"), "filt": ("filt", "max")})
    maybe = _i8(pc.and_(pc.equal(dlv["ack_info"], 1), pc.equal(dlv["ack_ok"], 0)))
    consumed = _agg(pa.table({"gk": dlv["gk"], "ack_ok": dlv["ack_ok"], "maybe": maybe}), ["gk"],
                    {"consumed": ("ack_ok", "sum"), "maybe": ("maybe", "sum")})
    last = _agg(counters.select(["gk", "index"]), ["gk"], {"index": ("index", "max")})
    final = counters.select(["gk", "ek", "index", "c_message", "c_replaced", "c_killed", "c_expired"]).join(
        last, ["gk", "index"], join_type="inner")
    drained = {codes.gk_for(*key) for key in drained_keys(drain_rows)} - {None}
    seen: dict[int, int] = {}
    if drained:
        got = pa.table({"dk": codes.mk(dest_gk, dest["m"]), "gk": dest_gk}).join(
            dlv.filter(pc.or_(pc.greater(dlv["count"], 0), pc.equal(dlv["ack_ok"], 1))).select(["dk"]), "dk",
            join_type="left semi")
        seen = {row["gk"]: row["n"] for row in _agg(got, ["gk"], {"n": ("", "count_all")}).to_pylist()}
    cons = {r["gk"]: (r["consumed"], r["maybe"]) for r in consumed.to_pylist()}
    carried = _carried(counters)
    final_rows = final.to_pylist()
    fin = {r["gk"]: (r["c_message"], *(_plus(r[part], carried.get((r["gk"], part), 0)) for part in CARRIED))
           for r in final_rows}
    reset = {r["gk"] for r in final_rows if r["ek"] in resets and r["index"] > resets[r["ek"]]}
    for row in per_g.to_pylist():
        g = row["gk"]
        stats_g = lost_example(row["accepted"], bool(row["filt"]), g in drained, seen.get(g, 0),
                               cons.get(g, (0, 0)), fin.get(g), g in reset)
        run, machine, _example, queue = codes.example_queue(g)
        add_figures(stats, run, machine, queue, "lost", stats_g)


def _carried(counters: Any) -> dict[tuple[int, str], int]:
    """(example-queue key, counter of :data:`CARRIED`) -> the sum of the values a restart zeroed: each
    observation lower than the one before it adds that earlier one (the Spark engine's
    spark_frames.carried_drops)."""
    import numpy as np

    if counters.num_rows == 0:
        return {}
    ordered = counters.select(["gk", "index", *CARRIED]).sort_by(
        [("gk", "ascending"), ("index", "ascending")])
    gk = ordered["gk"].to_numpy()
    same = np.zeros(len(gk), dtype=bool)
    same[1:] = gk[1:] == gk[:-1]
    out: dict[tuple[int, str], int] = {}
    for part in CARRIED:
        column = ordered[part]
        present = ~column.is_null().to_numpy(zero_copy_only=False)
        values = column.fill_null(0).to_numpy()
        before = np.zeros_like(values)
        before[1:] = values[:-1]
        had = np.zeros(len(values), dtype=bool)
        had[1:] = present[:-1]
        drop = same & present & had & (values < before)
        for key, value in zip(gk[drop], before[drop], strict=True):
            out[(int(key), part)] = out.get((int(key), part), 0) + int(value)
    return out


def _plus(value: int | None, carried: int) -> int | None:
    return None if value is None else value + carried
