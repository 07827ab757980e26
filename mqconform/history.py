"""Run directories and histories: the contract between the suite and the report pipeline.

A run directory holds::

    run.json            run id, adapter, profile, settings, versions, status (incomplete|complete)
    history/<machine>.jsonl   one Jepsen-shaped record per operation (see HistoryRecord)
    outcomes.jsonl      one record per (machine, rule): pass | fail | deviation | not_applicable | unknown
    counterexamples/    <machine>.py (a plain pytest test) and <machine>.yaml (a scenario)

Records are appended and flushed as they happen, so an interrupted run keeps what it recorded and
run.json says `incomplete`; run.json is rewritten atomically (temp file + rename) at the end.
"""

from __future__ import annotations

import json
import os
import platform
import threading
import time
import uuid
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from mqconform.conformance.exploring.shards import Part

SCHEMA_VERSION = 1
RecordType = Literal["invoke", "ok", "fail", "info"]
#: `deviation`: the rule failed only through findings that a registered known deviation of this
#: adapter explains (mqconform/conformance/judging/deviations.yaml, matched per finding by
#: mqconform.conformance.judging.verdict); `mqconform run --strict` reports it as `fail`.
Outcome = Literal["pass", "fail", "deviation", "not_applicable", "unknown"]

#: The fields of one history record, in order; `v` is the schema version.
HISTORY_FIELDS = ("v", "run", "adapter", "profile", "machine", "example", "index", "time", "process",
                  "type", "f", "queue", "value")
OUTCOME_FIELDS = ("v", "run", "adapter", "profile", "machine", "rule", "outcome", "examples",
                  "counterexample", "message")


_dumps = json.JSONEncoder(default=str, separators=(",", ":")).encode


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


class HistoryWriter:
    """Appends history records of one machine to history/<machine>.jsonl.

    With ``threadsafe=True`` several threads may call :meth:`record` at once (`mqconform soak`): a
    lock makes each record's index, time and line one atomic step, so the file is in index order.
    """

    def __init__(self, run: RunDirectory, machine: str, threadsafe: bool = False, *, first_example: int = 0,
                 suffix: str = "") -> None:
        self.run = run
        self.machine = machine
        self.index = 0
        self.example = first_example
        self._prefix: str | None = None
        self._prefix_example = -1
        self._lock: AbstractContextManager[Any] = threading.Lock() if threadsafe else nullcontext()
        self._file: IO[str] = (run.path / "history" / f"{machine}{suffix}.jsonl").open(
            "a", encoding="utf-8")

    def record(self, type_: RecordType, f: str, value: Any = None, *, process: str = "control",
               queue: str | None = None) -> None:
        # The fields before `index` change only per example: their JSON is kept as a prefix, so each
        # record encodes only its own fields (the line is the same as json.dumps of the whole record).
        with self._lock:
            prefix = self._prefix
            if prefix is None or self._prefix_example != self.example:
                prefix = self._prefix = _dumps({
                    "v": SCHEMA_VERSION, "run": self.run.run_id, "adapter": self.run.adapter,
                    "profile": self.run.profile, "machine": self.machine, "example": self.example})[:-1]
                self._prefix_example = self.example
            rest = _dumps({"index": self.index, "time": time.monotonic_ns() - self.run.start_ns,
                           "process": process, "type": type_, "f": f, "queue": queue, "value": value})
            self.index += 1
            self._file.write(f"{prefix},{rest[1:]}\n")

    def flush(self) -> None:
        with self._lock:
            self._file.flush()

    def next_example(self) -> None:
        self.example += 1
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class RunDirectory:
    """A run directory being written (see the module docstring for the layout)."""

    def __init__(self, path: Path, adapter: str, profile: str, settings: dict[str, Any],
                 run_id: str | None = None) -> None:
        self.path = path
        self.adapter = adapter
        self.profile = profile
        self.run_id = run_id or new_run_id()
        self.start_ns = time.monotonic_ns()
        self.meta: dict[str, Any] = {
            "v": SCHEMA_VERSION, "run": self.run_id, "adapter": adapter, "profile": profile,
            "settings": settings, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "finished": None, "status": "incomplete", "exit_code": None, "versions": _versions(),
        }
        (path / "history").mkdir(parents=True, exist_ok=True)
        (path / "counterexamples").mkdir(exist_ok=True)
        write_json_atomic(path / "run.json", self.meta)
        self._outcomes: IO[str] | None = (path / "outcomes.jsonl").open("a", encoding="utf-8")

    @classmethod
    def attach(cls, path: Path, adapter: str, profile: str, run_id: str, start_ns: int) -> RunDirectory:
        """The run directory another process created, opened to append histories only (a worker of
        `mqconform run -n N`): run.json and outcomes.jsonl stay with the process that created it.
        `start_ns` is the creator's `start_ns` (time.monotonic_ns is one clock for every process)."""
        self = cls.__new__(cls)
        self.path, self.adapter, self.profile, self.run_id = path, adapter, profile, run_id
        self.start_ns = start_ns
        self.meta = {}
        self._outcomes = None
        return self

    def history(self, machine: str, threadsafe: bool = False, part: Part | None = None) -> HistoryWriter:
        """The writer of `machine`'s history; `part` (mqconform.conformance.exploring.shards.Part): one of
        several explorations of the area at once, with a file and example numbers of its own."""
        if part is None or part.index == 0:
            return HistoryWriter(self, machine, threadsafe=threadsafe)
        return HistoryWriter(self, machine, threadsafe=threadsafe, first_example=part.first_example,
                             suffix=part.suffix)

    def outcome(self, machine: str, rule: str, outcome: Outcome, *, examples: int = 0,
                counterexample: str | None = None, message: str | None = None) -> None:
        rec = {"v": SCHEMA_VERSION, "run": self.run_id, "adapter": self.adapter, "profile": self.profile,
               "machine": machine, "rule": rule, "outcome": outcome, "examples": examples,
               "counterexample": counterexample, "message": message}
        if self._outcomes is None:
            raise RuntimeError("outcomes are written by the process that created the run directory")
        self._outcomes.write(json.dumps(rec) + "\n")
        self._outcomes.flush()

    def finish(self, exit_code: int, *, complete: bool = True, **extra: Any) -> None:
        """Close the run: run.json gets the exit code and `complete`, or `incomplete` when the run
        stopped before covering everything it was asked to (what it recorded stays valid)."""
        if self._outcomes is not None:
            self._outcomes.close()
        self.meta.update(extra)
        self.meta.update(finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         status="complete" if complete else "incomplete", exit_code=exit_code)
        write_json_atomic(self.path / "run.json", self.meta)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for dist in ("mqconform", "hypothesis", "attrs"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "unknown"
    return found
