"""The Spark engine's fast plan (:mod:`.spark_engine` chooses it): ONE hash aggregation per (example,
message) over send, receive and ack rows together, the order check's window per consumer, then per
(example, queue) and per (run, machine, queue). It gives up (None: the exact plan runs instead) when a
message is sent to or delivered on several queues, acknowledged without a send or delivered after its
first ack, or when two queue or consumer names share a code."""

from __future__ import annotations

from typing import Any

from mqconform.reports.checks.definitions import (
    ACCEPTED,
    DEFERRED,
    NULLQ,
    REFUSED,
    STATS,
    E,
    Stats,
    add_figures,
)
from mqconform.reports.checks.spark_frames import (
    COUNTER_SUMS,
    add_counters,
    collect,
    deleted_by_id,
    local_frame,
    long_form,
    queue_counters,
    return_cuts,
    throttle_answers,
)
from mqconform.reports.checks.spark_order import FRAMES, out_of_order

#: the fast plan's per-(example, queue) sums (see :func:`_fast_sums`; ``consumers`` counts the consumers
#: with first deliveries); ``late`` and ``odd`` count the messages it leaves to the exact plan
FAST_SUMS = ("attempted", "acknowledged", "refused", "indeterminate", "accepted", "delivered", "duplicated",
             "unexpected", "refused_delivered", "recovered", "acked", "consumed", "maybe", "n_tq", "n_daa",
             "first_deliveries", "consumers", "out_of_order", "late", "odd")


#: the lost check's sums over the examples in the fast plan (``l_``: named as the exact plan's)
LOST_SUMS = ("examples", "unknown_examples", "l_acknowledged", "l_consumed", "possibly_consumed", "in_queue",
             "replaced", "killed", "expired", "lost")


#: row kinds of the fast plan's message rows, one bit each (the per-message ``kinds`` is their bit_or)
K_SEND, K_SEND_SCHED, K_ACCEPTED, K_REFUSED, K_INFO, K_RECV, K_ACK, K_ACK_TX, K_ACK_INFO, K_DELETED = (
    1 << i for i in range(10))


#: per-message flags above the row kinds in ``sig`` (:func:`_signed`): sent, delivered, acknowledged outside
#: a transaction, delivered after that ack, on several queues, ordered (order check), out of order, routed
FLAGS = F_SENT, F_COUNTED, F_FIRST_ACK, F_LATE, F_QUEUES, F_ELIGIBLE, F_OOO, F_ROUTED = (
    1 << i for i in range(10, 18))


def _code(column: Any) -> Any:
    """The 64-bit code of a queue or process name (xxhash64): exact once :func:`_names` has found the
    codes of the store's names distinct."""
    from pyspark.sql import functions as F

    return F.xxhash64(column)


def _recv_process() -> Any:
    """The process of a ``receive`` ``ok`` row (null on other rows): the consumer of the order check."""
    from pyspark.sql import functions as F

    return F.when((F.col("f") == "receive") & (F.col("type") == "ok"), F.col("process"))


def _names(df: Any) -> dict[int, str] | None:
    """Queue name by code (:func:`_code`) over the store, or None when two queue names or two receiving
    processes share a code (the fast plan then does not apply): one small job."""
    distinct = df.select("queue", _recv_process().alias("proc")).distinct()
    rows = distinct.select("queue", _code("queue").alias("qc"), "proc", _code("proc").alias("pc")).collect()
    queues = {(r["qc"], r["queue"]) for r in rows}
    procs = {(r["pc"], r["proc"]) for r in rows}
    if len({qc for qc, _ in queues}) < len(queues) or len({pc for pc, _ in procs}) < len(procs):
        return None
    return dict(queues)


def _per_message(df: Any) -> Any:
    """ONE hash aggregation per (example, msg) over send, receive and ack rows: a bit per row kind
    present, the message's queue codes, indices (send, send accepted, first and last receive, first
    non-transactional ack), send count and priority, the first receive's process code. Fixed-width
    buffers only (codes, not names), so Spark hashes rather than sorts."""
    from pyspark.sql import functions as F

    from mqconform.reference_model.config import DEFAULT_PRIORITY

    col = F.col
    ok, info, fail = (col("type") == t for t in ("ok", "info", "fail"))
    is_send, is_ack = col("f") == "send", col("f") == "ack"
    invoke = is_send & (col("type") == "invoke")
    result = col("result")
    deleted = deleted_by_id()
    kind = (F.when(invoke & (col("scheduled_at").isNotNull() | col("priority").isNull()), K_SEND_SCHED)
            .when(invoke, K_SEND)
            .when(is_send & ok & result.isin(*ACCEPTED), K_ACCEPTED)
            .when(is_send & ((ok & result.isin(*REFUSED)) | fail), K_REFUSED)
            .when(is_send & (info | (ok & result.isin(*DEFERRED))), K_INFO)
            .when((col("f") == "receive") & ok, K_RECV)
            .when(is_ack & ok & result.isin(*REFUSED), 0)  # a failed ack acknowledged nothing
            .when(is_ack & ok & F.coalesce(col("tx"), F.lit(False)), K_ACK_TX)
            .when(is_ack & ok, K_ACK).when(is_ack & info, K_ACK_INFO)
            .when(deleted, K_DELETED).otherwise(0))
    message_row = is_send | ((col("f") == "receive") & ok) | (is_ack & (ok | info)) | deleted
    rows = (df.filter(col("msg").isNotNull() & message_row)
            .select(*E, "msg", "index", "priority", kind.alias("kind"), _code("queue").alias("qc"),
                    _code(_recv_process()).alias("pc")))
    k = col("kind")
    sent = k.isin(K_SEND, K_SEND_SCHED)
    recv = k == K_RECV
    queued = sent | k.isin(K_RECV, K_ACK, K_ACK_TX, K_ACK_INFO, K_DELETED)
    return rows.groupBy(*E, "msg").agg(
        F.bit_or(k).alias("kinds"), F.count_if(sent).alias("nsend"),
        F.min(F.when(queued, col("qc"))).alias("qc"), F.max(F.when(queued, col("qc"))).alias("qmax"),
        F.min(F.when(sent, col("index"))).alias("sidx"),
        F.min(F.when(k == K_ACCEPTED, col("index"))).alias("soidx"),
        F.max(F.when(sent, F.coalesce(col("priority"), F.lit(DEFAULT_PRIORITY)))).alias("prio"),
        F.count_if(recv).alias("count"), F.min(F.when(recv, col("index"))).alias("first"),
        F.min_by(col("pc"), F.when(recv, col("index"))).alias("proc"),
        F.max(F.when(recv, col("index"))).alias("last_recv"),
        F.min(F.when(k == K_ACK, col("index"))).alias("first_ack"))


def _has(*bits: int) -> Any:
    """Whether the message's ``sig`` has one of `bits` (a row kind present, or a flag of :func:`_signed`)."""
    from pyspark.sql import functions as F

    return (F.col("sig").bitwiseAND(sum(bits))) != 0


def _signed(pm: Any, routed: Any) -> Any:
    """The per-message facts as one ``sig`` (the row kinds present and the :data:`FLAGS`), after the order
    check's window (DELIVERY-4): in each consumer's segment (example first: Spark's sort prefix), a first
    delivery is out of order when an earlier one's send was invoked after its own send was accepted."""
    from pyspark.sql import functions as F

    col = F.col
    segment = ["example", "run", "machine", "qc", "eligible", "proc", "prio"]
    flags = {F_SENT: col("nsend") > 0, F_COUNTED: col("count") > 0, F_FIRST_ACK: col("first_ack").isNotNull(),
             F_LATE: col("last_recv") > col("first_ack"), F_QUEUES: col("qc") != col("qmax"),
             F_ELIGIBLE: col("eligible"), F_ROUTED: routed,
             F_OOO: out_of_order(segment)}
    sig = col("kinds")
    for bit, cond in flags.items():
        sig = sig.bitwiseOR(F.when(cond, bit).otherwise(0))
    return (pm.repartition("example", "run", "machine", "qc")
            .select(*E, "qc", "proc", "count", sig.alias("sig")))


def _fast_sums() -> dict[str, Any]:
    """:data:`FAST_SUMS` over (example, queue, consumer, sig) groups of ``n`` messages with ``c``
    deliveries (total-queue, lost, delivery-after-ack, order; DELIVERY-2, DELIVERY-4, DELIVERY-6,
    DELIVERY-7, DELIVERY-15): a message's send and deliveries share its one queue."""
    from pyspark.sql import functions as F

    col = F.col
    n, c = col("n"), col("c")

    def total(cond: Any, value: Any) -> Any:
        return F.sum(F.when(cond, value).otherwise(0))

    sent, acked, refused, info = _has(F_SENT), _has(K_ACCEPTED), _has(K_REFUSED), _has(K_INFO)
    ack_ok, counted, has_first = _has(K_ACK, K_ACK_TX, K_DELETED), _has(F_COUNTED), _has(F_FIRST_ACK)
    eligible = _has(F_ELIGIBLE)
    return {
        "attempted": total(sent, n), "acknowledged": total(sent & acked, n),
        "refused": total(sent & refused, n), "indeterminate": total(sent & info, n),
        "accepted": total(acked & _has(F_ROUTED), n), "delivered": F.sum(c),
        "duplicated": total(counted, c - n), "unexpected": total(counted & ~sent, c),
        "refused_delivered": total(counted & refused, c), "recovered": total(counted & info, n),
        "acked": total(has_first, n), "consumed": total(ack_ok, n),
        "maybe": total(_has(K_ACK_INFO) & ~ack_ok, n), "n_tq": total(sent | counted, n),
        "n_daa": total(counted | has_first, n),
        "first_deliveries": total(eligible, n), "consumers": F.count_distinct(F.when(eligible, col("proc"))),
        "out_of_order": total(eligible & _has(F_OOO), n), "late": total(_has(F_LATE), n),
        "odd": total(_has(F_QUEUES) | (acked & ~sent), n)}


def fast_stats(spark: Any, df: Any, routes: list[dict[str, Any]]) -> Stats | None:
    """The plan for big histories: one hash aggregation per message (:func:`_per_message`), one sort per
    example and queue (the order check's window), one aggregation per (example, queue, consumer, sig), one
    per (example, queue) joined with its counters, one per R. None when a message is sent to or delivered
    on several queues, acknowledged without a send, or delivered after its first ack (the exact plan then
    counts them), or when two names share a code (:func:`_names`)."""
    names = _names(df)
    if names is None:
        return None
    frames = [long_form(_fast_per_r(_fast_per_g(spark, df, routes), queue_counters(df)), "_fast",
                    [*FAST_SUMS, *COUNTER_SUMS, *LOST_SUMS])]

    def emit(frame: Any, check: str, n: list[str]) -> None:
        frames.append(long_form(frame, check, n))

    throttle_answers(df, emit)
    frame, frame_names = FRAMES["delivery-count"]
    emit(frame(df), "delivery-count", list(frame_names))
    return _fast_collect(frames, names)


def _fast_per_g(spark: Any, df: Any, routes: list[dict[str, Any]]) -> Any:
    """:data:`FAST_SUMS` per (example, queue code): the per-message facts with their routing (a send is
    routed to its target's queue iff declared before it), the order check's return events and eligibility
    (sent once, not scheduled, first delivered before any return event: DELIVERY-4)."""
    from pyspark.sql import functions as F

    col = F.col
    g = [*E, "qc"]
    pm = _per_message(df)
    if routes:  # one queue per target (simple routing)
        decl = local_frame(spark,
                           [(r["run"], r["machine"], r["example"], r["target"], r["didx"]) for r in routes],
                           "run string, machine string, example long, target string, didx long")
        pm = pm.join(F.broadcast(decl.select(*E, _code("target").alias("qc"), "didx")), on=g, how="left")
        routed = col("didx").isNull() | (col("didx") < F.coalesce(col("sidx"), F.lit(2**62)))
    else:
        routed = F.lit(True)
    cuts_g, cuts_e = return_cuts(df)
    pm = (pm.join(F.broadcast(cuts_g.select(*E, _code("queue").alias("qc"), "cut")), on=g, how="left")
          .join(F.broadcast(cuts_e), on=E, how="left"))
    eligible = ((col("count") > 0) & (col("nsend") == 1) & (col("kinds").bitwiseAND(K_SEND_SCHED) == 0)
                & F.coalesce(col("first") < col("cut"), F.lit(True))
                & F.coalesce(col("first") < col("cut2"), F.lit(True)))
    per_c = (_signed(pm.withColumn("eligible", eligible), routed).groupBy(*g, "proc", "sig")
             .agg(F.count(F.lit(1)).alias("n"), F.sum("count").alias("c")))
    return per_c.groupBy(*g).agg(*[v.alias(n) for n, v in _fast_sums().items()]).filter(col("qc").isNotNull())


def _fast_per_r(per_g: Any, per_q: Any) -> Any:
    """Per (run, machine, queue code: the ``queue`` column, as text): the sums of `per_g` and of the
    counters per (example, queue) `per_q` joined with it, and the lost check's :data:`LOST_SUMS` over the
    examples (DELIVERY-2, DELIVERY-15)."""
    from pyspark.sql import functions as F

    col = F.col
    joined = per_g.join(per_q.withColumn("qc", _code("queue")).drop("queue"), on=[*E, "qc"], how="full")
    has_acc = F.coalesce(col("accepted"), F.lit(0)) > 0
    unaccounted = (col("accepted") - col("consumed") - col("maybe") - col("m") - col("r") - col("k")
                   - F.coalesce(col("x"), F.lit(0)))
    lost = F.greatest(F.lit(0), unaccounted)
    # without an expired counter, or with counters zeroed by a restart, they may account for what is
    # missing (definitions.lost_example)
    known = (col("m").isNotNull() & col("r").isNotNull() & col("k").isNotNull()
             & ((lost == 0) | (col("x").isNotNull() & (F.coalesce(col("reset"), F.lit(0)) == 0))))
    ok_known = has_acc & known

    def when(cond: Any, value: Any) -> Any:
        return F.sum(F.when(cond, value).otherwise(0))

    return joined.groupBy("run", "machine", "qc").agg(
        *[F.sum(n).alias(n) for n in (*FAST_SUMS, *COUNTER_SUMS)],
        when(has_acc, 1).alias("examples"), when(has_acc & ~known, 1).alias("unknown_examples"),
        when(ok_known, col("accepted")).alias("l_acknowledged"),
        when(ok_known, col("consumed")).alias("l_consumed"),
        when(ok_known, col("maybe")).alias("possibly_consumed"), when(ok_known, col("m")).alias("in_queue"),
        when(ok_known, col("r")).alias("replaced"), when(ok_known, col("k")).alias("killed"),
        when(ok_known, F.coalesce(col("x"), F.lit(0))).alias("expired"),
        when(ok_known, lost).alias("lost")).withColumn("queue", col("qc").cast("string"))


def _fast_collect(frames: list[Any], names: dict[int, str]) -> Stats | None:
    """Collect the fast plan's union once (its queue codes decoded by `names`); None when a message needs
    the exact plan."""
    stats, own = collect(frames)
    fast = own.get("_fast", {})
    if any(v["late"] or v["odd"] for v in fast.values()):
        return None
    for (run, machine, code), v in fast.items():
        queue = names[int(code)] if code is not None else NULLQ
        key = (run, machine, None if queue == NULLQ else queue)
        add_counters(stats, key, v)
        if v["n_tq"]:
            add_figures(stats, *key, "total-queue", {n: v[n] for n in STATS["total-queue"]})
        if v["n_daa"]:
            add_figures(stats, *key, "delivery-after-ack", {"acked": v["acked"], "delivered_after_ack": 0})
        if v["first_deliveries"]:
            add_figures(stats, *key, "order", {n: v[n] for n in STATS["order"]})
        if v["examples"]:
            add_figures(stats, *key, "lost", {
                "examples": v["examples"], "unknown_examples": v["unknown_examples"],
                "acknowledged": v["l_acknowledged"], "consumed": v["l_consumed"],
                **{n: v[n] for n in ("possibly_consumed", "in_queue", "replaced", "killed", "expired",
                                     "lost")}})
    return stats
