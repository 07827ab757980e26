"""Broker faults in the middle of `mqconform run`, end to end through mqconform.cli.main.

A wrapper adapter counts operations and, at the N-th, kills the broker (an embedded nats-server, or a
redis-server the test starts on its own port) and optionally restarts it. The run must end with exit
3 and one clear line on stderr, report no rule of the interrupted machine as `pass`, and keep what it
recorded before the fault in the run directory. No mocks, no skips: real brokers, real kills.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from mqconform.adapters.contract import Result
from mqconform.adapters.nats import NatsAdapter
from mqconform.adapters.nats.server import EmbeddedNatsServer
from mqconform.adapters.redis import RedisAdapter
from mqconform.cli import main
from mqconform.conformance.judging.rules import rules_for

#: what the wrapper adapters do: at the first send from operation number `after` on, call `inject` (once)
PLAN: dict[str, Any] = {"after": 0, "ops": 0, "inject": None, "fired": False}
MODULE = "mqct_fault_adapters"


class _Faulty:
    """Counts adapter operations (every call goes through `_do`) and injects the planned fault just
    before the first send from operation `after` on."""

    def _do(self, op: str, fn: Callable[[], Any]) -> Result:
        PLAN["ops"] += 1
        if PLAN["ops"] >= PLAN["after"] and op == "send" and not PLAN["fired"]:  # hit a recorded step
            PLAN["fired"] = True
            PLAN["inject"]()
        return super()._do(op, fn)  # type: ignore[misc, no-any-return]


class FaultyNats(_Faulty, NatsAdapter):
    pass


class FaultyRedis(_Faulty, RedisAdapter):
    pass


@pytest.fixture
def plan(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Make the wrappers loadable as `mqct_fault_adapters:FaultyNats` (this very module object)."""
    monkeypatch.setitem(sys.modules, MODULE, sys.modules[__name__])
    PLAN.update(after=0, ops=0, inject=None, fired=False)
    return PLAN


def _start_redis(port: int, workdir: Path) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(workdir), "--logfile", str(workdir / "redis.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.5)
    deadline = time.monotonic() + 10
    try:
        while True:
            try:
                client.ping()
                return proc
            except redis.exceptions.ConnectionError:
                assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.02)
    finally:
        client.close()


@pytest.fixture
def own_redis(free_port: int, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    proc = _start_redis(free_port, tmp_path)
    yield proc, f"redis://127.0.0.1:{free_port}/0"
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _outcomes(out: Path) -> dict[str, str]:
    lines = (out / "outcomes.jsonl").read_text().splitlines()
    return {o["rule"]: o["outcome"] for o in map(json.loads, lines)}


def _history(out: Path, machine: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "history" / f"{machine}.jsonl").read_text().splitlines()]


def _run(adapter: str, url: str, out: Path, areas: str) -> int:
    return main(["run", "--adapter", f"{MODULE}:{adapter}", "--url", url, "--areas", areas,
                 "--settings", "ci", "--max-examples", "8", "--no-report", "--out", str(out)])


def test_redis_stopped_mid_run_exits_3_and_keeps_the_record(
        plan: dict[str, Any], own_redis: tuple[subprocess.Popen[bytes], str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    proc, url = own_redis

    def stop() -> None:
        proc.kill()
        proc.wait()

    plan.update(after=30, inject=stop)
    out = tmp_path / "run"
    assert _run("FaultyRedis", url, out, "delivery,ring") == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mqconform: {MODULE}:FaultyRedis: the implementation did not answer (")
    assert "redis" in err and "\n" not in err
    outcomes = _outcomes(out)
    interrupted = {rule for rules in rules_for("delivery").values() for rule in rules}
    never_ran = {rule for rules in rules_for("ring").values() for rule in rules}
    assert interrupted and all(outcomes[r] == "unknown" for r in interrupted)
    assert all(outcomes[r] == "unknown" for r in never_ran)
    assert "pass" not in outcomes.values()
    # what was recorded before the fault is kept, and ends with the operation that got no answer
    history = _history(out, "delivery")
    assert len(history) >= 10 and sum(h["type"] == "ok" for h in history) >= 5
    assert [h["index"] for h in history] == list(range(len(history)))
    assert history[-1]["type"] == "info" and str(history[-1]["value"]).startswith("redis: ")
    meta = json.loads((out / "run.json").read_text())
    assert meta["exit_code"] == 3
    # the ring area could not even open the adapter: the run stopped there and says so
    assert (meta["status"], bool(meta["aborted"])) in (("incomplete", True), ("complete", False))
    assert meta["outcomes"]["pass"] == 0 and meta["outcomes"]["unknown"] == len(outcomes) - \
        meta["outcomes"]["not_applicable"]


def test_nats_restarted_mid_run_exits_3_and_the_next_area_runs(
        plan: dict[str, Any], free_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    servers = [EmbeddedNatsServer(port=free_port).start()]

    def restart() -> None:
        servers[0].kill()
        servers.append(EmbeddedNatsServer(port=free_port).start())

    plan.update(after=20, inject=restart)
    out = tmp_path / "run"
    try:
        code = _run("FaultyNats", servers[0].url, out, "redelivery,ring")
    finally:
        for server in servers:
            server.stop()
    assert len(servers) == 2  # the fault happened
    err = capsys.readouterr().err.strip()
    assert code == 3, err
    assert err.startswith(f"mqconform: {MODULE}:FaultyNats: the implementation did not answer (")
    assert "nats: send: " in err and "\n" not in err
    outcomes = _outcomes(out)
    interrupted = {rule for rules in rules_for("redelivery").values() for rule in rules}
    assert all(outcomes[r] == "unknown" for r in interrupted)
    # after the restart the adapter reconnects: the ring machine ran and its own rules hold
    ring_only = {rule for rules in rules_for("ring").values() for rule in rules} - interrupted
    assert any(outcomes[r] == "pass" for r in ring_only)
    history = _history(out, "redelivery")
    assert history and history[-1]["type"] == "info"
    assert _history(out, "ring")
    meta = json.loads((out / "run.json").read_text())
    assert meta["exit_code"] == 3 and meta["status"] == "complete" and meta["aborted"] is None
