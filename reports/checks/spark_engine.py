"""History checks on Spark: the checks of :mod:`.python_engine` as DataFrame expressions.

Reads the Parquet store (:mod:`..read.store`; Parquet column pruning: only the columns a check reads) and
computes the same statistics per (run, machine, queue, check) with group-bys and key joins, no Python
UDF. Two plans give the same statistics (tests compare them with the python engine):

- the fast plan (big histories): ONE hash aggregation per (example, message) over send, receive and ack
  rows together (a bit per row kind, indices, queue and consumer codes: fixed-width buffers, so Spark
  hashes rather than sorts), the order check's window per consumer, then per (example, queue) joined
  with the counters (last observation, counter identity, ring bound: one aggregation) and per (run,
  machine, queue). Used when routing is one queue per target, without filters or drains; it gives up
  (returns to the exact plan) when a message is sent to or delivered on several queues, acknowledged
  without a send or delivered after its first ack, or when two queue or consumer names share a code;
- the exact plan: per-message and per-delivery aggregations joined (any routing, drains, fan-out).

Each plan is one lazy union collected once; the other jobs collect the queue declarations and drain
records (a few per example), whose routing is resolved by the python engine's own functions, and (fast
plan) the distinct queue and consumer names, whose codes must be distinct.
Rule ids (DELIVERY-1, DELIVERY-2, DELIVERY-4, DELIVERY-6, DELIVERY-7, DELIVERY-15, RING-17, THROTTLE-7,
ADMISSION-3, ADMISSION-7, REDELIVERY-1/2/12/19/22) and verdicts are those of :mod:`.python_engine`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.reports.checks import python_engine as cp
from mqconform.reports.checks.python_engine import ACCEPTED, DEFERRED, NULLQ, REFUSED, TIMEOUT, Stats
from mqconform.reports.checks.spark_order import FRAMES, NEMESIS, RETURNS, out_of_order

E = cp.E
R = cp.R


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


def _local(spark: Any, rows: list[tuple[Any, ...]], schema: str) -> Any:
    """A small DataFrame of driver-side `rows` (`schema`: "name type, ..." with types string, long, int),
    built on the JVM from Arrow: ``createDataFrame`` of a Python list starts Python workers to read it."""
    import pyarrow as pa

    kinds = {"string": pa.string(), "long": pa.int64(), "int": pa.int32()}
    fields = [field.split() for field in schema.split(",")]
    return spark.createDataFrame(pa.table({name: pa.array([row[i] for row in rows], kinds[kind])
                                           for i, (name, kind) in enumerate(fields)}))


def compute_stats(spark: Any, store: Path, exact: bool = False) -> Stats:
    """Statistics of every check over the store at `store` (see python_engine for definitions).

    The fast plan (:func:`_fast_stats`: one shuffle per message, one per example) serves histories whose
    routing is one queue per target without filters, without drains; it falls back to the exact plan
    (:func:`exact_stats`) on the messages it cannot count (see the module docstring). Both give the same
    statistics (tests compare them); `exact` forces the exact plan.
    """
    from pyspark.sql import functions as F

    df = load(spark, store).withColumn("queue", F.coalesce(F.col("queue"), F.lit(NULLQ)))
    decl_rows, drain_rows = _small(df)
    routes = cp.routing_table(decl_rows)
    shared = cp.shared_listing(decl_rows)  # DELIVERY-12: the exact plan leaves them out
    simple = not cp.drained_keys(drain_rows) and all(r["target"] == r["dq"] and not r["filt"] for r in routes)
    if not exact and simple and not shared:
        stats = _fast_stats(spark, df, routes)
        if stats is not None:
            return stats
    return exact_stats(spark, df, decl_rows, drain_rows)


def _shared_frame(spark: Any, df: Any, decl_rows: list[Any]) -> Any:
    """(E, queue) of the non-destructive and last-value queues (cp.shared_listing), a small frame with
    df's column types, or None when there are none."""
    keys = sorted(cp.shared_listing(decl_rows))
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
    deleted = _deleted()
    dlv = (df.filter(((is_recv & ok) | (is_ack & (ok | info)) | deleted) & col("msg").isNotNull())
           .groupBy(*E, "queue", "msg").agg(
               F.sum(F.when(is_recv, 1).otherwise(0)).alias("count"),
               F.max(F.when(is_recv, col("index"))).alias("last_recv"),
               F.min(F.when(acked & ~F.coalesce(col("tx"), F.lit(False)), col("index")))
               .alias("first_ack"),
               flag(acked | deleted).alias("ack_ok"), flag(is_ack & info).alias("ack_info")))
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
    shared = _shared_frame(spark, df, decl_rows)
    if shared is not None:  # DELIVERY-12: a delivered message stays listed on these queues
        cand = cand.join(F.broadcast(shared), on=[*E, "queue"], how="left_anti")
    if cand.limit(1).count():  # a delivery after the first ack exists: count them exactly
        late = (df.filter(is_recv & ok & col("msg").isNotNull()).select(*E, "queue", "msg", "index")
                .join(F.broadcast(cand), on=[*E, "queue", "msg"], how="inner")
                .filter(col("index") > col("first_ack")))
        emit(late.groupBy(*R).agg(F.count(F.lit(1)).alias("delivered_after_ack")), "delivery-after-ack",
             ["delivered_after_ack"])

    per_q = _queue_counters(df, shared)
    _lost(spark, decl_rows, drain_rows, msgs, dlv, per_q, emit)
    frames.append(_long(per_q.groupBy(*R).agg(*[F.sum(n).alias(n) for n in COUNTER_SUMS]), "_counters",
                        list(COUNTER_SUMS)))

    throttle_answers(df, emit)
    sequence_checks(df, emit)
    try:
        stats, own = _collect(frames)
    finally:
        joined.unpersist()
        msgs.unpersist()
    for key, v in own.get("_counters", {}).items():
        _add_counters(stats, key, v)
    return stats


def _queue_counters(df: Any, shared: Any = None) -> Any:
    """Per (example, queue), from its ``counters`` observations: the last one's message_count, replaced,
    killed and expired (``m``, ``r``, ``k``, ``x``: the lost check, DELIVERY-2, DELIVERY-15) and the counts
    of counter identity
    (DELIVERY-1) and ring bound (RING-17). One aggregation, fixed-width buffers (a hash aggregation).
    `shared`: the (E, queue) frame of non-destructive and last-value queues, whose observations are
    counted but not checked for the identity (DELIVERY-12)."""
    from pyspark.sql import functions as F

    col = F.col
    complete = F.lit(True)
    for part in ("c_message", "c_pending", "c_delivering", "c_scheduled", "c_paged"):
        complete = complete & col(part).isNotNull()
    counted = df.filter(col("f") == "counters")
    if shared is not None:
        counted = counted.join(F.broadcast(shared.withColumn("_shared", F.lit(True))), on=[*E, "queue"],
                               how="left")
        complete = complete & ~F.coalesce(col("_shared"), F.lit(False))
    total = col("c_pending") + col("c_delivering") + col("c_scheduled") + col("c_paged")
    exempt_from = (df.filter(col("f").isin("nack", "set_ring_size") & (col("type") == "ok"))
                   .groupBy(*E, "queue").agg(F.min("index").alias("exempt_from")))
    in_ring = F.coalesce((col("bound") >= 0) & col("c_pending").isNotNull(), F.lit(False))
    exempt = in_ring & F.coalesce(col("index") > col("exempt_from"), F.lit(False))
    checked = in_ring & ~exempt
    return (counted.join(F.broadcast(exempt_from), on=[*E, "queue"], how="left")
            .groupBy(*E, "queue").agg(
                *[F.max_by(part, "index").alias(name)
                  for name, part in (("m", "c_message"), ("r", "c_replaced"), ("k", "c_killed"),
                                     ("x", "c_expired"))],
                F.count(F.lit(1)).alias("observations"), F.count_if(complete).alias("checked"),
                F.count_if(complete & (col("c_message") != total)).alias("broken"),
                F.count_if(in_ring).alias("ring_observations"), F.count_if(exempt).alias("exempt"),
                F.count_if(checked).alias("ring_checked"),
                F.count_if(checked & (col("c_pending") > col("bound"))).alias("over_bound")))


def _add_counters(stats: Stats, key: tuple[str, str, str | None], v: dict[str, int]) -> None:
    """Counter identity (DELIVERY-1) and ring bound (RING-17) of one R from its :data:`COUNTER_SUMS`, each
    only where the queue has such observations (ring bound: observations of a ring)."""
    if v.get("observations"):
        cp._add(stats, *key, "counter-identity", {n: v[n] for n in ("observations", "checked", "broken")})
    if v.get("ring_observations"):
        cp._add(stats, *key, "ring-bound", {"observations": v["ring_observations"], "exempt": v["exempt"],
                                            "checked": v["ring_checked"], "over_bound": v["over_bound"]})


def _collect(frames: list[Any]) -> tuple[Stats, dict[str, dict[tuple[str, str, str | None], dict[str, int]]]]:
    """Collect a plan's long-form frames as one union: the checks' statistics, and the plan's own per-R
    figures (pseudo-checks named ``_...``) for the caller to turn into statistics."""
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    stats: Stats = {}
    own: dict[str, dict[tuple[str, str, str | None], dict[str, int]]] = {}
    for row in union.collect():
        if row["check"].startswith("_"):
            key = (row["run"], row["machine"], None if row["queue"] in (None, NULLQ) else row["queue"])
            own.setdefault(row["check"], {}).setdefault(key, {})[row["name"]] = int(row["value"] or 0)
        else:
            cp._add(stats, row["run"], row["machine"], row["queue"], row["check"],
                    {row["name"]: row["value"]})
    return stats, own


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
    REDELIVERY-12, REDELIVERY-19, REDELIVERY-22): window expressions, :mod:`.spark_order`."""
    for check, (frame, names) in FRAMES.items():
        emit(frame(df), check, list(names))


def _lost(spark: Any, decl_rows: list[Any], drain_rows: list[Any], msgs: Any, dlv: Any, per_q: Any,
          emit: Any) -> None:
    """The ``lost`` check (routing, drain, indeterminate acks) as in :func:`checks_python.lost_example`."""
    from pyspark.sql import functions as F

    col = F.col
    routes = cp.routing_table(decl_rows)
    drained = sorted(cp.drained_keys(drain_rows))
    acc = msgs.filter(col("acked") == 1).select(*E, "msg", col("squeue").alias("target"), "sidx")
    if routes:
        decl = F.broadcast(_local(
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
         .join(per_q.select(*E, "queue", "m", "r", "k", "x"), on=[*E, "queue"], how="left")
         .select(*E, "queue", "accepted", "filt", F.coalesce(col("consumed"), F.lit(0)).alias("done"),
                 F.coalesce(col("maybe"), F.lit(0)).alias("maybe"), "m", "r", "k", "x"))
    if drained:
        marks = F.broadcast(_local(spark, [(*key, 1) for key in drained],
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
                           | ((lost > 0) & col("x").isNull()))  # expiry may account for what is missing
    counted = ~filtered & ~unknown

    def when(cond: Any, value: Any) -> Any:
        return F.when(cond, value).otherwise(F.lit(0))

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
        when(counted, col("k")).alias("killed"),
        when(counted, F.coalesce(col("x"), F.lit(0))).alias("expired"),
        when(counted, lost).alias("lost"))
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


#: the fast plan's per-(example, queue) sums (see :func:`_fast_sums`; ``consumers`` counts the consumers
#: with first deliveries); ``late`` and ``odd`` count the messages it leaves to the exact plan
FAST_SUMS = ("attempted", "acknowledged", "refused", "indeterminate", "accepted", "delivered", "duplicated",
             "unexpected", "refused_delivered", "recovered", "acked", "consumed", "maybe", "n_tq", "n_daa",
             "first_deliveries", "consumers", "out_of_order", "late", "odd")
#: the lost check's sums over the examples in the fast plan (``l_``: named as the exact plan's)
LOST_SUMS = ("examples", "unknown_examples", "l_acknowledged", "l_consumed", "possibly_consumed", "in_queue",
             "replaced", "killed", "expired", "lost")
#: the counts of :func:`_queue_counters` (counter identity, ring bound)
COUNTER_SUMS = ("observations", "checked", "broken", "ring_observations", "exempt", "ring_checked",
                "over_bound")
#: row kinds of the fast plan's message rows, one bit each (the per-message ``kinds`` is their bit_or)
K_SEND, K_SEND_SCHED, K_ACCEPTED, K_REFUSED, K_INFO, K_RECV, K_ACK, K_ACK_TX, K_ACK_INFO, K_DELETED = (
    1 << i for i in range(10))
#: per-message flags above the row kinds in ``sig`` (:func:`_signed`): sent, delivered, acknowledged outside
#: a transaction, delivered after that ack, on several queues, ordered (order check), out of order, routed
FLAGS = F_SENT, F_COUNTED, F_FIRST_ACK, F_LATE, F_QUEUES, F_ELIGIBLE, F_OOO, F_ROUTED = (
    1 << i for i in range(10, 18))


def _deleted() -> Any:
    """A delete by id answered true (DELIVERY-31): it took the message out of its queue as an ack does
    (both plans count it consumed)."""
    from pyspark.sql import functions as F

    return (F.col("f") == "delete") & (F.col("type") == "ok") & (F.col("result") == "deleted")


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
    deleted = _deleted()
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


def _fast_stats(spark: Any, df: Any, routes: list[dict[str, Any]]) -> Stats | None:
    """The plan for big histories: one hash aggregation per message (:func:`_per_message`), one sort per
    example and queue (the order check's window), one aggregation per (example, queue, consumer, sig), one
    per (example, queue) joined with its counters, one per R. None when a message is sent to or delivered
    on several queues, acknowledged without a send, or delivered after its first ack (the exact plan then
    counts them), or when two names share a code (:func:`_names`)."""
    names = _names(df)
    if names is None:
        return None
    frames = [_long(_fast_per_r(_fast_per_g(spark, df, routes), _queue_counters(df)), "_fast",
                    [*FAST_SUMS, *COUNTER_SUMS, *LOST_SUMS])]

    def emit(frame: Any, check: str, n: list[str]) -> None:
        frames.append(_long(frame, check, n))

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
        decl = _local(spark, [(r["run"], r["machine"], r["example"], r["target"], r["didx"]) for r in routes],
                      "run string, machine string, example long, target string, didx long")
        pm = pm.join(F.broadcast(decl.select(*E, _code("target").alias("qc"), "didx")), on=g, how="left")
        routed = col("didx").isNull() | (col("didx") < F.coalesce(col("sidx"), F.lit(2**62)))
    else:
        routed = F.lit(True)
    cuts_g, cuts_e = _order_cuts(df)
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
    # without an expired counter, expiry may account for what is missing (checks_python.lost_example)
    known = (col("m").isNotNull() & col("r").isNotNull() & col("k").isNotNull()
             & ((lost == 0) | col("x").isNotNull()))
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


def _order_cuts(df: Any) -> tuple[Any, Any]:
    """The order check's return events (DELIVERY-4): per (example, queue) the first consumer close or
    rollback (``cut``), per example the first broker stop or start (``cut2``)."""
    from pyspark.sql import functions as F

    col = F.col
    return (df.filter(col("f").isin(*RETURNS)).groupBy(*E, "queue").agg(F.min("index").alias("cut")),
            df.filter(col("f").isin(*NEMESIS)).groupBy(*E).agg(F.min("index").alias("cut2")))


def _fast_collect(frames: list[Any], names: dict[int, str]) -> Stats | None:
    """Collect the fast plan's union once (its queue codes decoded by `names`); None when a message needs
    the exact plan."""
    stats, own = _collect(frames)
    fast = own.get("_fast", {})
    if any(v["late"] or v["odd"] for v in fast.values()):
        return None
    for (run, machine, code), v in fast.items():
        queue = names[int(code)] if code is not None else NULLQ
        key = (run, machine, None if queue == NULLQ else queue)
        _add_counters(stats, key, v)
        if v["n_tq"]:
            cp._add(stats, *key, "total-queue", {n: v[n] for n in cp.STATS["total-queue"]})
        if v["n_daa"]:
            cp._add(stats, *key, "delivery-after-ack", {"acked": v["acked"], "delivered_after_ack": 0})
        if v["first_deliveries"]:
            cp._add(stats, *key, "order", {n: v[n] for n in cp.STATS["order"]})
        if v["examples"]:
            cp._add(stats, *key, "lost", {
                "examples": v["examples"], "unknown_examples": v["unknown_examples"],
                "acknowledged": v["l_acknowledged"], "consumed": v["l_consumed"],
                **{n: v[n] for n in ("possibly_consumed", "in_queue", "replaced", "killed", "expired",
                                     "lost")}})
    return stats
