"""A concurrent Jepsen-style queue workload: run -> heal -> quiesce -> drain -> check.

The shape of the 2014 Jepsen RabbitMQ queue test (testing-anchors.md 1.2). Producer threads send
unique values ``p<k>-<n>`` (a per-producer counter, as jepsen-io/nats does, so losses can be placed
before, between or after what was read); consumer threads receive and acknowledge. Each thread has
its own adapter instance (adapters are not thread-safe), all opened with ``shared_namespace=True``
on one namespace, so they address one physical queue. A nemesis thread (``faults=("restart",)``)
stops and starts a broker the command started itself (an
:class:`~mqconform.adapters.nats.server.EmbeddedNatsServer`: same port, same JetStream store).
At the end producers, nemesis and consumers stop, the broker is healed, the queue quiesces, and one
drain process receives and acknowledges until the broker counts the queue empty (bounded by time);
for an adapter without a message counter, until receives have found nothing for ``idle_s``.
Consumers use the adapter's own consumer mode (pull, else a prefetch of one: see
:func:`mqconform.adapters._base.simple_consumer`).

Every operation is one history record pair in the vocabulary of ``mqconform run`` (``send`` with
``{"to", "id", "size"}``, ``receive`` with the consumer name and the delivered id as ok value,
``ack`` with ``{"consumer", "id"}``), so the pipeline's total-queue and lost checks apply (evidence
for DELIVERY-2, DELIVERY-6, DELIVERY-7, DELIVERY-15). A process that gets ``info`` is crashed and
comes back under a new process id (Jepsen's convention); nemesis records are ``info`` on process
``nemesis`` (``stop``/``start``). The drain is recorded as ``f="drain"`` (invoke, then ok with
``{"received", "empty"}`` or info when it ran out of time) followed by one final ``counters``
observation. :func:`analyse` reads the history back and says what was lost and where.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from mqconform.adapters._base import simple_consumer
from mqconform.adapters.contract import Adapter, AdapterError, Result
from mqconform.adapters.nats.server import EmbeddedNatsServer
from mqconform.adapters.registry import load_adapter
from mqconform.history import HistoryWriter
from mqconform.operations import call_operation

QUEUE = "soak"
MACHINE = "soak"
#: adapter options the soak sets unless the user gives them: a short ack wait (a delivery lost with
#: its consumer's connection comes back within the drain) and a 1 s request timeout (nats-py leaves a
#: request in flight at a server stop waiting for the whole timeout)
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {"nats": {"ack_wait_s": 2.0, "request_timeout": 1.0}}
#: send completions meaning the broker took the message
ACCEPTED = frozenset({"accepted", "paged"})
CLIENT_OPS = ("send", "receive", "ack")


@attrs.frozen
class SoakConfig:
    """What to run: the workload, the faults and the bounds of every phase (seconds)."""

    adapter: str
    options: Mapping[str, Any]
    namespace: str
    duration_s: float
    producers: int = 2
    consumers: int = 2
    faults: tuple[str, ...] = ()
    fault_interval_s: float = 1.0
    fault_down_s: float = 0.3
    quiesce_s: float = 0.5
    drain_timeout_s: float = 30.0
    message_size: int = 100
    #: how long a crashed process keeps trying to reconnect before it gives up
    reconnect_s: float = 15.0
    #: without a message counter the drain ends after receives found nothing for this long
    idle_s: float = 1.0


# --------------------------------------------------------------------------------- managed broker
#: the broker the soak starts itself and the nemesis restarts (same port, same JetStream store);
#: the name stays for mqconform.commands.soak
ManagedNats = EmbeddedNatsServer
BROKER_NAME = "nats"


# ------------------------------------------------------------------------------------- the workload
@attrs.define
class SoakRun:
    """What the workload did, beyond the history: phase times (s since start) and problems."""

    run_s: float = 0.0
    #: the run phase in history time (ns since the run directory was created)
    run_window_ns: tuple[int, int] = (0, 0)
    drain_s: float = 0.0
    drained: int = 0
    drain_empty: bool = False
    restarts: int = 0
    problems: list[str] = attrs.Factory(list)


class _Soak:
    """The shared state of one soak: config, history, stop signals, the problem list."""

    def __init__(self, config: SoakConfig, history: HistoryWriter) -> None:
        self.config = config
        self.history = history
        self.stop_producers = threading.Event()
        self.stop_consumers = threading.Event()
        self.stop_nemesis = threading.Event()
        self.abort = threading.Event()
        self.restarts = 0
        self.problems: list[str] = []
        self._lock = threading.Lock()

    def problem(self, text: str) -> None:
        with self._lock:
            if text not in self.problems:
                self.problems.append(text)
        self.abort.set()

    def new_adapter(self) -> Adapter:
        return load_adapter(self.config.adapter, **self.config.options)


class _Client:
    """One logically single-threaded process with its own adapter; crashed on `info`, it reconnects
    under a new process id (``<base>.<generation>``)."""

    def __init__(self, soak: _Soak, base: str, stop: threading.Event) -> None:
        self.soak = soak
        self.base = base
        self.stop = stop
        self.generation = 0
        self.process = base
        self.adapter: Adapter | None = None

    def stopped(self) -> bool:
        return self.stop.is_set() or self.soak.abort.is_set()

    def call(self, op: str, args: Any, process: str | None = None) -> Result:
        assert self.adapter is not None
        queue = QUEUE if op in ("send", "queue", "consumer") else None
        who = process or self.process
        self.soak.history.record("invoke", op, args, process=who, queue=queue)
        try:
            result = call_operation(self.adapter, op, args)
        except Exception as exc:  # an adapter bug: unknown outcome, never ok
            result = Result.info(f"{type(exc).__name__}: {exc}")
        self.soak.history.record(result.type, op, result.value if result.is_ok else result.error,
                                 process=who, queue=queue)
        return result

    def crash(self) -> None:
        """Forget the connection; the next connect() is a new process (Jepsen's crashed process)."""
        adapter, self.adapter = self.adapter, None
        if adapter is not None:
            _dispose(adapter)
        self.generation += 1
        self.process = f"{self.base}.{self.generation}"

    def connect(self, setup: Callable[[], bool]) -> bool:
        """Open a fresh adapter on the shared namespace and run `setup` (declarations); retry until
        it works, the process is told to stop, or reconnect_s passes."""
        deadline = time.monotonic() + self.soak.config.reconnect_s
        while not self.stopped() and time.monotonic() < deadline:
            try:
                self.adapter = self.soak.new_adapter()
                self.adapter.open(self.soak.config.namespace)
            except AdapterError:
                self.crash()
                time.sleep(0.05)
                continue
            if setup():
                return True
            self.crash()
            time.sleep(0.05)
        if not self.stopped():
            self.soak.problem(f"{self.base}: could not reconnect within {self.soak.config.reconnect_s:g} s")
        return False

    def declare_queue(self) -> bool:
        result = self.call("queue", {"name": QUEUE})
        if result.type == "fail":
            self.soak.problem(f"{self.base}: declaring the queue failed: {result.error}")
        return result.is_ok

    def close(self) -> None:
        if self.adapter is not None:
            _dispose(self.adapter)
            self.adapter = None


class _Producer(_Client):
    """Sends p<k>-0, p<k>-1, ... until told to stop."""

    def __init__(self, soak: _Soak, k: int) -> None:
        super().__init__(soak, f"p{k}", soak.stop_producers)
        self.k = k

    def run(self) -> None:
        n = 0
        try:
            while not self.stopped():
                if self.adapter is None and not self.connect(self.declare_queue):
                    return
                result = self.call("send", {"to": QUEUE, "id": f"p{self.k}-{n}",
                                            "size": self.soak.config.message_size})
                n += 1
                if result.type == "info":
                    self.crash()
                elif result.type == "fail":
                    time.sleep(0.02)
        finally:
            self.close()


class _Consumer(_Client):
    """Receives and acknowledges until told to stop; its consumer name is its process id."""

    def __init__(self, soak: _Soak, name: str, stop: threading.Event) -> None:
        super().__init__(soak, name, stop)

    def setup(self) -> bool:
        if not self.declare_queue():
            return False
        assert self.adapter is not None
        config = simple_consumer(self.adapter.capabilities, self.process, QUEUE)
        result = self.call("consumer", {"name": self.process, "queue": QUEUE,
                                        "window_bytes": config.window_bytes,
                                        "max_unacked": config.max_unacked})
        if result.type == "fail":
            self.soak.problem(f"{self.base}: opening a consumer failed: {result.error}")
        return result.is_ok

    def close(self) -> None:
        """Close the consumer, then its connection. Recorded: the broker returns what it had pushed to
        the consumer and the application never received, so later first deliveries on the queue are
        not ordered by the order check (DELIVERY-4 cuts at a close)."""
        if self.adapter is not None:
            self.call("close", self.process)
        super().close()

    def crash(self) -> None:
        """A lost connection returns the consumer's messages like a close: recorded as one that did
        not complete."""
        if self.adapter is not None:
            self.soak.history.record("invoke", "close", self.process, process=self.process)
            self.soak.history.record("info", "close", "connection dropped", process=self.process)
        super().crash()

    def take_one(self) -> bool | None:
        """One receive (+ ack): True when a message came, False when none, None after a crash."""
        if self.adapter is None and not self.connect(self.setup):
            return None
        got = self.call("receive", self.process)
        if got.type == "info":
            self.crash()
            return None
        if not got.is_ok or got.value is None:
            return False
        acked = self.call("ack", {"consumer": self.process, "id": got.value})
        if acked.type == "info":
            self.crash()
        return True

    def run(self) -> None:
        idle = 0.001
        try:
            while not self.stopped():
                took = self.take_one()
                if took is False:
                    time.sleep(idle)
                    idle = min(idle * 2, 0.05)
                elif took:
                    idle = 0.001
        finally:
            self.close()


def _dispose(adapter: Adapter) -> None:
    with contextlib.suppress(Exception):
        shutdown = getattr(adapter, "shutdown", None)
        if callable(shutdown):
            shutdown()
        else:
            adapter.close()


def _nemesis(soak: _Soak, broker: EmbeddedNatsServer) -> None:
    """Restart the broker every fault_interval_s, keeping its port and store (Jepsen: nemesis ops
    are info on both ends)."""
    config = soak.config
    while not soak.stop_nemesis.wait(config.fault_interval_s) and not soak.abort.is_set():
        value = {"broker": BROKER_NAME, "port": broker.port}
        soak.history.record("info", "stop", value, process="nemesis")
        broker.halt()
        soak.history.record("info", "stop", value, process="nemesis")
        time.sleep(config.fault_down_s)
        soak.history.record("info", "start", value, process="nemesis")
        try:
            broker.start()
        except AdapterError as exc:
            soak.history.record("info", "start", {**value, "error": str(exc)}, process="nemesis")
            soak.problem(f"nemesis: the broker did not come back: {exc}")
            return
        soak.restarts += 1
        soak.history.record("info", "start", value, process="nemesis")


def _drain(soak: _Soak, run: SoakRun) -> None:
    """Receive and acknowledge until the broker counts the queue empty (an adapter without a
    message counter: until receives found nothing for idle_s) or drain_timeout_s passes; then one
    final counters observation (the pipeline's lost check reads the last one)."""
    config = soak.config
    drainer = _Consumer(soak, "d0", threading.Event())
    soak.history.record("invoke", "drain", {"queue": QUEUE}, process="drain", queue=QUEUE)
    t0 = time.monotonic()
    deadline = t0 + config.drain_timeout_s
    counters: dict[str, Any] | None = None
    last_seen = t0
    by = "counters"
    try:
        while time.monotonic() < deadline and not soak.abort.is_set():
            took = drainer.take_one()
            if took:
                run.drained += 1
                last_seen = time.monotonic()
                continue
            if took is None or drainer.adapter is None:
                continue
            if "counter:message_count" not in drainer.adapter.capabilities:
                by = "idle"
                if time.monotonic() - last_seen >= config.idle_s:
                    run.drain_empty = True
                    break
                time.sleep(0.01)
                continue
            seen = drainer.adapter.counters(QUEUE)
            if seen.is_ok and isinstance(seen.value, dict):
                counters = dict(seen.value)
                if counters.get("message_count") == 0:
                    run.drain_empty = True
                    break
            time.sleep(0.05)
    finally:
        run.drain_s = time.monotonic() - t0
        outcome = {"received": run.drained, "empty": run.drain_empty, "by": by}
        soak.history.record("ok" if run.drain_empty else "info", "drain", outcome, process="drain",
                            queue=QUEUE)
        if counters is not None:
            # the soak queue has no ring and no dead-letter address: nothing can be replaced or
            # killed, so those are 0 by configuration (said so in the record)
            missing = [k for k in ("replaced", "killed") if k not in counters]
            counters.update({k: 0 for k in missing})
            if missing:
                counters["by_configuration"] = missing
            soak.history.record("ok", "counters", counters, process="observer", queue=QUEUE)
        drainer.close()


def _join(threads: list[threading.Thread], timeout_s: float, soak: _Soak) -> None:
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            soak.problem(f"{thread.name} did not stop within {timeout_s:g} s")


def run_workload(config: SoakConfig, history: HistoryWriter, broker: EmbeddedNatsServer | None) -> SoakRun:
    """Run the workload into `history` (a thread-safe writer); the broker must already be up."""
    soak = _Soak(config, history)
    run = SoakRun()
    producers = [_Producer(soak, k) for k in range(config.producers)]
    consumers = [_Consumer(soak, f"c{k}", soak.stop_consumers) for k in range(config.consumers)]
    clients: list[_Producer | _Consumer] = [*producers, *consumers]
    workers = [threading.Thread(target=c.run, name=c.base, daemon=True) for c in clients]
    nemesis = None
    if "restart" in config.faults and broker is not None:
        nemesis = threading.Thread(target=_nemesis, args=(soak, broker), name="nemesis", daemon=True)
    t0 = time.monotonic()
    start_ns = time.monotonic_ns() - history.run.start_ns
    for thread in workers:
        thread.start()
    if nemesis is not None:
        nemesis.start()
    soak.abort.wait(config.duration_s)
    run.run_s = time.monotonic() - t0
    run.run_window_ns = (start_ns, time.monotonic_ns() - history.run.start_ns)
    # stop the producers and the nemesis, heal (the nemesis always ends with the broker up)
    soak.stop_producers.set()
    soak.stop_nemesis.set()
    grace = config.reconnect_s + 10.0
    if nemesis is not None:
        _join([nemesis], config.fault_down_s + 20.0, soak)
    if broker is not None and not broker.running():
        with contextlib.suppress(AdapterError):
            broker.start()
    _join(workers[:config.producers], grace, soak)
    soak.stop_consumers.set()
    _join(workers[config.producers:], grace, soak)
    run.restarts = soak.restarts
    if not soak.abort.is_set():
        time.sleep(config.quiesce_s)
        _drain(soak, run)
    run.problems = list(soak.problems)
    history.flush()
    return run


# ------------------------------------------------------------------------------------------ analysis
@attrs.define
class SoakReport:
    """Jepsen total-queue accounting of one soak history, and where the losses are."""

    ops: dict[str, dict[str, int]] = attrs.Factory(dict)
    #: completed send/receive/ack operations inside the run window given to analyse()
    run_ops: int = 0
    run_sends_ok: int = 0
    attempted: int = 0
    acknowledged: int = 0
    failed: int = 0
    indeterminate: int = 0
    delivered: int = 0
    distinct_delivered: int = 0
    duplicated: int = 0
    unexpected: int = 0
    refused_delivered: int = 0
    recovered: int = 0
    lost: list[str] = attrs.Factory(list)
    #: lost ids by producer, then by where in that producer's sequence: prefix | middle | postfix
    lost_by_producer: dict[str, dict[str, int]] = attrs.Factory(dict)
    #: lost ids by phase: "no faults", "before restart 1", "during restart i", "after restart i"
    lost_by_phase: dict[str, int] = attrs.Factory(dict)
    restarts: int = 0
    drain: dict[str, Any] | None = None

    def figures(self) -> dict[str, int]:
        return {"attempted": self.attempted, "acknowledged": self.acknowledged, "failed": self.failed,
                "indeterminate": self.indeterminate, "delivered": self.delivered,
                "distinct_delivered": self.distinct_delivered, "lost": len(self.lost),
                "duplicated": self.duplicated, "unexpected": self.unexpected,
                "refused_delivered": self.refused_delivered, "recovered": self.recovered,
                "restarts": self.restarts}


def _producer_seq(msg_id: str) -> tuple[str, int] | None:
    head, sep, tail = msg_id.rpartition("-")
    return (head, int(tail)) if sep and tail.isdigit() else None


def analyse(history_file: Path, run_window_ns: tuple[int, int] | None = None) -> SoakReport:
    """Read a soak history and do Jepsen's total-queue accounting (lost = acknowledged sends never
    delivered; unexpected = delivered, never sent; recovered = delivered after an indeterminate
    send), placing each lost id in its producer's sequence and in the nemesis timeline."""
    report = SoakReport()
    pending: dict[str, str] = {}  # process -> id of its open send
    sent: dict[str, tuple[int, int | None, str | None]] = {}  # id -> invoke time, completion, outcome
    deliveries: Counter[str] = Counter()
    windows: list[list[int]] = []  # [stop invoke time, start completion time]
    ops: dict[str, Counter[str]] = {}
    nemesis_seen = 0
    with history_file.open(encoding="utf-8") as stream:
        for line in stream:
            rec = json.loads(line)
            f, type_, value, process, t = rec["f"], rec["type"], rec["value"], rec["process"], rec["time"]
            if process == "nemesis":
                nemesis_seen += 1
                step = (nemesis_seen - 1) % 4  # stop invoke, stop done, start invoke, start done
                if step == 0:
                    windows.append([t, t])
                elif step == 3:
                    windows[-1][1] = t
                continue
            if type_ != "invoke":
                ops.setdefault(f, Counter())[type_] += 1
                if f in CLIENT_OPS and run_window_ns and run_window_ns[0] <= t <= run_window_ns[1]:
                    report.run_ops += 1
                    report.run_sends_ok += f == "send" and type_ == "ok"
            if f == "drain" and type_ != "invoke":
                report.drain = value if isinstance(value, dict) else None
            if f == "send":
                if type_ == "invoke":
                    msg_id = str(value["id"])
                    pending[process] = msg_id
                    sent[msg_id] = (t, None, None)
                    continue
                msg_id = pending.pop(process, "")
                if msg_id in sent:
                    outcome = ("accepted" if type_ == "ok" and value in ACCEPTED
                               else "refused" if type_ in ("ok", "fail") else "info")
                    sent[msg_id] = (sent[msg_id][0], t, outcome)
            elif f == "receive" and type_ == "ok" and isinstance(value, str):
                deliveries[value] += 1
    report.ops = {f: dict(c) for f, c in sorted(ops.items())}
    report.restarts = sum(1 for w in windows if w[1] > w[0])
    outcomes = Counter(o for _, _, o in sent.values())
    report.attempted = len(sent)
    report.acknowledged = outcomes["accepted"]
    report.failed = outcomes["refused"]
    report.indeterminate = outcomes["info"] + outcomes[None]
    report.delivered = sum(deliveries.values())
    report.distinct_delivered = len(deliveries)
    report.duplicated = report.delivered - report.distinct_delivered
    for msg_id in deliveries:
        fate = sent[msg_id][2] if msg_id in sent else "never sent"
        report.unexpected += fate == "never sent"
        report.refused_delivered += fate == "refused"
        report.recovered += fate in ("info", None)
    report.lost = sorted((m for m, (_, _, o) in sent.items() if o == "accepted" and m not in deliveries),
                         key=lambda m: _producer_seq(m) or (m, 0))
    read: dict[str, list[int]] = {}
    for msg_id in deliveries:
        seq = _producer_seq(msg_id)
        if seq is not None:
            read.setdefault(seq[0], []).append(seq[1])
    for msg_id in report.lost:
        seq = _producer_seq(msg_id)
        producer, n = seq if seq is not None else (msg_id, 0)
        seen = read.get(producer)
        where = ("prefix" if not seen or n < min(seen) else "postfix" if n > max(seen) else "middle")
        entry = report.lost_by_producer.setdefault(producer, {"prefix": 0, "middle": 0, "postfix": 0})
        entry[where] += 1
        phase = _phase(sent[msg_id][0], sent[msg_id][1], windows)
        report.lost_by_phase[phase] = report.lost_by_phase.get(phase, 0) + 1
    return report


def _phase(start: int, end: int | None, windows: list[list[int]]) -> str:
    """Where a send falls in the nemesis timeline."""
    if not windows:
        return "no faults"
    stop = end if end is not None else start
    after = 0
    for i, (w0, w1) in enumerate(windows, start=1):
        if start <= w1 and stop >= w0:
            return f"during restart {i}"
        if w1 < start:
            after = i
    return f"after restart {after}" if after else "before restart 1"


def default_options(adapter: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The adapter options of every soak client: the soak defaults, the user's, shared_namespace."""
    options = {**DEFAULT_OPTIONS.get(adapter, {}), **given, "shared_namespace": True}
    return options


def promises_durability(adapter: str, options: Mapping[str, Any]) -> bool:
    """Whether acknowledged messages must survive a broker restart (nats: unless storage=memory)."""
    return not (adapter == "nats" and options.get("storage") == "memory")


def managed_broker_for(adapter: str, options: Mapping[str, Any]) -> bool:
    """Whether the soak starts the broker itself (and so may restart it): nats without a URL."""
    return adapter == "nats" and not options.get("url") and not os.environ.get("MQCONFORM_NATS_URL")
