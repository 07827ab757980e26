"""`mqconform bench adapters`: round trips per second through an adapter next to its raw client loop,
and the state machines' steps per second against the broker.

Each adapter's module offers ``raw_roundtrip_loop(n, url=...) -> float`` (send, receive, ack with the
broker's own client, strictly sequential); the same loop through the adapter contract gives the
overhead ratio (raw / adapter; the goal is <= 1.3). Both loops use the same broker: an adapter that
started an embedded one (nats) hands its URL to the raw loop. An adapter that cannot be loaded or
reached is skipped with a one-line note on stderr. Figures are printed, never asserted.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqconform.adapters._base import roundtrip_rate, simple_consumer
from mqconform.adapters.contract import Adapter, AdapterError
from mqconform.adapters.registry import AdapterLoadError, load_adapter
from mqconform.reference_model.config import Message, QueueConfig
from mqconform.text import first_line

#: machines whose steps per second are measured (every broker adapter can run them)
MACHINE_AREAS = ("delivery", "ring")
WARMUP = 20


def _roundtrips(adapter: Adapter, n: int) -> float:
    """send + receive + ack through an opened adapter, n times (60 s at most); round trips per second.
    The consumer is in the mode the adapter offers (pull, else a prefetch of one)."""
    queue = adapter.declare_queue(QueueConfig("q"))
    consumer = adapter.open_consumer(simple_consumer(adapter.capabilities, "c", "q"))
    if not (queue.is_ok and consumer.is_ok):
        problem = queue.error or consumer.error
        raise AdapterError(f"{adapter.name}: cannot set up the benchmark queue: {problem}")

    def step(tag: str) -> Callable[[int], None]:
        def one(i: int) -> None:
            if not adapter.send("q", Message(f"{tag}{i}")).is_ok:
                raise AdapterError(f"{adapter.name}: send failed during the benchmark")
            got = adapter.receive("c")
            if got.is_ok and got.value is not None:
                adapter.ack("c", got.value)
        return one

    roundtrip_rate(WARMUP, step("w"))
    return roundtrip_rate(n, step("m"))


def _broker_url(adapter: Any) -> str | None:
    """The URL the adapter talks to (its option, or its own server's: nats `server`, activemq
    `broker`)."""
    server = getattr(adapter, "server", None) or getattr(adapter, "broker", None)
    if server is not None and getattr(server, "url", None):
        return str(server.url)
    url = getattr(adapter, "url", None)
    return str(url) if url else None


def _steps_per_second(adapter: Adapter, max_examples: int) -> dict[str, float]:
    from mqconform.conformance.exploring import settings as suite_settings
    from mqconform.conformance.exploring.registry import MACHINES
    from mqconform.conformance.exploring.runner import run_machine
    from mqconform.history import RunDirectory
    from mqconform.reference_model.profiles import profile

    claimed = profile(adapter.profile)
    hyp = suite_settings.get("ci", database=None, max_examples=max_examples)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDirectory(Path(tmp), adapter.name, claimed.name, {})
        for area in MACHINE_AREAS:
            result = run_machine(MACHINES[area], lambda: adapter, claimed, hyp, run, max_reruns=0)
            steps = result.steps / 2  # one invoke and one completion record per step
            figures[f"steps_per_s.{area}"] = steps / result.seconds if result.seconds else 0.0
        run.finish(0)
    return figures


def bench_adapter(name: str, n: int, max_examples: int = 10, **options: Any) -> dict[str, float]:
    """The figures of one adapter (AdapterLoadError / AdapterError when it cannot be used)."""
    adapter = load_adapter(name, **options)
    module = sys.modules[type(adapter).__module__]  # the adapter's own module, not its room's package
    raw_loop = getattr(module, "raw_roundtrip_loop", None)
    figures: dict[str, float] = {}
    try:
        adapter.open(f"mqc-bench-{int(time.time())}")
        try:
            through = _roundtrips(adapter, n)
        finally:
            adapter.close()
        figures["adapter_roundtrips_per_s"] = through
        if callable(raw_loop):
            raw = float(raw_loop(n, url=_broker_url(adapter)))
            figures["raw_roundtrips_per_s"] = raw
            figures["overhead_ratio"] = raw / through if through else float("nan")
        else:
            print(f"bench: {name}: no raw_roundtrip_loop in {module.__name__}; overhead not measured",
                  file=sys.stderr)
        figures.update(_steps_per_second(adapter, max_examples))
    finally:
        shutdown = getattr(adapter, "shutdown", None)
        if callable(shutdown):
            shutdown()
    return figures


def bench_adapters(names: list[str], n: int, max_examples: int = 10) -> dict[str, float]:
    """`mqconform bench adapters`: per adapter, `<name>.<figure>`; unusable adapters are skipped."""
    figures: dict[str, float] = {}
    for name in names:
        try:
            found = bench_adapter(name, n, max_examples)
        except (AdapterLoadError, AdapterError) as exc:
            print(f"bench: skipping {name}: {first_line(exc)}", file=sys.stderr)
            continue
        figures.update({f"{name}.{key}": value for key, value in found.items()})
    return figures
