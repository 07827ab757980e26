"""History checks on Spark: the checks of :mod:`.checks_python` as DataFrame expressions.

Reads the Parquet store (:mod:`.store`; Parquet column pruning: only the columns a check reads) and
computes the same statistics per (run, machine, queue, check) with group-bys and key joins, no Python
UDF. Two plans give the same statistics (tests compare them with the python engine):

- the fast plan (big histories): ONE aggregation per (example, message) over send, receive and ack
  rows together (send and delivery facts), exploded into per-(example, queue) sums, joined with the
  last counters observation, then per (run, machine, queue); counter identity and ring bound share
  one aggregation. Used when routing is one queue per target, without filters or drains; it gives up
  (returns to the exact plan) when a message is delivered on several queues or after its first ack;
- the exact plan: per-message and per-delivery aggregations joined (any routing, drains, fan-out).

Each plan is one lazy union collected once; the only other job collects the queue declarations and
drain records (a few per example), whose routing is resolved by the python engine's own functions.
Rule ids (DELIVERY-1, DELIVERY-2, DELIVERY-4, DELIVERY-6, DELIVERY-7, DELIVERY-15, RING-17, THROTTLE-7,
ADMISSION-3, ADMISSION-7, REDELIVERY-1/2/12/19/22) and verdicts are those of :mod:`.checks_python`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.reports import checks_python as cp
from mqconform.reports.checks_python import ACCEPTED, DEFERRED, NULLQ, REFUSED, TIMEOUT, Stats

E = cp.E
R = cp.R


def load(spark: Any, store: Path) -> Any:
    """The store's rows as a DataFrame (partition columns adapter and run_date included)."""
    return spark.read.option("basePath", str(store / "history")).parquet(
        str(store / "history" / "adapter=*" / "run_date=*"))


def _small(df: Any) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[tuple[dict[str, Any],
                                                                                      dict[str, Any]]]]:
    """Queue declarations and drain records (one or a few per example) with parsed values: one job."""
    from pyspark.sql import functions as F

    col = F.col
    decl = (col("f") == "queue") & (col("type") == "invoke")
    drain = (col("f") == "drain") & (col("type") == "ok")
    rows = [r.asDict() for r in df.filter(decl | drain).select(*E, "index", "queue", "f", "value").collect()]
    return (cp._json_rows(_Rows([r for r in rows if r["f"] == "queue"])),
            cp._json_rows(_Rows([r for r in rows if r["f"] == "drain"])))


class _Rows:
    """The to_pylist() face of a list of dicts (so cp._json_rows reads collected rows)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def to_pylist(self) -> list[dict[str, Any]]:
        return self.rows


def _long(frame: Any, check: str, names: list[str]) -> Any:
    """`frame`'s statistics in long form (run, machine, queue, check, name, value): all checks are
    unioned and collected once."""
    from pyspark.sql import functions as F

    pairs = F.array(*[F.struct(F.lit(n).alias("name"), F.col(n).cast("long").alias("value")) for n in names])
    return (frame.select(*R, F.lit(check).alias("check"), F.explode(pairs).alias("s"))
            .select(*R, "check", "s.name", "s.value"))


def compute_stats(spark: Any, store: Path, exact: bool = False) -> Stats:
    """Statistics of every check over the store at `store` (see checks_python for definitions).

    The fast plan (:func:`_fast_stats`: one shuffle per message, one per example and queue) serves
    histories whose routing is one queue per target without filters, without drains; it falls back to
    the exact plan (:func:`exact_stats`) when a message is delivered on several queues or after its
    first ack. Both give the same statistics (tests compare them); `exact` forces the exact plan.
    """
    from pyspark.sql import functions as F

    df = load(spark, store).withColumn("queue", F.coalesce(F.col("queue"), F.lit(NULLQ)))
    decl_rows, drain_rows = _small(df)
    routes = cp.routing_table(decl_rows)
    simple = not cp.drained_keys(drain_rows) and all(r["target"] == r["dq"] and not r["filt"] for r in routes)
    if not exact and simple:
        stats = _fast_stats(spark, df, routes)
        if stats is not None:
            return stats
    return exact_stats(spark, df, decl_rows, drain_rows)


def exact_stats(spark: Any, df: Any, decl_rows: list[Any], drain_rows: list[Any]) -> Stats:
    """The exact plan: per-message and per-delivery aggregations joined (any routing, drains)."""
    from pyspark.sql import functions as F

    col = F.col
    ok, invoke, info, fail = (col("type") == t for t in ("ok", "invoke", "info", "fail"))

    def flag(cond: Any) -> Any:
        return F.max(F.when(cond, 1).otherwise(0))

    msgs = (df.filter((col("f") == "send") & col("msg").isNotNull())
            .groupBy(*E, "msg").agg(
                flag(invoke).alias("sent"),
                F.coalesce(F.max(F.when(invoke, col("queue"))), F.lit(NULLQ)).alias("squeue"),
                F.min(F.when(invoke, col("index"))).alias("sidx"),
                flag(ok & col("result").isin(*ACCEPTED)).alias("acked"),
                flag((ok & col("result").isin(*REFUSED)) | fail).alias("refused"),
                flag(info | (ok & col("result").isin(*DEFERRED))).alias("info"))
            .persist())
    is_ack, is_recv = col("f") == "ack", col("f") == "receive"
    dlv = (df.filter(((is_recv & ok) | (is_ack & (ok | info))) & col("msg").isNotNull())
           .groupBy(*E, "queue", "msg").agg(
               F.sum(F.when(is_recv, 1).otherwise(0)).alias("count"),
               F.max(F.when(is_recv, col("index"))).alias("last_recv"),
               F.min(F.when(is_ack & ok & ~F.coalesce(col("tx"), F.lit(False)), col("index")))
               .alias("first_ack"),
               flag(is_ack & ok).alias("ack_ok"), flag(is_ack & info).alias("ack_info")))
    frames: list[Any] = []

    def emit(frame: Any, check: str, names: list[str]) -> None:
        frames.append(_long(frame, check, names))

    sent = msgs.filter(col("sent") == 1).withColumnRenamed("squeue", "queue")
    emit(sent.groupBy(*R).agg(F.count(F.lit(1)).alias("attempted"), F.sum("acked").alias("acknowledged"),
                              F.sum("refused").alias("refused"), F.sum("info").alias("indeterminate")),
         "total-queue", ["attempted", "acknowledged", "refused", "indeterminate"])

    # every per-(example, queue, msg) fact with its send facts: computed once, read by five checks
    joined = dlv.join(msgs.select(*E, "msg", "sent", "refused", "info"), on=[*E, "msg"], how="left").persist()
    dlv = joined
    delivered = joined.filter(col("count") > 0)
    emit(delivered.groupBy(*R).agg(
        F.sum("count").alias("delivered"), F.sum(col("count") - 1).alias("duplicated"),
        F.sum(F.when(F.coalesce(col("sent"), F.lit(0)) == 0, col("count")).otherwise(0)).alias("unexpected"),
        F.sum(F.when(col("refused") == 1, col("count")).otherwise(0)).alias("refused_delivered"),
        F.sum(F.when(col("info") == 1, 1).otherwise(0)).alias("recovered")),
        "total-queue", ["delivered", "duplicated", "unexpected", "refused_delivered", "recovered"])

    emit(dlv.filter((col("count") > 0) | col("first_ack").isNotNull()).groupBy(*R).agg(
        F.sum(F.when(col("first_ack").isNotNull(), 1).otherwise(0)).alias("acked"),
        F.lit(0).alias("delivered_after_ack")), "delivery-after-ack", ["acked", "delivered_after_ack"])
    cand = dlv.filter(col("last_recv") > col("first_ack")).select(*E, "queue", "msg", "first_ack")
    if cand.limit(1).count():  # a delivery after the first ack exists: count them exactly
        late = (df.filter(is_recv & ok & col("msg").isNotNull()).select(*E, "queue", "msg", "index")
                .join(F.broadcast(cand), on=[*E, "queue", "msg"], how="inner")
                .filter(col("index") > col("first_ack")))
        emit(late.groupBy(*R).agg(F.count(F.lit(1)).alias("delivered_after_ack")), "delivery-after-ack",
             ["delivered_after_ack"])

    counters = df.filter(col("f") == "counters")
    _lost(spark, decl_rows, drain_rows, msgs, dlv, counters, emit)

    frames.append(_counter_frame(df, counters))

    throttle_answers(df, emit)
    sequence_checks(df, emit)
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    stats: Stats = {}
    try:
        for row in union.collect():
            cp._add(stats, row["run"], row["machine"], row["queue"], row["check"],
                    {row["name"]: row["value"]})
    finally:
        joined.unpersist()
        msgs.unpersist()
    return stats


def _counter_frame(df: Any, counters: Any) -> Any:
    """Counter identity (DELIVERY-1) and ring bound (RING-17) in long form: one aggregation."""
    from pyspark.sql import functions as F

    col = F.col
    ok = col("type") == "ok"
    parts = ["c_message", "c_pending", "c_delivering", "c_scheduled", "c_paged"]
    complete = F.lit(True)
    for part in parts:
        complete = complete & col(part).isNotNull()
    total = col("c_pending") + col("c_delivering") + col("c_scheduled") + col("c_paged")
    exempt_from = (df.filter(col("f").isin("nack", "set_ring_size") & ok)
                   .groupBy(*E, "queue").agg(F.min("index").alias("exempt_from")))
    in_ring = F.coalesce((col("bound") >= 0) & col("c_pending").isNotNull(), F.lit(False))
    exempt = in_ring & F.coalesce(col("index") > col("exempt_from"), F.lit(False))
    checked = in_ring & ~exempt

    def count(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    per_r = (counters.join(F.broadcast(exempt_from), on=[*E, "queue"], how="left").groupBy(*R).agg(
        F.count(F.lit(1)).alias("observations"), count(complete).alias("checked"),
        count(complete & (col("c_message") != total)).alias("broken"),
        count(in_ring).alias("ring_observations"), count(exempt).alias("exempt"),
        count(checked).alias("ring_checked"),
        count(checked & (col("c_pending") > col("bound"))).alias("over_bound")))
    long = [("counter-identity", n, n) for n in ("observations", "checked", "broken")] + [
        ("ring-bound", "observations", "ring_observations"), ("ring-bound", "exempt", "exempt"),
        ("ring-bound", "checked", "ring_checked"), ("ring-bound", "over_bound", "over_bound")]
    triples = F.array(*[F.struct(F.lit(c).alias("check"), F.lit(n).alias("name"),
                                 col(v).cast("long").alias("value")) for c, n, v in long])
    return (per_r.select(*R, "ring_observations", F.explode(triples).alias("s"))
            .filter((col("s.check") != "ring-bound") | (col("ring_observations") > 0))
            .select(*R, "s.check", "s.name", "s.value"))


def throttle_answers(df: Any, emit: Any) -> None:
    """Throttle bound (THROTTLE-7) and admission answers (ADMISSION-3, ADMISSION-7)."""
    from pyspark.sql import functions as F

    col = F.col
    throttle = df.filter((col("f") == "throttle_state") & col("in_flight").isNotNull()
                         & col("bound").isNotNull())
    emit(throttle.groupBy(*R).agg(
        F.count(F.lit(1)).alias("observations"),
        F.sum(F.when((col("in_flight") < 0) | (col("in_flight") > col("bound") + 1), 1).otherwise(0))
        .alias("over_bound")),
        "throttle-bound", ["observations", "over_bound"])
    _answers(df, emit)


def sequence_checks(df: Any, emit: Any) -> None:
    """Per-consumer order (DELIVERY-4) and delivery-count monotonicity (REDELIVERY-1, REDELIVERY-2,
    REDELIVERY-12, REDELIVERY-19, REDELIVERY-22): window expressions, :mod:`.checks_spark_order`."""
    from mqconform.reports.checks_spark_order import FRAMES

    for check, (frame, names) in FRAMES.items():
        emit(frame(df), check, list(names))


def _lost(spark: Any, decl_rows: list[Any], drain_rows: list[Any], msgs: Any, dlv: Any, counters: Any,
          emit: Any) -> None:
    """The ``lost`` check (routing, drain, indeterminate acks) as in :func:`checks_python.lost_example`."""
    from pyspark.sql import functions as F

    col = F.col
    routes = cp.routing_table(decl_rows)
    drained = sorted(cp.drained_keys(drain_rows))
    acc = msgs.filter(col("acked") == 1).select(*E, "msg", col("squeue").alias("target"), "sidx")
    if routes:
        decl = F.broadcast(spark.createDataFrame(
            [(r["run"], r["machine"], r["example"], r["target"], r["dq"], r["didx"], r["filt"])
             for r in routes],
            "run string, machine string, example long, target string, dq string, didx long, filt int"))
        routed = (acc.join(decl, on=[*E, "target"], how="inner")
                  .filter(col("didx") < F.coalesce(col("sidx"), F.lit(2**62)))
                  .select(*E, "msg", col("dq").alias("queue"), "filt"))
        unbound = (acc.join(decl.select(*E, "target").distinct(), on=[*E, "target"], how="left_anti")
                   .select(*E, "msg", col("target").alias("queue"), F.lit(0).alias("filt")))
        dest = routed.unionByName(unbound)
    else:
        dest = acc.select(*E, "msg", col("target").alias("queue"), F.lit(0).alias("filt"))
    per_g = dest.groupBy(*E, "queue").agg(F.count(F.lit(1)).alias("accepted"), F.max("filt").alias("filt"))
    consumed = dlv.groupBy(*E, "queue").agg(
        F.sum("ack_ok").alias("consumed"),
        F.sum(F.when((col("ack_info") == 1) & (col("ack_ok") == 0), 1).otherwise(0)).alias("maybe"))
    final = counters.groupBy(*E, "queue").agg(
        F.max_by(F.struct("c_message", "c_replaced", "c_killed"), col("index")).alias("last"))
    g = (per_g.join(consumed, on=[*E, "queue"], how="left").join(final, on=[*E, "queue"], how="left")
         .select(*E, "queue", "accepted", "filt", F.coalesce(col("consumed"), F.lit(0)).alias("done"),
                 F.coalesce(col("maybe"), F.lit(0)).alias("maybe"), col("last.c_message").alias("m"),
                 col("last.c_replaced").alias("r"), col("last.c_killed").alias("k")))
    if drained:
        marks = F.broadcast(spark.createDataFrame([(*key, 1) for key in drained],
                                                  "run string, machine string, example long, queue string, "
                                                  "drained int"))
        seen = (dest.join(marks.select(*E, "queue"), on=[*E, "queue"], how="left_semi")
                .join(dlv.filter(col("count") > 0).select(*E, "queue", "msg"), on=[*E, "queue", "msg"],
                      how="left_semi").groupBy(*E, "queue").agg(F.count(F.lit(1)).alias("seen")))
        g = (g.join(marks, on=[*E, "queue"], how="left").join(seen, on=[*E, "queue"], how="left")
             .withColumn("drained", F.coalesce(col("drained"), F.lit(0)))
             .withColumn("seen", F.coalesce(col("seen"), F.lit(0))))
    else:
        g = g.withColumn("drained", F.lit(0)).withColumn("seen", F.lit(0))
    filtered = col("filt") == 1
    is_drained = col("drained") == 1
    unknown = ~filtered & (col("r").isNull() | col("k").isNull() | (col("m").isNull() & ~is_drained))
    counted = ~filtered & ~unknown

    def when(cond: Any, value: Any) -> Any:
        return F.when(cond, value).otherwise(F.lit(0))

    lost = F.when(is_drained, F.greatest(F.lit(0), col("accepted") - col("seen") - col("r") - col("k"))) \
        .otherwise(F.greatest(F.lit(0), col("accepted") - col("done") - col("maybe") - col("m") - col("r")
                              - col("k")))
    names = list(cp.STATS["lost"])
    per = g.select(
        *E, "queue", F.lit(1).alias("examples"), when(unknown, 1).alias("unknown_examples"),
        when(filtered, 1).alias("not_applicable_examples"),
        when(counted & is_drained, 1).alias("drained_examples"),
        when(counted, col("accepted")).alias("acknowledged"),
        when(counted, F.when(is_drained, col("seen")).otherwise(col("done"))).alias("consumed"),
        when(counted & ~is_drained, col("maybe")).alias("possibly_consumed"),
        when(counted, F.coalesce(col("m"), F.lit(0))).alias("in_queue"),
        when(counted, col("r")).alias("replaced"),
        when(counted, col("k")).alias("killed"), when(counted, lost).alias("lost"))
    emit(per.groupBy(*R).agg(*[F.sum(n).alias(n) for n in names]), "lost", names)


def _answers(df: Any, emit: Any) -> None:
    """ADMISSION-7 (one answer per request) and ADMISSION-3 (no TIMEOUT before the wait limit)."""
    from pyspark.sql import functions as F

    col = F.col

    def field(name: str, kind: str = "string") -> Any:
        return F.get_json_object(col("value"), f"$.{name}").cast(kind)

    answers = (df.filter((col("f") == "answer") & (col("type") == "ok"))
               .select(*E, "queue", field("id").alias("id"), field("answer").alias("answer"),
                       field("at_ms", "long").alias("at"), field("submitted_ms", "long").alias("sub"),
                       field("wait_ms", "long").alias("wait")))
    timeout = F.coalesce(col("answer") == TIMEOUT, F.lit(False))
    early = timeout & F.coalesce(col("at") - col("sub") < col("wait"), F.lit(False))
    emit(answers.groupBy(*R).agg(F.count(F.lit(1)).alias("answers"),
                                 F.sum(F.when(timeout, 1).otherwise(0)).alias("timeouts"),
                                 F.sum(F.when(early, 1).otherwise(0)).alias("early_timeouts")),
         "admission-answer", ["answers", "timeouts", "early_timeouts"])
    key = F.concat_ws("@", col("answer"), col("at").cast("string"))
    per = answers.groupBy(*E, "queue", "id").agg(F.countDistinct(key).alias("n"))
    emit(per.groupBy(*R).agg(F.count(F.lit(1)).alias("requests"),
                             F.sum(F.when(col("n") > 1, 1).otherwise(0)).alias("multiple")),
         "admission-answer", ["requests", "multiple"])


#: the fast plan's per-(example, queue) sums: name -> (role, expression over a per-message row)
FAST_SUMS = ("attempted", "acknowledged", "refused", "indeterminate", "accepted", "delivered", "duplicated",
             "unexpected", "refused_delivered", "recovered", "acked", "consumed", "maybe", "n_tq", "n_daa",
             "late", "multi")


def _fast_stats(spark: Any, df: Any, routes: list[dict[str, Any]]) -> Stats | None:
    """One aggregation per message (send and delivery facts together), one per (example, queue), one
    per R: the plan for big histories. None when a message is delivered on several queues or after
    its first ack (the exact plan then counts them)."""
    from pyspark.sql import functions as F

    col = F.col
    ok, invoke, info, fail = (col("type") == t for t in ("ok", "invoke", "info", "fail"))
    is_send, is_recv, is_ack = col("f") == "send", col("f") == "receive", col("f") == "ack"
    delivery = (is_recv & ok) | (is_ack & (ok | info))

    def flag(cond: Any) -> Any:
        return F.max(F.when(cond, 1).otherwise(0))

    sinv = is_send & invoke
    pm = (df.filter(col("msg").isNotNull() & (is_send | delivery)).groupBy(*E, "msg").agg(
        flag(sinv).alias("sent"), F.coalesce(F.max(F.when(sinv, col("queue"))), F.lit(NULLQ)).alias("squeue"),
        F.min(F.when(sinv, col("index"))).alias("sidx"),
        flag(is_send & ok & col("result").isin(*ACCEPTED)).alias("acked"),
        flag(is_send & ((ok & col("result").isin(*REFUSED)) | fail)).alias("refused"),
        flag(is_send & (info | (ok & col("result").isin(*DEFERRED)))).alias("info"),
        F.min(F.when(~is_send, col("queue"))).alias("dq"),
        F.max(F.when(~is_send, col("queue"))).alias("dq_max"),
        F.sum(F.when(is_recv, 1).otherwise(0)).alias("count"),
        F.max(F.when(is_recv, col("index"))).alias("last_recv"),
        F.min(F.when(is_ack & ok & ~F.coalesce(col("tx"), F.lit(False)), col("index"))).alias("first_ack"),
        flag(is_ack & ok).alias("ack_ok"), flag(is_ack & info).alias("ack_info")))
    if routes:  # one queue per target (simple routing): routed iff declared before the send
        decl = F.broadcast(spark.createDataFrame(
            [(r["run"], r["machine"], r["example"], r["target"], r["didx"]) for r in routes],
            "run string, machine string, example long, squeue string, didx long"))
        pm = pm.join(decl, on=[*E, "squeue"], how="left")
        routed = col("didx").isNull() | (col("didx") < F.coalesce(col("sidx"), F.lit(2**62)))
    else:
        routed = F.lit(True)

    def i(cond: Any) -> Any:
        return F.when(cond, 1).otherwise(0)

    zero = F.lit(0)
    sent = col("sent") == 1
    counted = col("count") > 0
    has_first = col("first_ack").isNotNull()
    send_role = {
        "attempted": i(sent), "acknowledged": i(sent & (col("acked") == 1)),
        "refused": i(sent & (col("refused") == 1)), "indeterminate": i(sent & (col("info") == 1)),
        "accepted": i((col("acked") == 1) & routed), "n_tq": i(sent)}
    dlv_role = {
        "delivered": col("count"), "duplicated": F.when(counted, col("count") - 1).otherwise(0),
        "unexpected": F.when(counted & ~sent, col("count")).otherwise(0),
        "refused_delivered": F.when(counted & (col("refused") == 1), col("count")).otherwise(0),
        "recovered": i(counted & (col("info") == 1)), "acked": i(has_first), "consumed": col("ack_ok"),
        "maybe": i((col("ack_info") == 1) & (col("ack_ok") == 0)), "n_tq": i(counted),
        "n_daa": i(counted | has_first),
        "late": i(F.coalesce(col("last_recv") > col("first_ack"), F.lit(False))),
        "multi": i(col("dq") != col("dq_max"))}

    def role(queue: Any, present: Any, values: dict[str, Any]) -> Any:
        return F.struct(queue.alias("q"), present.alias("present"),
                        *[values.get(n, zero).cast("long").alias(n) for n in FAST_SUMS])

    roles = F.array(role(col("squeue"), (col("sent") == 1) | (col("acked") == 1), send_role),
                    role(col("dq"), col("dq").isNotNull(), dlv_role))
    per_g = (pm.select(*E, F.explode(roles).alias("x")).filter(col("x.present"))
             .groupBy(*E, col("x.q").alias("queue")).agg(*[F.sum(f"x.{n}").alias(n) for n in FAST_SUMS]))
    counters = df.filter(col("f") == "counters")
    final = counters.groupBy(*E, "queue").agg(
        F.max_by(F.struct("c_message", "c_replaced", "c_killed"), col("index")).alias("last"))
    g = per_g.join(final, on=[*E, "queue"], how="left").select(
        "*", col("last.c_message").alias("m"), col("last.c_replaced").alias("r"),
        col("last.c_killed").alias("k"))
    has_acc = col("accepted") > 0
    known = col("m").isNotNull() & col("r").isNotNull() & col("k").isNotNull()
    ok_known = has_acc & known
    lost = F.greatest(zero, col("accepted") - col("consumed") - col("maybe") - col("m") - col("r") - col("k"))

    def when(cond: Any, value: Any) -> Any:
        return F.sum(F.when(cond, value).otherwise(0))

    per_r = g.groupBy(*R).agg(
        *[F.sum(n).alias(n) for n in FAST_SUMS],
        when(has_acc, 1).alias("examples"), when(has_acc & ~known, 1).alias("unknown_examples"),
        when(ok_known, col("accepted")).alias("l_acknowledged"),
        when(ok_known, col("consumed")).alias("l_consumed"),
        when(ok_known, col("maybe")).alias("possibly_consumed"), when(ok_known, col("m")).alias("in_queue"),
        when(ok_known, col("r")).alias("replaced"), when(ok_known, col("k")).alias("killed"),
        when(ok_known, lost).alias("lost"))
    names = [*FAST_SUMS, "examples", "unknown_examples", "l_acknowledged", "l_consumed", "possibly_consumed",
             "in_queue", "replaced", "killed", "lost"]
    frames = [_long(per_r, "_fast", names), _counter_frame(df, counters)]
    throttle_answers(df, lambda frame, check, n: frames.append(_long(frame, check, n)))
    sequence_checks(df, lambda frame, check, n: frames.append(_long(frame, check, n)))
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    stats: Stats = {}
    fast: dict[tuple[str, str, str | None], dict[str, int]] = {}
    for row in union.collect():
        if row["check"] == "_fast":
            key = (row["run"], row["machine"], None if row["queue"] in (None, NULLQ) else row["queue"])
            fast.setdefault(key, {})[row["name"]] = int(row["value"] or 0)
        else:
            cp._add(stats, row["run"], row["machine"], row["queue"], row["check"],
                    {row["name"]: row["value"]})
    if any(v["late"] or v["multi"] for v in fast.values()):
        return None
    for (run, machine, queue), v in fast.items():
        if v["n_tq"]:
            cp._add(stats, run, machine, queue, "total-queue", {n: v[n] for n in cp.STATS["total-queue"]})
        if v["n_daa"]:
            cp._add(stats, run, machine, queue, "delivery-after-ack", {"acked": v["acked"],
                                                                       "delivered_after_ack": 0})
        if v["examples"]:
            cp._add(stats, run, machine, queue, "lost", {
                "examples": v["examples"], "unknown_examples": v["unknown_examples"],
                "acknowledged": v["l_acknowledged"], "consumed": v["l_consumed"],
                **{n: v[n] for n in ("possibly_consumed", "in_queue", "replaced", "killed", "lost")}})
    return stats
