"""History checks on Spark: the checks of :mod:`.python_engine` as DataFrame expressions.

Reads the Parquet store (:mod:`..read.store`; Parquet column pruning: only the columns a check reads) and
computes the same statistics per (run, machine, queue, check) with group-bys and key joins, no Python
UDF. Two plans give the same statistics (tests compare them with the python engine):

- the fast plan (big histories, :mod:`.spark_fast`): ONE hash aggregation per (example, message) over
  send, receive and ack rows together (a bit per row kind, indices, queue and consumer codes: fixed-width
  buffers, so Spark hashes rather than sorts), the order check's window per consumer, then per (example,
  queue) joined with the counters (last observation, counter identity, ring bound: one aggregation) and
  per (run, machine, queue). Used when routing is one queue per target, without filters or drains; it
  gives up (returns to the exact plan) when a message is sent to or delivered on several queues,
  acknowledged without a send or delivered after its first ack, or when two queue or consumer names share
  a code;
- the exact plan: per-message and per-delivery aggregations joined (any routing, drains, fan-out).

Each plan is one lazy union collected once; the other jobs collect the queue declarations and drain
records (a few per example), whose routing is resolved by the checks' definitions (:mod:`.definitions`),
and (fast plan) the distinct queue and consumer names, whose codes must be distinct.
Rule ids (DELIVERY-1, DELIVERY-2, DELIVERY-4, DELIVERY-6, DELIVERY-7, DELIVERY-15, RING-17, THROTTLE-7,
ADMISSION-3, ADMISSION-7, REDELIVERY-1/2/12/19/22) and verdicts are those of :mod:`.definitions`; what
both plans share: :mod:`.spark_frames`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.reports.checks.definitions import (
    ACCEPTED,
    DEFERRED,
    NULLQ,
    REFUSED,
    STATS,
    E,
    R,
    Stats,
    drained_keys,
    json_rows,
    routing_table,
    shared_listing,
)
from mqconform.reports.checks.spark_fast import fast_stats
from mqconform.reports.checks.spark_frames import (
    COUNTER_SUMS,
    add_counters,
    collect,
    deleted_by_id,
    local_frame,
    long_form,
    queue_counters,
    throttle_answers,
)
from mqconform.reports.checks.spark_order import FRAMES


def load(spark: Any, store: Path) -> Any:
    """The store's rows as a DataFrame (partition columns adapter and run_date included), read with the
    store's declared schema (no inference; a column that an older file lacks reads as nulls)."""
    return (spark.read.schema(store_schema()).option("basePath", str(store / "history"))
            .parquet(str(store / "history" / "adapter=*" / "run_date=*")))


def store_schema() -> Any:
    """The Spark schema of the store's columns (:data:`..read.store.COLUMNS`, partition columns as
    strings)."""
    from pyspark.sql import types as T

    from mqconform.reports.read import store

    kinds = {"string": T.StringType(), "int64": T.LongType(), "bool": T.BooleanType()}
    columns = {**store.COLUMNS, **{name: "string" for name in store.PARTITIONS if name not in store.COLUMNS}}
    return T.StructType([T.StructField(name, kinds[kind]) for name, kind in columns.items()])


def _small(df: Any) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[tuple[dict[str, Any],
                                                                                      dict[str, Any]]]]:
    """Queue declarations and drain records (one or a few per example) with parsed values: one job."""
    from pyspark.sql import functions as F

    col = F.col
    decl = (col("f") == "queue") & (col("type") == "invoke")
    drain = (col("f") == "drain") & (col("type") == "ok")
    rows = [r.asDict() for r in df.filter(decl | drain).select(*E, "index", "queue", "f", "profile", "value")
            .collect()]
    return (json_rows(_Rows([r for r in rows if r["f"] == "queue"])),
            json_rows(_Rows([r for r in rows if r["f"] == "drain"])))


class _Rows:
    """The to_pylist() face of a list of dicts (so json_rows reads collected rows)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def to_pylist(self) -> list[dict[str, Any]]:
        return self.rows


def compute_stats(spark: Any, store: Path, exact: bool = False) -> Stats:
    """Statistics of every check over the store at `store` (see python_engine for definitions).

    The fast plan (:func:`fast_stats`: one shuffle per message, one per example) serves histories whose
    routing is one queue per target without filters, without drains; it falls back to the exact plan
    (:func:`exact_stats`) on the messages it cannot count (see the module docstring). Both give the same
    statistics (tests compare them); `exact` forces the exact plan.
    """
    from pyspark.sql import functions as F

    df = load(spark, store).withColumn("queue", F.coalesce(F.col("queue"), F.lit(NULLQ)))
    decl_rows, drain_rows = _small(df)
    routes = routing_table(decl_rows)
    shared = shared_listing(decl_rows)  # DELIVERY-12: the exact plan leaves them out
    simple = not drained_keys(drain_rows) and all(r["target"] == r["dq"] and not r["filt"] for r in routes)
    if not exact and simple and not shared:
        stats = fast_stats(spark, df, routes)
        if stats is not None:
            return stats
    return exact_stats(spark, df, decl_rows, drain_rows)


def _shared_frame(spark: Any, df: Any, decl_rows: list[Any]) -> Any:
    """(E, queue) of the non-destructive and last-value queues (shared_listing), a small frame with
    df's column types, or None when there are none."""
    keys = sorted(shared_listing(decl_rows))
    if not keys:
        return None
    from pyspark.sql.types import StructField, StructType

    schema = StructType([StructField(name, df.schema[name].dataType) for name in (*E, "queue")])
    return spark.createDataFrame(keys, schema)


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
    # an ack the implementation answered `failed` (an invalid ack, DELIVERY-8/22) acknowledged nothing
    acked = is_ack & ok & ~F.coalesce(col("result").isin(*REFUSED), F.lit(False))
    deleted = deleted_by_id()
    dlv = (df.filter(((is_recv & ok) | (is_ack & (ok | info)) | deleted) & col("msg").isNotNull())
           .groupBy(*E, "queue", "msg").agg(
               F.sum(F.when(is_recv, 1).otherwise(0)).alias("count"),
               F.max(F.when(is_recv, col("index"))).alias("last_recv"),
               F.min(F.when(acked & ~F.coalesce(col("tx"), F.lit(False)), col("index")))
               .alias("first_ack"),
               flag(acked | deleted).alias("ack_ok"), flag(is_ack & info).alias("ack_info")))
    frames: list[Any] = []

    def emit(frame: Any, check: str, names: list[str]) -> None:
        frames.append(long_form(frame, check, names))

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
    shared = _shared_frame(spark, df, decl_rows)
    if shared is not None:  # DELIVERY-12: a delivered message stays listed on these queues
        cand = cand.join(F.broadcast(shared), on=[*E, "queue"], how="left_anti")
    if cand.limit(1).count():  # a delivery after the first ack exists: count them exactly
        late = (df.filter(is_recv & ok & col("msg").isNotNull()).select(*E, "queue", "msg", "index")
                .join(F.broadcast(cand), on=[*E, "queue", "msg"], how="inner")
                .filter(col("index") > col("first_ack")))
        emit(late.groupBy(*R).agg(F.count(F.lit(1)).alias("delivered_after_ack")), "delivery-after-ack",
             ["delivered_after_ack"])

    per_q = queue_counters(df, shared)
    _lost(spark, decl_rows, drain_rows, msgs, dlv, per_q, emit)
    frames.append(long_form(per_q.groupBy(*R).agg(*[F.sum(n).alias(n) for n in COUNTER_SUMS]), "_counters",
                        list(COUNTER_SUMS)))

    throttle_answers(df, emit)
    sequence_checks(df, emit, shared)
    try:
        stats, own = collect(frames)
    finally:
        joined.unpersist()
        msgs.unpersist()
    for key, v in own.get("_counters", {}).items():
        add_counters(stats, key, v)
    return stats


def sequence_checks(df: Any, emit: Any, shared: Any = None) -> None:
    """Per-consumer order (DELIVERY-4) and delivery-count monotonicity (REDELIVERY-1, REDELIVERY-2,
    REDELIVERY-12, REDELIVERY-19, REDELIVERY-22): window expressions, :mod:`.spark_order`. The
    delivery counts of the `shared` queues (non-destructive, last-value) are left out: each consumer's
    delivery of a listed message is a copy with its own count (DELIVERY-12, LASTVALUE-8)."""
    from pyspark.sql import functions as F

    for check, (frame, names) in FRAMES.items():
        rows = df
        if check == "delivery-count" and shared is not None:
            rows = df.join(F.broadcast(shared), on=[*E, "queue"], how="left_anti")
        emit(frame(rows), check, list(names))


def _lost(spark: Any, decl_rows: list[Any], drain_rows: list[Any], msgs: Any, dlv: Any, per_q: Any,
          emit: Any) -> None:
    """The ``lost`` check (routing, drain, indeterminate acks) as in :func:`checks_python.lost_example`."""
    from pyspark.sql import functions as F

    col = F.col
    routes = routing_table(decl_rows)
    drained = sorted(drained_keys(drain_rows))
    acc = msgs.filter(col("acked") == 1).select(*E, "msg", col("squeue").alias("target"), "sidx")
    if routes:
        decl = F.broadcast(local_frame(
            spark, [(r["run"], r["machine"], r["example"], r["target"], r["dq"], r["didx"], r["filt"])
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
    g = (per_g.join(consumed, on=[*E, "queue"], how="left")
         .join(per_q.select(*E, "queue", "m", "r", "k", "x", "reset"), on=[*E, "queue"], how="left")
         .select(*E, "queue", "accepted", "filt", F.coalesce(col("consumed"), F.lit(0)).alias("done"),
                 F.coalesce(col("maybe"), F.lit(0)).alias("maybe"), "m", "r", "k", "x", "reset"))
    if drained:
        marks = F.broadcast(local_frame(spark, [(*key, 1) for key in drained],
                                   "run string, machine string, example long, queue string, drained int"))
        seen = (dest.join(marks.select(*E, "queue"), on=[*E, "queue"], how="left_semi")
                .join(dlv.filter((col("count") > 0) | (col("ack_ok") == 1)).select(*E, "queue", "msg"),
                      on=[*E, "queue", "msg"],
                      how="left_semi").groupBy(*E, "queue").agg(F.count(F.lit(1)).alias("seen")))
        g = (g.join(marks, on=[*E, "queue"], how="left").join(seen, on=[*E, "queue"], how="left")
             .withColumn("drained", F.coalesce(col("drained"), F.lit(0)))
             .withColumn("seen", F.coalesce(col("seen"), F.lit(0))))
    else:
        g = g.withColumn("drained", F.lit(0)).withColumn("seen", F.lit(0))
    filtered = col("filt") == 1
    is_drained = col("drained") == 1
    gone = col("r") + col("k") + F.coalesce(col("x"), F.lit(0))
    lost = F.when(is_drained, F.greatest(F.lit(0), col("accepted") - col("seen") - gone)) \
        .otherwise(F.greatest(F.lit(0), col("accepted") - col("done") - col("maybe") - col("m") - gone))
    unknown = ~filtered & (col("r").isNull() | col("k").isNull() | (col("m").isNull() & ~is_drained)
                           # no expired counter, or counters zeroed by a restart: they may account for it
                           | ((lost > 0) & (col("x").isNull() | (F.coalesce(col("reset"), F.lit(0)) == 1))))
    counted = ~filtered & ~unknown

    def when(cond: Any, value: Any) -> Any:
        return F.when(cond, value).otherwise(F.lit(0))

    names = list(STATS["lost"])
    per = g.select(
        *E, "queue", F.lit(1).alias("examples"), when(unknown, 1).alias("unknown_examples"),
        when(filtered, 1).alias("not_applicable_examples"),
        when(counted & is_drained, 1).alias("drained_examples"),
        when(counted, col("accepted")).alias("acknowledged"),
        when(counted, F.when(is_drained, col("seen")).otherwise(col("done"))).alias("consumed"),
        when(counted & ~is_drained, col("maybe")).alias("possibly_consumed"),
        when(counted, F.coalesce(col("m"), F.lit(0))).alias("in_queue"),
        when(counted, col("r")).alias("replaced"),
        when(counted, col("k")).alias("killed"),
        when(counted, F.coalesce(col("x"), F.lit(0))).alias("expired"),
        when(counted, lost).alias("lost"))
    emit(per.groupBy(*R).agg(*[F.sum(n).alias(n) for n in names]), "lost", names)
