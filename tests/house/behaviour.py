"""Record what the suite does on fixed seeds, normalised so that only behaviour is compared.

A recording is one `mqconform run` (a child process, the command a user types) on seed 1 with the
`dev` settings cut to a few examples, read back from its run directory: the run's summary, the
outcome of every rule per machine and every history record. Wall-clock and timing fields (`time`,
`timing`, `started`, `finished`, round-trip figures), the run id and the library versions are
dropped; nothing else is. The recordings are the model (the `reference` adapter) under its default
profile and under `jetstream` (so every area runs against the model), and three real brokers the
test suite already runs: the machine's Redis and RabbitMQ services and NATS on its embedded server
(NATS and RabbitMQ without `expiry`, whose real-clock waits take half a minute each).

A golden file is JSON Lines: the run's summary, one `outcome` line per (machine, rule), then one
array per history record, `[machine, example, index, process, type, f, queue, value]`.

Regenerate the golden files after a change that is meant to change behaviour:

    .venv/bin/python -m tests.house.behaviour --write
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden"
ROOT = Path(__file__).resolve().parents[2]

COMMON = ("--settings", "dev", "--max-examples", "3", "--seed", "1", "--no-report")
#: name -> the `mqconform run` arguments of the recording
RECORDINGS: dict[str, tuple[str, ...]] = {
    "model-artemis": ("--adapter", "reference"),
    "model-jetstream": ("--adapter", "reference", "-o", "implementation=jetstream"),
    "redis": ("--adapter", "redis"),
    "nats": ("--adapter", "nats", "--areas", "delivery,ring,redelivery,retention"),
    "rabbitmq": ("--adapter", "rabbitmq", "--areas", "delivery,ring,redelivery"),
}
#: run.json fields that say what happened (the rest is wall clock, versions and the run id)
SUMMARY_FIELDS = ("adapter", "profile", "exit_code", "status", "aborted", "outcomes", "deviations",
                  "not_run", "set_aside", "settings", "seed", "strict")
OUTCOME_DROPPED = ("v", "run")
#: the history fields kept, in order (`v`, `run`, `adapter`, `profile` are the summary's; `time` is
#: wall clock)
HISTORY_KEPT = ("machine", "example", "index", "process", "type", "f", "queue", "value")


def record(name: str) -> list[str]:
    """Run recording `name` and return its normalised lines."""
    with tempfile.TemporaryDirectory(prefix="mqc-behaviour-") as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "mqconform.cli", "run", *RECORDINGS[name], *COMMON, "--out", str(out)]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
        if not (out / "run.json").exists():
            raise RuntimeError(f"{name}: no run directory ({done.returncode}): {done.stderr[-2000:]}")
        return list(_normalised(out))


def _normalised(out: Path) -> Iterator[str]:
    meta = json.loads((out / "run.json").read_text())
    yield _line({"summary": {key: meta.get(key) for key in SUMMARY_FIELDS}})
    outcomes = [json.loads(line) for line in (out / "outcomes.jsonl").read_text().splitlines() if line]
    for row in sorted(outcomes, key=lambda r: (r["machine"], r["rule"])):
        yield _line({"outcome": _without(row, OUTCOME_DROPPED)})
    for path in sorted((out / "history").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line:
                row = json.loads(line)
                yield _line([row[key] for key in HISTORY_KEPT])


def _without(row: dict[str, Any], dropped: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key not in dropped}


def _line(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.jsonl"


def first_difference(expected: list[str], actual: list[str]) -> str | None:
    """None when the two recordings agree, else the first differing line of each, with context."""
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            before = expected[index - 1] if index else "(start)"
            return f"line {index + 1}, after {before}\n  golden:   {want}\n  recorded: {got}"
    if len(expected) != len(actual):
        shorter = "the recording" if len(actual) < len(expected) else "the golden file"
        common = min(len(expected), len(actual))
        longer = expected if len(actual) < len(expected) else actual
        return f"{shorter} ends at line {common}; next: {longer[common]}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the golden files")
    parser.add_argument("names", nargs="*", default=list(RECORDINGS), help="recordings (default: all)")
    args = parser.parse_args(argv)
    status = 0
    for name in args.names:
        lines = record(name)
        if args.write:
            GOLDEN.mkdir(exist_ok=True)
            golden_path(name).write_text("\n".join(lines) + "\n")
            print(f"{name}: {len(lines)} lines written to {golden_path(name)}")
            continue
        difference = first_difference(golden_path(name).read_text().splitlines(), lines)
        print(f"{name}: {'same' if difference is None else difference}")
        status |= difference is not None
    return status


if __name__ == "__main__":
    sys.exit(main())
