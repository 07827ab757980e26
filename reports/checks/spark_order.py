"""The two sequence checks on Spark: per-consumer ``order`` and ``delivery-count`` monotonicity.

The same definitions as the python engine's :func:`.python_engine._order` (DELIVERY-4) and
:func:`.python_engine._delivery_counts` (REDELIVERY-1, REDELIVERY-2, REDELIVERY-12, REDELIVERY-19,
REDELIVERY-22), as DataFrame expressions: the "largest value of the earlier rows of a segment" that the
python engine computes with a running maximum over sorted keys is a window maximum here (rows between
unbounded preceding and 1 preceding), no Python UDF. Both return frames of per-(run, machine, queue)
statistics for the caller's long-form union.
"""

from __future__ import annotations

from typing import Any

from mqconform.reference_model.config import DEFAULT_PRIORITY
from mqconform.reports.checks.definitions import ACCEPTED, E, R
from mqconform.reports.checks.spark_frames import return_cuts

__all__ = ["FRAMES", "delivery_count_frame", "order_frame", "out_of_order"]


def order_frame(df: Any) -> Any:
    """``order`` statistics per R: first_deliveries, consumers, out_of_order."""
    from pyspark.sql import functions as F

    col = F.col
    invoke, ok = col("type") == "invoke", col("type") == "ok"
    sends = (df.filter((col("f") == "send") & col("msg").isNotNull()).groupBy(*E, "msg").agg(
        F.sum(F.when(invoke, 1).otherwise(0)).alias("nsend"),
        F.min(F.when(invoke, col("index"))).alias("sidx"),
        F.min(F.when(ok & col("result").isin(*ACCEPTED), col("index"))).alias("soidx"),
        F.max(F.when(invoke, F.coalesce(col("priority"), F.lit(DEFAULT_PRIORITY)))).alias("prio"),
        # a send without a priority comes from a store of schema 1, which kept no schedule
        F.max(F.when(invoke & (col("scheduled_at").isNotNull() | col("priority").isNull()), 1).otherwise(0))
        .alias("sched")))
    firsts = (df.filter((col("f") == "receive") & ok & col("msg").isNotNull()).groupBy(*E, "queue", "msg")
              .agg(F.min(F.struct("index", "process")).alias("first"))
              .select(*E, "queue", "msg", col("first.index").alias("first"),
                      col("first.process").alias("process")))
    per_g, per_e = return_cuts(df)
    eligible = (firsts.join(sends, on=[*E, "msg"], how="inner")
                .filter((col("nsend") == 1) & (col("sched") == 0))
                .join(per_g, on=[*E, "queue"], how="left").join(per_e, on=E, how="left")
                .filter(F.coalesce(col("first") < col("cut"), F.lit(True))
                        & F.coalesce(col("first") < col("cut2"), F.lit(True))))
    late = F.coalesce(out_of_order([*E, "queue", "process", "prio"]), F.lit(False))
    per_consumer = (eligible.select(*E, "queue", "process", late.alias("late"))
                    .groupBy(*E, "queue", "process")
                    .agg(F.count(F.lit(1)).alias("n"),
                         F.sum(F.when(col("late"), 1).otherwise(0)).alias("late")))
    return per_consumer.groupBy(*R).agg(F.sum("n").alias("first_deliveries"),
                                        F.count(F.lit(1)).alias("consumers"),
                                        F.sum("late").alias("out_of_order"))


def out_of_order(segment: list[Any]) -> Any:
    """DELIVERY-4's test of one first delivery (columns ``first``, ``sidx``, ``soidx``): in its consumer
    `segment`, an earlier first delivery's send was invoked after this message's send was accepted."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    earlier = Window.partitionBy(*segment).orderBy("first").rowsBetween(Window.unboundedPreceding, -1)
    return F.col("soidx").isNotNull() & (F.max("sidx").over(earlier) > F.col("soidx"))


def delivery_count_frame(df: Any) -> Any:
    """``delivery-count`` statistics per R: observations, messages, decreased."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col = F.col
    rows = df.filter((col("f") == "delivery_count") & (col("type") == "ok") & col("msg").isNotNull()
                     & col("delivery_count").isNotNull())
    window = (Window.partitionBy(*E, "queue", "msg").orderBy("index")
              .rowsBetween(Window.unboundedPreceding, -1))
    down = F.coalesce(col("delivery_count") < F.max("delivery_count").over(window), F.lit(False))
    per_msg = (rows.select(*E, "queue", "msg", down.alias("down")).groupBy(*E, "queue", "msg")
               .agg(F.count(F.lit(1)).alias("n"), F.sum(F.when(col("down"), 1).otherwise(0)).alias("down")))
    return per_msg.groupBy(*R).agg(F.sum("n").alias("observations"), F.count(F.lit(1)).alias("messages"),
                                   F.sum("down").alias("decreased"))


#: check -> (frame builder, statistic names), for the caller's long-form union
FRAMES = {"order": (order_frame, ("first_deliveries", "consumers", "out_of_order")),
          "delivery-count": (delivery_count_frame, ("observations", "messages", "decreased"))}
