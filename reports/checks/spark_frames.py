"""What both plans of the Spark engine (:mod:`.spark_engine`) share: statistics in long form, small
driver-side frames, the per-queue counters aggregation (counter identity, ring bound and the last
counters of the lost check), the throttle and admission checks, and the one collection of a plan's
union of frames."""

from __future__ import annotations

from typing import Any

from mqconform.reports.checks.definitions import (
    CARRIED,
    NEMESIS,
    NULLQ,
    RESETS,
    RETURNS,
    SETTLES,
    TIMEOUT,
    E,
    R,
    Stats,
    add_figures,
    keeps_channel_profiles,
)


def long_form(frame: Any, check: str, names: list[str]) -> Any:
    """`frame`'s statistics in long form (run, machine, queue, check, name, value): all checks are
    unioned and collected once."""
    from pyspark.sql import functions as F

    pairs = F.array(*[F.struct(F.lit(n).alias("name"), F.col(n).cast("long").alias("value")) for n in names])
    return (frame.select(*R, F.lit(check).alias("check"), F.explode(pairs).alias("s"))
            .select(*R, "check", "s.name", "s.value"))


def local_frame(spark: Any, rows: list[tuple[Any, ...]], schema: str) -> Any:
    """A small DataFrame of driver-side `rows` (`schema`: "name type, ..." with types string, long, int),
    built on the JVM from Arrow: ``createDataFrame`` of a Python list starts Python workers to read it."""
    import pyarrow as pa

    kinds = {"string": pa.string(), "long": pa.int64(), "int": pa.int32()}
    fields = [field.split() for field in schema.split(",")]
    return spark.createDataFrame(pa.table({name: pa.array([row[i] for row in rows], kinds[kind])
                                           for i, (name, kind) in enumerate(fields)}))


#: the counts of :func:`queue_counters` (counter identity, ring bound)
COUNTER_SUMS = ("observations", "checked", "broken", "ring_observations", "exempt", "ring_checked",
                "over_bound")


def first_in_example(df: Any, operations: tuple[str, ...], name: str) -> Any:
    """Per example (:data:`E`): the index of its first record of one of `operations`, as column `name`."""
    from pyspark.sql import functions as F

    return df.filter(F.col("f").isin(*operations)).groupBy(*E).agg(F.min("index").alias(name))


def return_cuts(df: Any) -> tuple[Any, Any]:
    """The order check's return events (DELIVERY-4), as the python engine's ``_return_cuts``: per
    (example, queue) the first consumer close, rollback or failed settle under a profile that may close
    the channel (``cut``), per example the first broker stop, start or pull batch (``cut2``)."""
    from pyspark.sql import functions as F

    col = F.col
    failed_settle = (col("f").isin(*SETTLES) & (col("type") == "ok") & (col("result") == "failed")
                     & ~F.coalesce(col("profile").isin(*keeps_channel_profiles()), F.lit(False)))
    returns = col("f").isin(*RETURNS) | F.coalesce(failed_settle, F.lit(False))
    return (df.filter(returns).groupBy(*E, "queue").agg(F.min("index").alias("cut")),
            first_in_example(df, NEMESIS, "cut2"))


def carried_drops(counted: Any) -> Any:
    """`counted` (counters observations) with ``c_replaced_drop``, ``c_killed_drop`` and
    ``c_expired_drop``: the previous observation's value of the same (example, queue) where this one is
    lower (a restart zeroed the counter), else 0 (definitions.CARRIED, both engines)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy(*E, "queue").orderBy("index")
    for part in CARRIED:
        before = F.lag(part).over(order)
        counted = counted.withColumn(f"{part}_drop", F.when(F.col(part) < before, before).otherwise(0))
    return counted


def queue_counters(df: Any, shared: Any = None) -> Any:
    """Per (example, queue), from its ``counters`` observations: the last one's message_count, replaced,
    killed and expired (``m``, ``r``, ``k``, ``x``: the lost check, DELIVERY-2, DELIVERY-15; the three
    counters with what a restart zeroed carried over, :func:`carried_drops`), whether one
    came after a broker stop, start or restart (``reset``: :data:`RESETS`), and the counts
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
    resets = first_in_example(df, RESETS, "reset_at")
    reset = F.coalesce(col("index") > col("reset_at"), F.lit(False))
    counted = carried_drops(counted)
    return (counted.join(F.broadcast(exempt_from), on=[*E, "queue"], how="left")
            .join(F.broadcast(resets), on=E, how="left")
            .groupBy(*E, "queue").agg(
                F.max_by("c_message", "index").alias("m"),
                *[(F.max_by(part, "index") + F.sum(f"{part}_drop")).alias(name)
                  for name, part in (("r", "c_replaced"), ("k", "c_killed"), ("x", "c_expired"))],
                F.max(F.when(reset, 1).otherwise(0)).alias("reset"),
                F.count(F.lit(1)).alias("observations"), F.count_if(complete).alias("checked"),
                F.count_if(complete & (col("c_message") != total)).alias("broken"),
                F.count_if(in_ring).alias("ring_observations"), F.count_if(exempt).alias("exempt"),
                F.count_if(checked).alias("ring_checked"),
                F.count_if(checked & (col("c_pending") > col("bound"))).alias("over_bound")))


def add_counters(stats: Stats, key: tuple[str, str, str | None], v: dict[str, int]) -> None:
    """Counter identity (DELIVERY-1) and ring bound (RING-17) of one R from its :data:`COUNTER_SUMS`, each
    only where the queue has such observations (ring bound: observations of a ring)."""
    if v.get("observations"):
        add_figures(stats, *key, "counter-identity", {n: v[n] for n in ("observations", "checked", "broken")})
    if v.get("ring_observations"):
        add_figures(stats, *key, "ring-bound", {"observations": v["ring_observations"], "exempt": v["exempt"],
                                            "checked": v["ring_checked"], "over_bound": v["over_bound"]})


def collect(frames: list[Any]) -> tuple[Stats, dict[str, dict[tuple[str, str, str | None], dict[str, int]]]]:
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
            add_figures(stats, row["run"], row["machine"], row["queue"], row["check"],
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


def deleted_by_id() -> Any:
    """A delete (DELIVERY-31) or a move (DELIVERY-48) by id answered true (store.normalise: result
    "deleted"): it took the message out of its queue as an ack does (both plans count it consumed)."""
    from pyspark.sql import functions as F

    return (F.col("type") == "ok") & (F.col("result") == "deleted")
