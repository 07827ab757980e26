"""History checks on Spark: the checks of :mod:`.checks_python` as DataFrame expressions.

Reads the Parquet store (:mod:`.store`) and computes the same statistics per (run, machine, queue,
check) with group-bys and key joins only (no Python UDF; the one per-message list, the delivery
indices of (example, queue, msg), is filtered with a SQL higher-order function). Definitions, rule
ids (DELIVERY-1, DELIVERY-2, DELIVERY-6, DELIVERY-7, DELIVERY-15, RING-17, THROTTLE-7) and verdicts
are those of :mod:`.checks_python`; only the statistics are computed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.reports.checks_python import ACCEPTED, DEFERRED, REFUSED, Stats

#: stands for a null queue so that joins on the queue match nulls like the python engine's dicts
NULLQ = "\u0000"


def load(spark: Any, store: Path) -> Any:
    """The store's rows as a DataFrame (partition columns adapter and run_date included)."""
    return spark.read.option("basePath", str(store / "history")).parquet(
        str(store / "history" / "adapter=*" / "run_date=*"))


def compute_stats(spark: Any, store: Path) -> Stats:
    """Statistics of every check over the store at `store` (see checks_python for definitions)."""
    from pyspark.sql import functions as F

    df = load(spark, store).withColumn("queue", F.coalesce(F.col("queue"), F.lit(NULLQ)))
    E = ["run", "machine", "example"]
    R = ["run", "machine", "queue"]
    ok = F.col("type") == "ok"
    invoke = F.col("type") == "invoke"

    def flag(cond: Any) -> Any:
        return F.max(F.when(cond, 1).otherwise(0))

    msgs = (df.filter((F.col("f") == "send") & F.col("msg").isNotNull())
            .groupBy(*E, "msg").agg(
                flag(invoke).alias("sent"),
                F.coalesce(F.max(F.when(invoke, F.col("queue"))), F.lit(NULLQ)).alias("squeue"),
                flag(ok & F.col("result").isin(*ACCEPTED)).alias("acked"),
                flag((ok & F.col("result").isin(*REFUSED)) | (F.col("type") == "fail")).alias("refused"),
                flag((F.col("type") == "info") | (ok & F.col("result").isin(*DEFERRED))).alias("info"))
            .cache())
    is_ack = F.col("f") == "ack"
    dlv = (df.filter(F.col("f").isin("receive", "ack") & ok & F.col("msg").isNotNull())
           .groupBy(*E, "queue", "msg").agg(
               F.sum(F.when(F.col("f") == "receive", 1).otherwise(0)).alias("count"),
               F.min(F.when(is_ack & ~F.coalesce(F.col("tx"), F.lit(False)), F.col("index")))
               .alias("first_ack"),
               flag(is_ack).alias("acked_any"),
               F.collect_list(F.when(F.col("f") == "receive", F.col("index"))).alias("indices"))
           .cache())
    frames: list[Any] = []

    def collect(frame: Any, check: str, names: list[str]) -> None:
        """Queue `frame`'s statistics in long form (one collect for all checks at the end)."""
        pairs = F.array(*[F.struct(F.lit(n).alias("name"), F.col(n).cast("long").alias("value"))
                          for n in names])
        frames.append(frame.select(*R, F.lit(check).alias("check"), F.explode(pairs).alias("s"))
                      .select(*R, "check", "s.name", "s.value"))

    sent = msgs.filter(F.col("sent") == 1).withColumnRenamed("squeue", "queue")
    collect(sent.groupBy(*R).agg(F.count(F.lit(1)).alias("attempted"), F.sum("acked").alias("acknowledged"),
                                 F.sum("refused").alias("refused"), F.sum("info").alias("indeterminate")),
            "total-queue", ["attempted", "acknowledged", "refused", "indeterminate"])

    joined = dlv.join(msgs.drop("squeue"), on=[*E, "msg"], how="left")
    delivered = joined.filter(F.col("count") > 0)
    collect(delivered.groupBy(*R).agg(
        F.sum("count").alias("delivered"), F.sum(F.col("count") - 1).alias("duplicated"),
        F.sum(F.when(F.coalesce(F.col("sent"), F.lit(0)) == 0, F.col("count")).otherwise(0))
        .alias("unexpected"),
        F.sum(F.when(F.col("refused") == 1, F.col("count")).otherwise(0)).alias("refused_delivered"),
        F.sum(F.when(F.col("info") == 1, 1).otherwise(0)).alias("recovered")),
        "total-queue", ["delivered", "duplicated", "unexpected", "refused_delivered", "recovered"])

    after = F.size(F.filter(F.col("indices"), lambda i: i > F.col("first_ack")))
    collect(dlv.filter((F.col("count") > 0) | F.col("first_ack").isNotNull()).groupBy(*R).agg(
        F.sum(F.when(F.col("first_ack").isNotNull(), 1).otherwise(0)).alias("acked"),
        F.sum(F.when(F.col("first_ack").isNotNull(), after).otherwise(0)).alias("delivered_after_ack")),
        "delivery-after-ack", ["acked", "delivered_after_ack"])

    counters = df.filter(F.col("f") == "counters")
    accepted = (msgs.filter(F.col("acked") == 1).groupBy(*E, F.col("squeue").alias("queue"))
                .agg(F.count(F.lit(1)).alias("accepted")))
    consumed = (dlv.filter(F.col("acked_any") == 1).groupBy(*E, "queue")
                .agg(F.count(F.lit(1)).alias("consumed")))
    final = counters.groupBy(*E, "queue").agg(
        F.max_by(F.struct("c_message", "c_replaced", "c_killed"), F.col("index")).alias("last"))
    lost = (accepted.join(final, on=[*E, "queue"], how="left").join(consumed, on=[*E, "queue"], how="left")
            .select(*E, "queue", "accepted", F.coalesce(F.col("consumed"), F.lit(0)).alias("consumed"),
                    F.col("last.c_message").alias("m"), F.col("last.c_replaced").alias("r"),
                    F.col("last.c_killed").alias("k")))
    known = F.col("m").isNotNull() & F.col("r").isNotNull() & F.col("k").isNotNull()

    def when_known(col: Any) -> Any:
        return F.sum(F.when(known, col).otherwise(0))

    collect(lost.groupBy(*R).agg(
        F.count(F.lit(1)).alias("examples"), F.sum(F.when(known, 0).otherwise(1)).alias("unknown_examples"),
        when_known(F.col("accepted")).alias("acknowledged"), when_known(F.col("consumed")).alias("consumed"),
        when_known(F.col("m")).alias("in_queue"), when_known(F.col("r")).alias("replaced"),
        when_known(F.col("k")).alias("killed"),
        when_known(F.greatest(F.lit(0), F.col("accepted") - F.col("consumed") - F.col("m") - F.col("r")
                              - F.col("k"))).alias("lost")),
        "lost", ["examples", "unknown_examples", "acknowledged", "consumed", "in_queue", "replaced", "killed",
                 "lost"])

    parts = ["c_message", "c_pending", "c_delivering", "c_scheduled", "c_paged"]
    complete = F.lit(True)
    for part in parts:
        complete = complete & F.col(part).isNotNull()
    total = F.col("c_pending") + F.col("c_delivering") + F.col("c_scheduled") + F.col("c_paged")
    collect(counters.groupBy(*R).agg(
        F.count(F.lit(1)).alias("observations"), F.sum(F.when(complete, 1).otherwise(0)).alias("checked"),
        F.sum(F.when(complete & (F.col("c_message") != total), 1).otherwise(0)).alias("broken")),
        "counter-identity", ["observations", "checked", "broken"])

    exempt_from = (df.filter(F.col("f").isin("nack", "set_ring_size") & ok)
                   .groupBy(*E, "queue").agg(F.min("index").alias("exempt_from")))
    ring = (counters.filter((F.col("bound") >= 0) & F.col("c_pending").isNotNull())
            .join(exempt_from, on=[*E, "queue"], how="left")
            .withColumn("exempt", F.coalesce(F.col("index") > F.col("exempt_from"), F.lit(False))))
    collect(ring.groupBy(*R).agg(
        F.count(F.lit(1)).alias("observations"),
        F.sum(F.when(F.col("exempt"), 1).otherwise(0)).alias("exempt"),
        F.sum(F.when(F.col("exempt"), 0).otherwise(1)).alias("checked"),
        F.sum(F.when(~F.col("exempt") & (F.col("c_pending") > F.col("bound")), 1).otherwise(0))
        .alias("over_bound")),
        "ring-bound", ["observations", "exempt", "checked", "over_bound"])

    throttle = df.filter((F.col("f") == "throttle_state") & F.col("in_flight").isNotNull()
                         & F.col("bound").isNotNull())
    collect(throttle.groupBy(*R).agg(
        F.count(F.lit(1)).alias("observations"),
        F.sum(F.when((F.col("in_flight") < 0) | (F.col("in_flight") > F.col("bound") + 1), 1).otherwise(0))
        .alias("over_bound")),
        "throttle-bound", ["observations", "over_bound"])
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    stats: Stats = {}
    for row in union.collect():
        queue = row["queue"]
        key = (row["run"], row["machine"], None if queue in (None, NULLQ) else queue, row["check"])
        entry = stats.setdefault(key, {})
        entry[row["name"]] = entry.get(row["name"], 0) + int(row["value"] or 0)
    msgs.unpersist()
    dlv.unpersist()
    return stats
