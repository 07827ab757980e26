"""`mqconform bench model|suite|adapters|pipeline`: print benchmark figures (never asserts times)."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", choices=("model", "suite", "adapters", "pipeline"), help="what to measure")
    parser.add_argument("--rows", type=int, default=1_000_000, help="pipeline: history rows (default 1e6)")
    parser.add_argument("--ops", type=int, default=200_000, help="model: operations per measurement")
    parser.add_argument("--adapters", default="nats,rabbitmq,redis,activemq,mqtt",
                        help="adapters: comma-separated adapter names")
    parser.add_argument("-n", type=int, default=500, help="adapters: round trips per measurement")
    parser.add_argument("--master", help="pipeline: Spark master URL (default: local[*])")


#: bench model: figure -> (comparison, target), the goals docs/development.md lists (the storage cost:
#: STORAGE-6, seed 000)
MODEL_TARGETS: dict[str, tuple[str, float]] = {
    "queue_ops_per_s": (">=", 300_000),
    "storage_ops_per_s": (">=", 300_000),
    "storage_ops_per_s_after_1e6_deleted": (">=", 300_000),
    "storage_cost_ratio_1e6_vs_1e3": ("<=", 1.5),
}
STORAGE_BATCH = 500  # puts then removes per batch: fewer than the 1,000 deleted slots, so every put reuses


def bench_model(ops: int) -> dict[str, float]:
    """Queue model send/receive/ack throughput, and storage cost after 10^3 vs 10^6 deleted records."""
    from mqconform.reference_model.broker import Broker
    from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig

    broker = Broker()
    broker.declare_queue(QueueConfig("q", ring_size=1000))
    broker.open_consumer(ConsumerConfig("c", "q", window_messages=100))
    messages = [Message(f"m{i}") for i in range(ops // 3)]

    def cycle(chunk: list[Message]) -> float:
        send, receive, ack = broker.send, broker.receive, broker.ack
        t0 = time.perf_counter()
        for message in chunk:
            send("q", message)
            receive("c")
            ack("c", message.id)
        return 3 * len(chunk) / (time.perf_counter() - t0)

    # best of short chunks, as for storage: a busy machine does not lower the figure
    step = 1000
    rates = [cycle(messages[i:i + step]) for i in range(0, len(messages), step)]
    results = {"queue_ops_per_s": max(rates)}
    results.update(bench_storage(ops))
    return results


def bench_storage(ops: int) -> dict[str, float]:
    """Per-operation time of put + remove of one length with 10^3 and with 10^6 deleted records of it.

    This is the seed's pathological workload (STORAGE-6): in VOS both operations grow linearly with
    the number of same-length deleted records; the model pops and pushes one stack, so the ratio
    stays near 1. The two files are sampled alternately in short samples of one batch each (so a
    busy machine slows both alike) and each figure is the best sample, as timeit reports.
    """
    from mqconform.reference_model.storage import QueueFile, StoreConfig

    ids = [f"n{i}" for i in range(STORAGE_BATCH)]
    rounds = max(5, ops // (2 * STORAGE_BATCH))

    def after(deleted: int) -> QueueFile:
        store = QueueFile(StoreConfig("s", max_bytes=10**12))
        for i in range(deleted):
            store.put(f"d{i}", 100)
        for i in range(deleted):
            store.remove(f"d{i}")
        return store

    def sample(store: QueueFile) -> float:
        put, remove = store.put, store.remove
        t0 = time.perf_counter()
        for msg_id in ids:
            put(msg_id, 100)
        for msg_id in ids:
            remove(msg_id)
        return (time.perf_counter() - t0) / (2 * STORAGE_BATCH)

    stores = {1_000: after(1_000), 1_000_000: after(1_000_000)}
    samples: dict[int, list[float]] = {n: [] for n in stores}
    for _ in range(rounds):
        for deleted, store in stores.items():
            samples[deleted].append(sample(store))
    for deleted, store in stores.items():
        if store.used_bytes != deleted * 100 or store.free_slots != deleted:
            raise RuntimeError("storage benchmark: a put did not reuse a deleted slot")
    small, large = min(samples[1_000]), min(samples[1_000_000])
    return {"storage_ops_per_s": 1 / small, "storage_ops_per_s_after_1e6_deleted": 1 / large,
            "storage_cost_ratio_1e6_vs_1e3": large / small}


def print_model(figures: dict[str, float]) -> None:
    """The model figures, each with its target and whether it is met (the benchmark never fails)."""
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        line = f"{key:<{width}}  {value:>14,.2f}"
        if key in MODEL_TARGETS:
            op, target = MODEL_TARGETS[key]
            met = value >= target if op == ">=" else value <= target
            line += f"   target {op} {target:,g}   {'met' if met else 'MISSED'}"
        print(line)


def bench_suite() -> dict[str, float]:
    """Steps per second of each machine against the reference adapter (wall clock, and per second of
    CPU time of this process); per mutant, time to detection."""
    import tempfile
    from pathlib import Path

    from mqconform.adapters.reference import ReferenceAdapter
    from mqconform.conformance.exploring import settings as suite_settings
    from mqconform.conformance.exploring.registry import MACHINES
    from mqconform.conformance.exploring.runner import run_machine
    from mqconform.history import RunDirectory
    from mqconform.reference_model.profiles import ARTEMIS
    from mqconform.selftest.mutants import MUTANTS

    hyp = suite_settings.get("ci", database=None)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDirectory(Path(tmp), "reference", "artemis", {})
        for area, machine in MACHINES.items():
            cpu = time.process_time()
            result = run_machine(machine, lambda: ReferenceAdapter("artemis"), ARTEMIS, hyp, run)
            cpu = time.process_time() - cpu
            history = (run.path / "history" / f"{area}.jsonl").read_text().splitlines()
            steps = sum('"type":"invoke"' in line for line in history)  # one invoke per executed step
            figures[f"steps_per_s.{area}"] = steps / result.seconds if result.seconds else 0.0
            # the same steps per second of this process' CPU time: what the suite costs, apart from
            # how busy the machine is (on a loaded machine the wall-clock figure drops, this one not)
            figures[f"steps_per_cpu_s.{area}"] = steps / cpu if cpu else 0.0
    detections = []
    for mutant in MUTANTS:
        result = run_machine(MACHINES[mutant.area], mutant.adapter, ARTEMIS, hyp, max_reruns=0)
        if result.findings:
            figures[f"mutant.{mutant.name}.seconds"] = result.seconds
            figures[f"mutant.{mutant.name}.steps"] = len(result.findings[0].steps)
            detections.append(result.seconds)
        else:
            figures[f"mutant.{mutant.name}.seconds"] = float("nan")
    median = statistics.median(detections) if detections else float("nan")
    figures["mutant.median_seconds_to_detection"] = median
    return figures


def bench_pipeline(rows: int, master: str | None = None) -> dict[str, float]:
    """History rows per second of both check engines on the same generated history (no assertions).

    python: from the Parquet store (read + checks, the figure compared with Spark) and from an in-memory
    Arrow table of plain strings (checks only); spark: from the same store, after one warm-up run (JVM
    start and code generation excluded). Each python figure is the better of two runs (the first run
    of a process pays for page faults of fresh memory).
    """
    import tempfile
    from pathlib import Path

    from mqconform.reports.checks import python_engine as checks_python
    from mqconform.reports.checks import spark_engine as checks_spark
    from mqconform.reports.checks.definitions import NEEDED
    from mqconform.reports.read import store as hstore
    from mqconform.reports.spark_session import get_session

    from .bench_history import bench_table, write_bench_store

    def rate(count: int, fn: Callable[[], object]) -> float:
        t0 = time.perf_counter()
        fn()
        return count / (time.perf_counter() - t0)

    columns = list(NEEDED)
    table = bench_table(rows)
    n = table.num_rows
    figures: dict[str, float] = {"rows": float(n)}
    with tempfile.TemporaryDirectory(prefix="mqconform-bench-") as tmp:
        store = Path(tmp) / "store"
        write_bench_store(store, table)
        figures["store_bytes_per_row"] = sum(f.stat().st_size for f in hstore.history_files(store)) / n
        in_memory = [table.select(columns)]  # a list: cleared before Spark needs the memory
        del table
        figures["python_rows_per_s"] = max(rate(n, lambda: checks_python.compute_stats(
            hstore.read_store_table(store, columns, dictionary=True))) for _ in range(2))
        figures["python_rows_per_s_checks_only"] = max(
            rate(n, lambda: checks_python.compute_stats(in_memory[0])) for _ in range(2))
        in_memory.clear()
        spark = get_session(master)
        checks_spark.compute_stats(spark, store)  # warm-up: JVM, code generation
        figures["spark_rows_per_s"] = rate(n, lambda: checks_spark.compute_stats(spark, store))
    figures["spark_over_python"] = figures["spark_rows_per_s"] / figures["python_rows_per_s"]
    return figures


def run(args: argparse.Namespace) -> int:
    if args.target == "model":
        print_model(bench_model(args.ops))
        return 0
    elif args.target == "suite":
        figures = bench_suite()
    elif args.target == "adapters":
        from .bench_adapters import bench_adapters

        figures = bench_adapters([a for a in args.adapters.split(",") if a], args.n)
    else:
        figures = bench_pipeline(args.rows, getattr(args, "master", None))
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value:>14,.2f}")
    return 0
