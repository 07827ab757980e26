"""An area in parts on real brokers (`mqconform run --shards K`): on NATS each part starts its own
embedded server; on RabbitMQ the parts share one broker under names of their own. Either way the
parts run at once and the run holds as one exploration does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _run(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mqconform.cli", "run", "--settings", "dev", "--max-examples", "4",
               "--seed", "11", "--shards", "2", "--no-report", "--out", str(out), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)


def _examples(path: Path) -> set[int]:
    return {json.loads(line)["example"] for line in path.read_text().splitlines()}


@pytest.mark.broker("nats")
def test_nats_parts_each_on_an_embedded_server_of_their_own(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _run(out, "--adapter", "nats", "--areas", "ring")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "each area in 2 parts at once" in done.stdout
    first = _examples(out / "history" / "ring.jsonl")
    second = _examples(out / "history" / "ring.1.jsonl")
    assert first and second and not first & second
    assert "time (2 parts at once" in done.stdout


@pytest.mark.broker("rabbitmq")
def test_rabbitmq_parts_share_the_broker_under_names_of_their_own(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _run(out, "--adapter", "rabbitmq", "--areas", "ring")
    assert done.returncode == 0, done.stdout + done.stderr
    meta = json.loads((out / "run.json").read_text())
    assert meta["settings"]["shards"] == 2 and meta["exit_code"] == 0
    assert (out / "history" / "ring.1.jsonl").exists()
