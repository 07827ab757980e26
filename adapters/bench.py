"""Adapter overhead: round trips per second through an adapter next to the raw client loop.

Each adapter module offers `raw_roundtrip_loop(n, **options) -> float` (send, receive, ack with
the broker's own client); the same loop through the adapter contract gives the overhead ratio.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig

from .contract import AdapterError
from .registry import AdapterLoadError, load_adapter, resolve


def adapter_roundtrips(name: str, n: int, **options: Any) -> float:
    """send + receive + ack through the adapter, n times; round trips per second."""
    adapter = load_adapter(name, **options)
    adapter.open(f"mqc-bench-{int(time.time())}")
    try:
        consumer = ConsumerConfig("c", "q", window_bytes=0)
        adapter.declare_queue(QueueConfig("q"))
        adapter.open_consumer(consumer)
        deadline = time.monotonic() + 60
        t0 = time.perf_counter()
        done = 0
        for i in range(n):
            if time.monotonic() > deadline:
                break
            adapter.send("q", Message(f"m{i}"))
            got = adapter.receive("c")
            if got.is_ok and got.value is not None:
                adapter.ack("c", got.value)
            done += 1
        return done / (time.perf_counter() - t0)
    finally:
        adapter.close()
        shutdown = getattr(adapter, "shutdown", None)
        if callable(shutdown):
            shutdown()


def bench_adapters(names: list[str], n: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    for name in names:
        try:
            through = adapter_roundtrips(name, n)
            module = importlib.import_module(resolve(name).partition(":")[0])
            raw = float(module.raw_roundtrip_loop(n))
        except (AdapterLoadError, AdapterError, AttributeError) as exc:
            print(f"bench: {name}: {exc}")
            continue
        figures[f"{name}.adapter_roundtrips_per_s"] = through
        figures[f"{name}.raw_roundtrips_per_s"] = raw
        figures[f"{name}.overhead_ratio"] = raw / through if through else float("nan")
    return figures
