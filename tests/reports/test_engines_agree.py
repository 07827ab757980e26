"""Both engines (python, Spark) give identical CheckResults on generated histories with faults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mqconform.commands import bench_history
from mqconform.reports import pipeline
from tests.reports import histories

#: fault -> (check that must notice it, expected verdict, statistic that must be non-zero)
DETECTED = {
    "lost": ("lost", "fail", "lost"),
    "duplicate": ("total-queue", "pass", "duplicated"),
    "unexpected": ("total-queue", "fail", "unexpected"),
    "counter": ("counter-identity", "fail", "broken"),
    "after-ack": ("delivery-after-ack", "fail", "delivered_after_ack"),
    "ring": ("ring-bound", "fail", "over_bound"),
    "throttle": ("throttle-bound", "fail", "over_bound"),
    "double-answer": ("admission-answer", "fail", "multiple"),
    "early-timeout": ("admission-answer", "fail", "early_timeouts"),
    "drained-lost": ("lost", "fail", "lost"),
    # not faults: the lost check must stay honest (no false loss, no unknown where the history tells)
    "ack-info": ("lost", "pass", "possibly_consumed"),
    "drain": ("lost", "pass", "drained_examples"),
    "address": ("lost", "pass", "acknowledged"),
    "filter": ("lost", "pass", "not_applicable_examples"),  # only example 2 has the filter
    "expired": ("lost", "pass", "expired"),
    "expired-uncounted": ("lost", "unknown", "unknown_examples"),
    "silent-bound": ("lost", "not_applicable", "not_applicable_examples"),
    "killed-restart": ("lost", "pass", "killed"),
    "kept-counters-loss": ("lost", "unknown", "unknown_examples"),
    "reorder": ("order", "fail", "out_of_order"),
    "count-decrease": ("delivery-count", "fail", "decreased"),
    # not faults: the order check must not flag what the profile allows
    "priority": ("order", "pass", "first_deliveries"),
    "scheduled": ("order", "pass", "first_deliveries"),
    "concurrent": ("order", "pass", "first_deliveries"),
    "redelivered": ("order", "pass", "first_deliveries"),
    "restarted": ("order", "pass", "first_deliveries"),
}
ALL_RULES = ("DELIVERY-1", "DELIVERY-2", "DELIVERY-4", "DELIVERY-6", "DELIVERY-7", "DELIVERY-15", "RING-17",
             "THROTTLE-7", "ADMISSION-3", "ADMISSION-7", "REDELIVERY-1", "REDELIVERY-2")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("runs")
    paths = [histories.write_run_dir(base / "clean", run="clean", examples=8, seed=11)]
    for i, fault in enumerate(DETECTED):
        paths.append(histories.write_run_dir(base / fault, run=fault, examples=4, seed=i, faults={fault}))
    paths.append(histories.write_run_dir(base / "corrupt", run="corrupt", faults={"corrupt"}))
    paths.append(histories.write_run_dir(base / "version", run="version", faults={"version"}))
    paths.append(histories.write_run_dir(base / "incomplete", run="incomplete", faults={"incomplete"}))
    return paths


@pytest.fixture(scope="module")
def python_result(runs: list[Path]) -> Any:
    return pipeline.check_runs(runs, engine="python", ignore_bad=True)


def by_key(result: Any) -> dict[tuple[Any, ...], Any]:
    return {(c.run, c.machine, c.queue, c.check): c for c in result.checks}


@pytest.mark.rules(*ALL_RULES)
@pytest.mark.parametrize("fault", sorted(DETECTED))
def test_python_engine_detects(python_result: Any, fault: str) -> None:
    check, verdict, stat = DETECTED[fault]
    found = [c for c in python_result.checks if c.run == fault and c.check == check]
    assert found and found[0].verdict == verdict and found[0].stats[stat] >= 1
    others = [c for c in python_result.checks if c.run == fault and c.check != check]
    assert all(c.verdict in ("pass", "not_applicable") for c in others), others


@pytest.mark.rules("DELIVERY-4", "REDELIVERY-1", "REDELIVERY-2")
@pytest.mark.parametrize(("fault", "words"), [
    ("reorder", ("c-q received m2", "before m1", "example ")),
    ("count-decrease", ("delivery count of m1 went from 2 to 1", "example "))])
def test_a_failing_sequence_check_names_its_earliest_violation(python_result: Any, fault: str,
                                                                words: tuple[str, ...]) -> None:
    failed = [c for c in python_result.checks if c.run == fault and c.verdict == "fail"]
    assert len(failed) == 1 and "; first: " in failed[0].detail
    assert all(w in failed[0].detail.split("; first: ")[1] for w in words)


@pytest.mark.rules(*ALL_RULES)
def test_clean_history_passes_every_check(python_result: Any) -> None:
    clean = [c for c in python_result.checks if c.run == "clean"]
    assert {c.check for c in clean} >= {"total-queue", "lost", "delivery-after-ack", "counter-identity",
                                         "ring-bound"}
    assert all(c.verdict in ("pass", "not_applicable") for c in clean), clean


@pytest.mark.rules(*ALL_RULES)
def test_bad_inputs_are_listed_and_incomplete_run_has_no_verdicts(python_result: Any) -> None:
    problems = {(Path(b.path).parent.parent.name if b.line is not None else "", b.problem.split(" ")[0])
                for b in python_result.bad}
    assert ("corrupt", "corrupt") in problems and ("version", "unknown") in problems
    assert not [c for c in python_result.checks if c.run == "incomplete"]


@pytest.mark.rules("DELIVERY-2", "DELIVERY-15")
def test_lost_verdicts_say_why() -> None:
    from mqconform.reports.checks.definitions import STATS, lost_example, verdict

    def lost(**figures: int) -> tuple[str, int, str]:
        return verdict("lost", {name: figures.get(name, 0) for name in STATS["lost"]})

    filtered = lost_example(3, True, False, 0, (0, 0), (0, 0, 0, 0))
    assert lost(**filtered)[0] == "not_applicable" and "filter" in lost(**filtered)[2]
    unknown = lost_example(3, False, False, 0, (0, 0), None)
    accounted = lost_example(3, False, False, 0, (3, 0), (0, 0, 0, 0))  # all three consumed
    # one example without final counters among others that have them: the run could not tell
    some = {k: unknown.get(k, 0) + accounted.get(k, 0) for k in {*unknown, *accounted}}
    assert lost(**some)[0] == "unknown" and "drain" in lost(**some)[2]
    # no example has them: the implementation shows no such counters, a capability gap
    assert lost(**unknown)[0] == "not_applicable" and "drain" in lost(**unknown)[2]
    # an indeterminate ack may have happened: no false loss; without it, a loss
    assert lost_example(3, False, False, 0, (2, 1), (0, 0, 0, 0))["lost"] == 0
    assert lost_example(3, False, False, 0, (2, 0), (0, 0, 0, 0))["lost"] == 1
    # drained: acknowledged minus delivered (Jepsen total-queue), counters only for the ways out
    assert lost_example(3, False, True, 2, (0, 0), (None, 0, 0, 0))["lost"] == 1
    assert lost_example(3, False, True, 2, (0, 0), (None, 1, 0, 0))["lost"] == 0
    # EXPIRY-7: an expired message left the queue; counted, it is no loss (drained or not)
    assert lost_example(3, False, False, 0, (2, 0), (0, 0, 0, 1)) == {
        "examples": 1, "acknowledged": 3, "consumed": 2, "possibly_consumed": 0, "in_queue": 0,
        "replaced": 0, "killed": 0, "expired": 1, "lost": 0}
    assert lost_example(3, False, True, 2, (0, 0), (None, 0, 0, 1))["lost"] == 0
    # no expired counter: a shortfall expiry may explain is unknown, never a fail; none, still a pass
    assert lost_example(3, False, False, 0, (2, 0), (0, 0, 0, None)) == {"examples": 1, "unknown_examples": 1}
    assert lost_example(3, False, False, 0, (3, 0), (0, 0, 0, None))["lost"] == 0
    # counters zeroed by a broker restart before the last observation: a shortfall the killed, replaced
    # or expired messages before it may explain is unknown; none, still counted
    assert lost_example(3, False, False, 0, (1, 0), (0, 0, 0, 0), reset=True) == {
        "examples": 1, "unknown_examples": 1}
    assert lost_example(3, False, False, 0, (3, 0), (0, 0, 0, 0), reset=True)["lost"] == 0


@pytest.mark.rules("RING-17", "REDELIVERY-19")
def test_profile_gating(tmp_path: Path) -> None:
    run = histories.write_run_dir(tmp_path / "r", faults={"ring"}, profile="jetstream")
    checks = pipeline.check_runs([run]).checks
    ring = [c for c in checks if c.check == "ring-bound"]
    assert ring and ring[0].verdict == "not_applicable"
    # a check evidences only the rules of the run's profile: JetStream's delivery count is REDELIVERY-19
    counts = [c for c in checks if c.check == "delivery-count"]
    assert counts and counts[0].rules == ("REDELIVERY-19",) and counts[0].verdict == "pass"


@pytest.mark.spark
@pytest.mark.rules(*ALL_RULES)
def test_spark_engine_agrees(spark: Any, runs: list[Path], python_result: Any) -> None:
    result = pipeline.check_runs(runs, engine="spark", ignore_bad=True)
    assert result.engine == "spark"
    assert by_key(result) == by_key(python_result)
    assert result.checks == python_result.checks
    assert result.bad == python_result.bad
    assert any(c.verdict == "fail" for c in result.checks)


@pytest.mark.spark
@pytest.mark.rules(*ALL_RULES)
def test_spark_on_bench_store_agrees(spark: Any, tmp_path: Path) -> None:
    from mqconform.reports.checks import definitions
    from mqconform.reports.checks import python_engine as checks_python
    from mqconform.reports.checks import spark_engine as checks_spark
    from mqconform.reports.read import store

    table = bench_history.bench_table(7 * 450)
    bench_history.write_bench_store(tmp_path / "a", table)
    histories.spark_bench_store(spark, tmp_path / "b", 7 * 450)
    def full(stats: Any) -> Any:
        return {k: {n: v.get(n, 0) for n in definitions.STATS[k[3]]} for k, v in stats.items()}

    table_a = store.read_store_table(tmp_path / "a")
    py = full(checks_python.compute_stats(table_a))
    sa = full(checks_spark.compute_stats(spark, tmp_path / "a"))
    sb = full(checks_spark.compute_stats(spark, tmp_path / "b"))
    assert py == sa
    assert {k[1:]: v for k, v in sb.items()} == {k[1:]: v for k, v in py.items()}
    assert py[("bench-run", "delivery", "q", "total-queue")]["delivered"] == 450


@pytest.mark.spark
@pytest.mark.rules(*ALL_RULES)
def test_spark_fast_and_exact_plans_agree(spark: Any, runs: list[Path], tmp_path: Path) -> None:
    """The fast plan (big histories) and the exact plan give the same statistics as the python engine."""
    from mqconform.reports.checks import definitions, spark_fast
    from mqconform.reports.checks import python_engine as checks_python
    from mqconform.reports.checks import spark_engine as checks_spark
    from mqconform.reports.read import store

    st = tmp_path / "store"
    store.ingest([p for p in runs if p.name in ("clean", "duplicate", "counter", "ack-info")], st)
    bench_history.write_bench_store(st, bench_history.bench_table(7 * 300))
    py = checks_python.compute_stats(store.read_store_table(st, definitions.NEEDED))
    fast = spark_fast.fast_stats(spark, checks_spark.load(spark, st).fillna({"queue": definitions.NULLQ}),
                                 definitions.routing_table(checks_spark._small(
                                     checks_spark.load(spark, st))[0]))
    exact = checks_spark.compute_stats(spark, st, exact=True)
    full = {k: {n: v.get(n, 0) for n in definitions.STATS[k[3]]} for k, v in py.items()}
    assert fast is not None
    assert {k: {n: v.get(n, 0) for n in definitions.STATS[k[3]]} for k, v in fast.items()} == full
    assert {k: {n: v.get(n, 0) for n in definitions.STATS[k[3]]} for k, v in exact.items()} == full
