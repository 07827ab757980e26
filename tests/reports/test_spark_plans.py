"""The Spark engine's fast plan (big histories) against the python engine on every case it serves, and
the ways it hands a history to the exact plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mqconform.commands import bench_history
from mqconform.reports.checks import definitions, spark_fast
from mqconform.reports.checks import python_engine as checks_python
from mqconform.reports.checks import spark_engine as checks_spark
from mqconform.reports.read import store
from tests.reports import histories

#: generated cases with one queue per target, no filter, no drain: the fast plan's histories
SIMPLE = ("clean", "duplicate", "unexpected", "counter", "ring", "throttle", "ack-info", "lost", "reorder",
          "count-decrease", "priority", "scheduled", "concurrent", "redelivered", "double-answer",
          "early-timeout")
RULES = ("DELIVERY-1", "DELIVERY-2", "DELIVERY-4", "DELIVERY-6", "DELIVERY-7", "DELIVERY-15", "RING-17",
         "THROTTLE-7", "ADMISSION-3", "ADMISSION-7", "REDELIVERY-1", "REDELIVERY-2")


def full(stats: Any) -> dict[Any, dict[str, int]]:
    return {k: {n: v.get(n, 0) for n in definitions.STATS[k[3]]} for k, v in stats.items()}


def ingest(base: Path, cases: tuple[str, ...]) -> Path:
    runs = [histories.write_run_dir(base / "runs" / case, run=case, examples=4, seed=i,
                                    faults=set() if case == "clean" else {case})
            for i, case in enumerate(cases)]
    store.ingest(runs, base / "store")
    return base / "store"


def fast(spark: Any, st: Path) -> Any:
    df = checks_spark.load(spark, st).fillna({"queue": definitions.NULLQ})
    return spark_fast.fast_stats(spark, df, definitions.routing_table(checks_spark._small(df)[0]))


def python(st: Path) -> Any:
    return full(checks_python.compute_stats(store.read_store_table(st, definitions.NEEDED)))


@pytest.mark.spark
@pytest.mark.rules(*RULES)
def test_fast_plan_serves_every_simple_case_exactly(spark: Any, tmp_path: Path) -> None:
    st = ingest(tmp_path, SIMPLE)
    expected = python(st)
    got = fast(spark, st)
    assert got is not None
    assert full(got) == expected
    # the cases are noticed (not a vacuous agreement)
    assert expected[("reorder", "delivery", "q", "order")]["out_of_order"] == 1
    assert expected[("redelivered", "delivery", "q", "order")]["first_deliveries"] > 0
    assert expected[("unexpected", "delivery", "q", "total-queue")]["unexpected"] == 1


@pytest.mark.spark
@pytest.mark.rules("DELIVERY-7")
def test_a_delivery_after_ack_goes_to_the_exact_plan(spark: Any, tmp_path: Path) -> None:
    st = ingest(tmp_path, ("clean", "after-ack"))
    assert fast(spark, st) is None
    stats = full(checks_spark.compute_stats(spark, st))
    assert stats == python(st)
    assert stats[("after-ack", "delivery", "q", "delivery-after-ack")]["delivered_after_ack"] == 1


@pytest.mark.spark
@pytest.mark.rules("DELIVERY-6")
def test_names_sharing_a_code_go_to_the_exact_plan(spark: Any, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Queue and process codes stand for names only when distinct over the store: checked, never assumed."""
    from pyspark.sql import functions as F

    st = ingest(tmp_path, ("clean", "unexpected"))
    monkeypatch.setattr(spark_fast, "_code", lambda column: F.lit(0).cast("long"))
    assert spark_fast._names(checks_spark.load(spark, st)) is None  # queues "q" and "send" share 0
    assert fast(spark, st) is None
    assert full(checks_spark.compute_stats(spark, st)) == python(st)


@pytest.mark.spark
@pytest.mark.rules("DELIVERY-6", "DELIVERY-4")
def test_a_store_file_without_the_schema_2_columns_reads_them_as_nulls(spark: Any, tmp_path: Path) -> None:
    table = bench_history.bench_table(7 * 200)
    old = table.drop_columns(["priority", "scheduled_at", "delivery_count"])
    bench_history.write_bench_store(tmp_path / "st", old)
    df = checks_spark.load(spark, tmp_path / "st")
    assert set(store.COLUMNS) <= set(df.columns)
    assert df.filter(df["priority"].isNotNull()).count() == 0
    stats = full(checks_spark.compute_stats(spark, tmp_path / "st"))
    assert stats == python(tmp_path / "st")
    assert stats[("bench-run", "delivery", "q", "total-queue")]["delivered"] == 200


def _non_destructive(run_dir: Path) -> None:
    """Declare queue q of every example of a generated run non-destructive (DELIVERY-12)."""
    import json

    path = run_dir / "history" / "delivery.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        if record["f"] == "queue" and record["type"] == "invoke":
            record["value"]["non_destructive"] = True
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))


@pytest.mark.spark
@pytest.mark.rules("DELIVERY-7", "DELIVERY-12", "DELIVERY-1")
def test_a_non_destructive_queue_is_left_out_of_delivery_after_ack_by_both_engines(spark: Any,
                                                                                  tmp_path: Path) -> None:
    """On a non-destructive queue a delivered message stays listed (DELIVERY-12): the delivery after an
    ack that fails DELIVERY-7 elsewhere is no failure there, nor is the counter identity checked."""
    run = histories.write_run_dir(tmp_path / "runs" / "after-ack", run="after-ack", examples=4, seed=1,
                                  faults={"after-ack"})
    _non_destructive(run)
    store.ingest([run], tmp_path / "store")
    st = tmp_path / "store"
    stats = full(checks_spark.compute_stats(spark, st))
    assert stats == python(st)
    assert stats[("after-ack", "delivery", "q", "delivery-after-ack")]["delivered_after_ack"] == 0
    assert stats[("after-ack", "delivery", "q", "counter-identity")]["checked"] == 0
    assert stats[("after-ack", "delivery", "q", "counter-identity")]["observations"] > 0
