"""Generated histories for the pipeline's tests, with optional injected faults (not shipped: the
benchmark's own history is :mod:`mqconform.commands.bench_history`).

:func:`write_run_dir` writes a run directory in the format of :mod:`mqconform.history` (JSON Lines),
simulating a correct priority queue (sends recorded as the suite records them: a priority only when
not the default 4, a delivery time only when scheduled; receives, each followed by a ``delivery_count``
observation; acks, nacks, counters observations) and injecting the named :data:`FAULTS`.
:func:`spark_bench_store` builds a store of the benchmark's rows
(:func:`~mqconform.commands.bench_history.bench_table`) of any size with Spark itself (``spark.range``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from mqconform.commands.bench_history import (
    PATTERN_F,
    PATTERN_MSG,
    PATTERN_PROCESS,
    PATTERN_RESULT,
    PATTERN_TYPE,
    PER_EXAMPLE,
    write_run_meta,
)
from mqconform.history import SCHEMA_VERSION
from mqconform.reference_model.config import DEFAULT_PRIORITY

#: fault name -> what it does (and which check must notice it)
FAULTS = {
    "lost": "an accepted message vanishes from the queue and its counters (lost)",
    "duplicate": "a message is delivered twice without a nack (total-queue duplicated, still a pass)",
    "unexpected": "a consumer receives an id that was never sent (total-queue, DELIVERY-6)",
    "counter": "one counters observation breaks messageCount = sum of parts (DELIVERY-1)",
    "after-ack": "an acknowledged message is delivered again (DELIVERY-7)",
    "ring": "one counters observation shows pending above the ring size (RING-17)",
    "throttle": "one throttle observation shows in-flight above high + 1 (THROTTLE-7)",
    "double-answer": "a request is answered twice (ADMISSION-7)",
    "early-timeout": "a request is answered TIMEOUT before its wait limit (ADMISSION-3)",
    "drain": "not a fault: the example ends with a final drain (Jepsen total-queue accounting)",
    "drained-lost": "a final drain, and an accepted message vanishes (lost, by the drain accounting)",
    "ack-info": "not a fault: an ack completes info (unknown) but happened (lost must not fail)",
    "address": "not a fault: sends go to an address the queue is bound to (lost is still known)",
    "filter": "not a fault: the queue bound to the address has a filter (lost not applicable)",
    "expired": "not a fault: an accepted message expires, counted in the queue's expired counter "
               "(EXPIRY-7; lost must not fail)",
    "expired-uncounted": "an accepted message is gone and the counters show no expired counter: expiry "
                         "may explain it, so lost is unknown, never a pass nor a fail",
    "killed-restart": "not a fault: an accepted message is killed (the killed counter counts it), then a "
                      "broker restart zeroes the counters: the count before the restart is carried over "
                      "(lost must pass)",
    "kept-counters-loss": "a message is killed and counted, the broker restarts keeping its counters, and "
                          "another accepted message vanishes: the kept count is not added twice, so lost "
                          "is unknown (a restart), never a pass",
    "silent-bound": "not a fault: under the mosquitto profile a bounded queue drops an accepted message "
                    "silently (RING-21; lost not applicable)",
    "reorder": "a consumer first-receives a message before one whose send completed before its own was "
               "invoked (same priority, not scheduled: DELIVERY-4)",
    "count-decrease": "a message's delivery count drops from 2 to 1 when it is redelivered (REDELIVERY-1)",
    "priority": "not a fault: the last message, priority 9, overtakes earlier default-priority ones "
                "(DELIVERY-3)",
    "scheduled": "not a fault: a message scheduled later is delivered after later-sent ones (SCHED-1)",
    "concurrent": "not a fault: two producers' sends overlap (invoke A, invoke B, ok B, ok A); B is "
                  "delivered before A",
    "redelivered": "not a fault: a nacked message is delivered again after later-sent ones (only first "
                   "deliveries are ordered)",
    "restarted": "not a fault: after a restart step later first deliveries are out of send "
                 "order (the order check stops at a restart, as at a broker stop/start)",
    "corrupt": "a truncated JSON line in a history file",
    "version": "a history record with an unknown schema version",
    "incomplete": "run.json says the run is incomplete",
}


#: the order and delivery-count cases: they need at least three messages
ORDER_CASES = frozenset({"reorder", "count-decrease", "priority", "scheduled", "concurrent", "redelivered",
                         "restarted"})
HIGH_PRIORITY = 9
SCHEDULED_AT_MS = 100  # the "scheduled" case's message becomes deliverable when the model clock is here


class _Sim:
    """A correct single-queue priority broker, recording Jepsen-shaped records of one example."""

    def __init__(self, out: list[dict[str, Any]], run: str, adapter: str, profile: str, machine: str,
                 example: int, ring: int) -> None:
        self.out, self.run, self.adapter, self.profile, self.machine = out, run, adapter, profile, machine
        self.example, self.ring = example, ring
        self.pending: list[str] = []
        self.delivering: list[str] = []
        self.scheduled: list[str] = []
        self.priority: dict[str, int] = {}  # messages sent with a priority other than the default
        self.deliveries: dict[str, int] = {}  # message -> its delivery count
        self.added = self.acknowledged = self.expired = self.killed = 0
        self.shows_expired = True  # the "expired-uncounted" case: the counters have no expired field
        self.skew = 0  # counter fault: added to messageCount once

    def rec(self, process: str, type_: str, f: str, queue: str | None, value: Any) -> None:
        self.out.append({"v": SCHEMA_VERSION, "run": self.run, "adapter": self.adapter,
                         "profile": self.profile, "machine": self.machine, "example": self.example,
                         "index": len(self.out), "time": 1000 * len(self.out), "process": process,
                         "type": type_, "f": f, "queue": queue, "value": value})

    def op(self, process: str, f: str, queue: str | None, args: Any, result: Any) -> None:
        self.rec(process, "invoke", f, queue, args)
        self.rec(process, "ok", f, queue, result)

    def counters(self, pending_extra: int = 0) -> None:
        pending = len(self.pending) + pending_extra
        self.rec("observer", "ok", "counters", "q", {
            "message_count": pending + len(self.delivering) + len(self.scheduled) + self.skew,
            "pending_count": pending, "delivering_count": len(self.delivering),
            "scheduled_count": len(self.scheduled), "paged_count": 0,
            "added": self.added, "acknowledged": self.acknowledged, "replaced": 0, "killed": self.killed,
            **({"expired": self.expired} if self.shows_expired else {})})
        self.skew = 0

    def send_args(self, target: str, msg: str, priority: int = DEFAULT_PRIORITY,
                  scheduled_at: int | None = None) -> dict[str, Any]:
        """A send's value as the suite records it: a priority only when not the default (DELIVERY-3),
        a delivery time only when scheduled (SCHED-1)."""
        args: dict[str, Any] = {"to": target, "id": msg, "size": 100}
        if priority != DEFAULT_PRIORITY:
            args["priority"] = self.priority[msg] = priority
        if scheduled_at is not None:
            args["scheduled_at_ms"] = scheduled_at
        return args

    def arrive(self, msg: str, scheduled: bool = False) -> None:
        """An accepted message reaches the queue: pending, or scheduled until :meth:`release`."""
        (self.scheduled if scheduled else self.pending).append(msg)
        self.added += 1
        self.counters()

    def release(self) -> None:
        """The model clock reaches the scheduled messages' time: they become pending (SCHED-1)."""
        self.op("control", "advance", None, SCHEDULED_AT_MS, None)
        self.pending.extend(self.scheduled)
        self.scheduled.clear()
        self.counters()

    def take(self) -> str:
        """The head of the pending list: highest priority first, FIFO within a level (DELIVERY-3, 4)."""
        msg = max(self.pending, key=lambda m: self.priority.get(m, DEFAULT_PRIORITY))
        self.pending.remove(msg)
        return msg

    def receive(self, msg: str) -> None:
        """A delivery to c-q, then its delivery count as the suite observes it (REDELIVERY-1)."""
        self.op("c-q", "receive", None, "c-q", msg)
        self.deliveries[msg] = self.deliveries.get(msg, 0) + 1
        self.rec("observer", "ok", "delivery_count", "q", {"id": msg, "count": self.deliveries[msg]})


def _sends(sim: _Sim, target: str, count: int, faults: set[str]) -> None:
    """Send m0 .. m<count - 1> one after another, shaped by the order cases (see FAULTS)."""
    overlapping = 2 if "concurrent" in faults else 0
    for i in range(count - overlapping):
        msg = f"m{i}"
        priority = HIGH_PRIORITY if "priority" in faults and i == count - 1 else DEFAULT_PRIORITY
        scheduled = "scheduled" in faults and i == 1
        sim.op("producer", "send", target,
               sim.send_args(target, msg, priority, SCHEDULED_AT_MS if scheduled else None), "accepted")
        sim.arrive(msg, scheduled)
    if overlapping:  # invoke A, invoke B, ok B, ok A: B reaches the queue first
        first, second = f"m{count - 2}", f"m{count - 1}"
        sim.rec("producer", "invoke", "send", target, sim.send_args(target, first))
        sim.rec("producer-2", "invoke", "send", target, sim.send_args(target, second))
        sim.rec("producer-2", "ok", "send", target, "accepted")
        sim.arrive(second)
        sim.rec("producer", "ok", "send", target, "accepted")
        sim.arrive(first)
    if faults & {"reorder", "restarted"}:
        sim.pending[1], sim.pending[2] = sim.pending[2], sim.pending[1]


def _example(sim: _Sim, rnd: random.Random, faults: set[str]) -> None:
    if "silent-bound" in faults and sim.ring < 0:
        sim.ring = 8  # a bound that may drop silently
    declaration: dict[str, Any] = {"name": "q", "ring_size": sim.ring}
    target = "q"
    if faults & {"address", "filter"}:
        target = "a"
        sim.op("control", "address", "a", {"name": "a"}, None)
        declaration["address"] = "a"
        if "filter" in faults:
            declaration["filter"] = "color = 'red'"
    sim.op("control", "queue", "q", declaration, None)
    sim.op("control", "consumer", "q", {"name": "c-q", "queue": "q", "window_bytes": 0}, None)
    sim.counters()
    count = rnd.randint(2, max(2, sim.ring if sim.ring > 0 else 6))
    _sends(sim, target, max(count, 3) if faults & ORDER_CASES else count, faults)
    if faults & {"lost", "drained-lost", "expired", "expired-uncounted", "silent-bound"}:
        sim.pending.pop()  # the broker forgets it (or it expires, or the bound dropped it silently)
        sim.expired += "expired" in faults
        sim.shows_expired = "expired-uncounted" not in faults
        sim.counters()
    if faults & {"killed-restart", "kept-counters-loss"}:
        sim.pending.pop(0)  # killed (e.g. at its delivery limit): counted
        sim.killed += 1
        sim.counters()
        if "kept-counters-loss" in faults:
            sim.pending.pop()  # the broker forgets it
        sim.op("control", "restart", None, "kill", None)
        if "killed-restart" in faults:  # counters kept in memory start again at 0
            sim.added = sim.acknowledged = sim.killed = 0
        sim.counters()
    if "counter" in faults:
        sim.skew = 1
        sim.counters()
    if "ring" in faults:
        sim.counters(pending_extra=sim.ring + 1 - len(sim.pending))
    if "throttle" in faults:
        sim.op("control", "throttle", "t", {"name": "t", "max_sessions": 2}, None)
        sim.rec("observer", "ok", "throttle_state", "t", {"in_flight": 4, "blocked": True})
    if "unexpected" in faults:
        sim.op("c-q", "receive", None, "c-q", "zz-never-sent")
    _deliver_all(sim, rnd, faults)
    sim.op("c-q", "close", None, "c-q", None)
    sim.pending[:0] = sim.delivering
    sim.delivering = []
    if faults & {"drain", "drained-lost"}:
        sim.rec("drain", "invoke", "drain", "q", {"queue": "q"})
        sim.rec("drain", "ok", "drain", "q", {"received": 0, "empty": True})
    sim.counters()
    _answers(sim, faults)


def _deliver_all(sim: _Sim, rnd: random.Random, faults: set[str]) -> None:
    """Deliver to c-q until nothing is left (releasing scheduled messages last), each delivery acked
    or nacked; "redelivered" nacks m1 once, "count-decrease" twice and resets its count once."""
    nacks = ["m1"] * (("redelivered" in faults) + 2 * ("count-decrease" in faults))
    while sim.pending or sim.scheduled:
        if not sim.pending:
            sim.release()
        msg = sim.take()
        sim.receive(msg)
        sim.delivering.append(msg)
        sim.counters()
        if "restarted" in faults and msg == "m0":
            sim.op("control", "restart", None, "graceful", None)
        if "duplicate" in faults and msg == "m0":
            sim.receive(msg)
        choice = rnd.random()
        forced = msg in nacks
        if forced or (choice < 0.2 and msg != "m0"):
            if forced:
                nacks.remove(msg)
            sim.op("c-q", "nack", None, {"consumer": "c-q", "id": msg}, "ok")
            sim.delivering.remove(msg)
            sim.pending.append(msg)
            if forced and "count-decrease" in faults and sim.deliveries[msg] == 2:
                sim.deliveries[msg] = 0  # the broker forgets the count: the next delivery shows 1
        elif choice < 0.9 or msg == "m0":
            if "ack-info" in faults and msg == "m0":  # the ack happened; its answer was lost
                sim.rec("c-q", "invoke", "ack", None, {"consumer": "c-q", "id": msg})
                sim.rec("c-q", "info", "ack", None, "timeout")
            else:
                sim.op("c-q", "ack", None, {"consumer": "c-q", "id": msg}, "ok")
            sim.delivering.remove(msg)
            sim.acknowledged += 1
            if "after-ack" in faults and msg == "m0":
                sim.receive(msg)
        sim.counters()


def _answers(sim: _Sim, faults: set[str]) -> None:
    """Admission answers as the admission machine observes them (send queue, wait limit 200 ms)."""
    def answer(request: str, kind: str, at: int) -> None:
        sim.rec("observer", "ok", "answer", "send", {"id": request, "answer": kind, "at_ms": at,
                                                     "submitted_ms": 0, "wait_ms": 200})

    answer("r1", "TIMEOUT_CLEAN_QUEUE", 210)
    answer("r2", "taken", 5)
    if "double-answer" in faults:
        answer("r2", "TIMEOUT_CLEAN_QUEUE", 220)
    if "early-timeout" in faults:
        answer("r3", "TIMEOUT_CLEAN_QUEUE", 150)


def generate_records(run: str, examples: int = 5, seed: int = 0, faults: frozenset[str] = frozenset(),
                     adapter: str = "generated", profile: str = "artemis",
                     machine: str = "delivery") -> list[dict[str, Any]]:
    """History records of `examples` examples; each fault is injected into example 2 only."""
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    for example in range(1, examples + 1):
        sim = _Sim(out, run, adapter, profile, machine, example, ring=rnd.choice((-1, 4, 8)))
        _example(sim, rnd, set(faults) if example == 2 else set())
    return out


def write_run_dir(path: Path, run: str = "gen-run", examples: int = 5, seed: int = 0,
                  faults: frozenset[str] | set[str] = frozenset(), adapter: str = "generated",
                  profile: str = "artemis", started: str = "2026-01-02T03:04:05Z") -> Path:
    """Write a run directory (run.json, history/delivery.jsonl, outcomes.jsonl) with faults."""
    unknown = set(faults) - set(FAULTS)
    if unknown:
        raise ValueError(f"unknown faults {sorted(unknown)}")
    record_faults = frozenset(faults) - {"corrupt", "version", "incomplete"}
    if "silent-bound" in faults:
        profile = "mosquitto"  # RING-21: its bound drops new messages silently
    records = generate_records(run, examples, seed, record_faults, adapter, profile)
    (path / "history").mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r, separators=(",", ":")) for r in records]
    if "version" in faults:
        rec = dict(records[len(records) // 2], v=SCHEMA_VERSION + 98)
        lines[len(records) // 2] = json.dumps(rec, separators=(",", ":"))
    if "corrupt" in faults:
        lines[len(lines) // 3] = lines[len(lines) // 3][:17]
    (path / "history" / "delivery.jsonl").write_text("\n".join(lines) + "\n")
    complete = "incomplete" not in faults
    meta = {"v": SCHEMA_VERSION, "run": run, "adapter": adapter, "profile": profile, "settings": {},
            "started": started, "finished": started if complete else None,
            "status": "complete" if complete else "incomplete", "exit_code": 0 if complete else None,
            "versions": {"python": "3"}}
    (path / "run.json").write_text(json.dumps(meta, indent=2))
    (path / "outcomes.jsonl").write_text(json.dumps({
        "v": SCHEMA_VERSION, "run": run, "adapter": adapter, "profile": profile, "machine": "delivery",
        "rule": "DELIVERY-6", "outcome": "pass", "examples": examples, "counterexample": None,
        "message": None}) + "\n")
    return path


def spark_bench_store(spark: Any, store: Path, rows: int, run: str = "big-run",
                      adapter: str = "bench") -> None:
    """The same rows as :func:`~mqconform.commands.bench_history.bench_table`, generated and written by
    Spark (``spark.range``)."""
    from pyspark.sql import functions as F

    from mqconform.reports.read import store as hstore

    hstore.init_store(store)
    n = max(7, rows - rows % 7)

    def pick(values: tuple[Any, ...]) -> Any:
        expr = F.lit(None)
        for i, value in enumerate(values):
            expr = F.when(F.col("slot") == i, F.lit(value)).otherwise(expr)
        return expr

    counter = F.when(F.col("slot") == 6, F.lit(0).cast("long")).otherwise(F.lit(None).cast("long"))
    done = F.when(F.col("slot") == 6, (F.col("message") % PER_EXAMPLE) + 1)
    df = (spark.range(n).withColumnRenamed("id", "index")
          .withColumn("slot", (F.col("index") % 7).cast("int"))
          .withColumn("message", F.floor(F.col("index") / 7)))
    df = df.select(
        F.lit(run).alias("run"), F.lit("artemis").alias("profile"), F.lit("delivery").alias("machine"),
        (F.floor(F.col("message") / PER_EXAMPLE) + 1).cast("long").alias("example"),
        F.col("index").cast("long").alias("index"), (F.col("index") * 1000).alias("time"),
        pick(PATTERN_PROCESS).cast("string").alias("process"),
        pick(PATTERN_TYPE).cast("string").alias("type"), pick(PATTERN_F).cast("string").alias("f"),
        F.lit("q").alias("queue"),
        F.when(pick(PATTERN_MSG).cast("boolean"),
               F.concat(F.lit("m"), (F.col("message") % PER_EXAMPLE).cast("string"))).alias("msg"),
        pick(PATTERN_RESULT).cast("string").alias("result"),
        F.when(F.col("slot").isin(4, 5), F.lit(False)).alias("tx"),
        F.lit(PER_EXAMPLE).cast("long").alias("bound"),
        *[counter.alias(c) for c in ("c_message", "c_pending", "c_delivering", "c_scheduled", "c_paged")],
        done.cast("long").alias("c_added"), done.cast("long").alias("c_acknowledged"),
        counter.alias("c_replaced"), counter.alias("c_killed"), counter.alias("c_expired"),
        F.lit(None).cast("long").alias("in_flight"),
        F.when(F.col("slot") == 0, F.lit(DEFAULT_PRIORITY)).cast("long").alias("priority"),
        F.lit(None).cast("long").alias("scheduled_at"), F.lit(None).cast("long").alias("delivery_count"),
        F.lit(None).cast("string").alias("value"))
    target = hstore.partition_dir(store, adapter, "2026-01-01")
    df.write.mode("overwrite").parquet(str(target))
    write_run_meta(store, run, adapter)
