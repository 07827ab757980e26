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


def _rate(count: int, fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return count / (time.perf_counter() - t0)


def bench_model(ops: int) -> dict[str, float]:
    """Queue model send/receive/ack throughput, and storage cost after 10^3 vs 10^6 deleted records."""
    from mqconform.reference_model.broker import Broker
    from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig

    broker = Broker()
    broker.declare_queue(QueueConfig("q", ring_size=1000))
    broker.open_consumer(ConsumerConfig("c", "q", window_messages=100))
    messages = [Message(f"m{i}") for i in range(ops // 3)]

    def cycle() -> None:
        send, receive, ack = broker.send, broker.receive, broker.ack
        for message in messages:
            send("q", message)
            receive("c")
            ack("c", message.id)

    results = {"queue_ops_per_s": _rate(3 * len(messages), cycle)}
    results.update(bench_storage(ops))
    return results


def bench_storage(ops: int) -> dict[str, float]:
    from mqconform.reference_model.storage import QueueFile, StoreConfig

    def per_op_after(deleted: int) -> float:
        store = QueueFile(StoreConfig("s", max_bytes=10**12))
        for i in range(deleted):
            store.put(f"d{i}", 100)
        for i in range(deleted):
            store.remove(f"d{i}")
        samples = []
        for round_ in range(5):
            t0 = time.perf_counter()
            for i in range(ops // 10):
                store.put(f"n{round_}-{i}", 100)
            for i in range(ops // 10):
                store.remove(f"n{round_}-{i}")
            samples.append((time.perf_counter() - t0) / (2 * (ops // 10)))
        return statistics.median(samples)

    small, large = per_op_after(1_000), per_op_after(1_000_000)
    return {"storage_ops_per_s": 1 / small, "storage_ops_per_s_after_1e6_deleted": 1 / large,
            "storage_cost_ratio_1e6_vs_1e3": large / small}


def bench_suite() -> dict[str, float]:
    """Steps per second of each machine against the reference adapter; per mutant, time to detection."""
    import tempfile
    from pathlib import Path

    from mqconform.adapters.reference import ReferenceAdapter
    from mqconform.conformance import settings as suite_settings
    from mqconform.conformance.registry import MACHINES
    from mqconform.conformance.runner import run_machine
    from mqconform.history import RunDirectory
    from mqconform.reference_model.profiles import ARTEMIS
    from mqconform.selftest.mutants import MUTANTS

    hyp = suite_settings.get("ci", database=None)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDirectory(Path(tmp), "reference", "artemis", {})
        for area, machine in MACHINES.items():
            result = run_machine(machine, lambda: ReferenceAdapter("artemis"), ARTEMIS, hyp, run)
            steps = result.steps / 2  # one invoke and one completion record per step
            figures[f"steps_per_s.{area}"] = steps / result.seconds if result.seconds else 0.0
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


def run(args: argparse.Namespace) -> int:
    if args.target == "model":
        figures = bench_model(args.ops)
    elif args.target == "suite":
        figures = bench_suite()
    elif args.target == "adapters":
        from mqconform.adapters.bench import bench_adapters

        figures = bench_adapters([a for a in args.adapters.split(",") if a], args.n)
    else:
        from mqconform.reports.bench import bench_pipeline

        figures = bench_pipeline(args.rows)
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value:>14,.2f}")
    return 0
