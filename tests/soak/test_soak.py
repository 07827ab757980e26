"""`mqconform soak`: short concurrent soaks against the embedded nats-server (with and without broker
restarts) and the machine's Redis, the total-queue accounting on hand-made histories, the usage and
broker-down exits, the adapters' shared_namespace option and the thread-safe history writer.
No mocks, no skips: a missing broker is a failure."""

from __future__ import annotations

import json
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from mqconform.adapters.contract import Result
from mqconform.adapters.nats import NatsAdapter
from mqconform.adapters.nats.server import EmbeddedNatsServer
from mqconform.adapters.redis import RedisAdapter
from mqconform.cli import main
from mqconform.history import RunDirectory
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.soak import analyse

REDIS_URL = "redis://127.0.0.1:6379/0"


def soak(tmp_path: Path, *argv: str) -> tuple[int, dict[str, Any], Path]:
    out = tmp_path / "run"
    code = main(["soak", "--out", str(out), "--producers", "2", "--consumers", "2", *argv])
    meta = json.loads((out / "run.json").read_text())
    return code, meta, out


def history(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "history" / "soak.jsonl").read_text().splitlines()]


def assert_accounting_consistent(figures: dict[str, int]) -> None:
    """Every distinct delivered id is an accepted send not lost, a recovered indeterminate one, a
    refused one or an unexpected one; nothing is counted twice."""
    f = figures
    assert f["attempted"] >= f["acknowledged"] > 0
    assert f["attempted"] == f["acknowledged"] + f["failed"] + f["indeterminate"]
    assert f["distinct_delivered"] == (f["acknowledged"] - f["lost"] + f["recovered"]
                                       + f["refused_delivered"] + f["unexpected"])
    assert f["delivered"] == f["distinct_delivered"] + f["duplicated"]


@pytest.mark.broker("nats")
@pytest.mark.rules("DELIVERY-2", "DELIVERY-6", "DELIVERY-7")
def test_soak_embedded_nats_loses_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, meta, out = soak(tmp_path, "--duration", "2.5s")
    printed = capsys.readouterr().out
    assert code == 0, printed
    figures = meta["soak"]
    assert figures["lost"] == 0 and figures["unexpected"] == 0 and figures["restarts"] == 0
    assert figures["acknowledged"] > 50
    # a send that timed out under load is indeterminate: it may arrive (recovered) or not, never refused
    assert figures["refused_delivered"] == 0
    assert figures["distinct_delivered"] == figures["acknowledged"] + figures["recovered"]
    assert_accounting_consistent(figures)
    assert meta["status"] == "complete" and meta["exit_code"] == 0
    records = history(out)
    assert [r["index"] for r in records] == list(range(len(records)))  # one writer, index order
    processes = {r["process"] for r in records}
    assert {"p0", "p1", "c0", "c1", "drain", "observer"} <= processes
    drain = [r for r in records if r["f"] == "drain"]
    assert [r["type"] for r in drain] == ["invoke", "ok"] and drain[1]["value"]["empty"] is True
    assert [r["f"] for r in records[-3:]] == ["counters", "close", "close"]  # the drainer closes last
    assert records[-3]["value"]["message_count"] == 0
    closes = {r["process"] for r in records if r["f"] == "close" and r["type"] == "invoke"}
    assert closes == {"c0", "c1", "d0"}  # each consumer's close is recorded (DELIVERY-4 cuts there)
    sent = {r["value"]["id"] for r in records if r["f"] == "send" and r["type"] == "invoke"}
    assert all(i.split("-")[0] in ("p0", "p1") for i in sent)
    assert "total-queue         pass" in printed and "lost                pass" in printed
    assert "verdict: PASS" in printed
    assert (out / "report" / "junit.xml").is_file()


@pytest.mark.broker("nats")
@pytest.mark.rules("DELIVERY-2", "DELIVERY-6", "DELIVERY-7", "DELIVERY-21")
def test_soak_with_broker_restarts_reports_consistent_figures(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, meta, out = soak(tmp_path, "--duration", "3s", "--faults", "restart", "--fault-interval", "1s",
                           "--fault-down", "0.2s", "--no-report", "-o", "request_timeout=1")
    printed = capsys.readouterr().out
    figures = meta["soak"]
    assert code in (0, 1), printed
    assert figures["restarts"] >= 1
    assert_accounting_consistent(figures)
    assert code == (1 if figures["lost"] or figures["unexpected"] else 0)
    # JetStream file storage keeps accepted messages across a clean restart
    assert figures["lost"] == 0, printed
    records = history(out)
    nemesis = [r for r in records if r["process"] == "nemesis"]
    assert nemesis and all(r["type"] == "info" for r in nemesis)
    assert {r["f"] for r in nemesis} == {"stop", "start"}
    # a crashed process comes back under a new id; nothing in flight at a restart is recorded ok
    assert any("." in r["process"] for r in records if r["process"][0] in "pc")
    assert any(r["type"] in ("info", "fail") for r in records if r["f"] in ("send", "receive", "ack"))
    assert "nemesis:" in printed and "lost 0" in printed


@pytest.mark.broker("redis")
@pytest.mark.rules("DELIVERY-1", "DELIVERY-2", "DELIVERY-6")
def test_soak_redis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, meta, _out = soak(tmp_path, "--adapter", "redis", "--url", REDIS_URL, "--duration", "1.5s",
                            "--no-report")
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert meta["soak"]["lost"] == 0 and meta["soak"]["acknowledged"] > 50
    assert_accounting_consistent(meta["soak"])
    assert "counter-identity    pass" in printed


class LossyRedis(RedisAdapter):
    """A broken broker: accepts every send, but silently drops p0's message number 7 of every ten."""

    def send(self, to: str, message: Message) -> Result:
        if message.id.startswith("p0-") and message.id.endswith("7"):
            return Result.ok("accepted")
        return super().send(to, message)


@pytest.mark.broker("redis")
@pytest.mark.rules("DELIVERY-2")
def test_soak_catches_a_broker_that_loses_accepted_messages(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, meta, _out = soak(tmp_path, "--adapter", "test_soak:LossyRedis", "--url", REDIS_URL,
                            "--duration", "1s", "--no-report")
    printed = capsys.readouterr().out
    assert code == 1, printed
    lost = meta["lost_ids"]
    assert lost and all(i.startswith("p0-") and i.endswith("7") for i in lost)
    assert meta["soak"]["lost"] == len(lost) and meta["soak"]["unexpected"] == 0
    assert "LOST" in printed and "producer p0: prefix" in printed and "verdict: FAIL" in printed


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_broker_down_is_exit_3_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = main(["soak", "--url", f"nats://127.0.0.1:{port}", "--duration", "1s", "--out",
                 str(tmp_path / "run")])
    assert code == 3
    assert "cannot reach the broker" in one_line_error(capsys)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--adapter", "reference"], "cannot share one queue"),
    (["--adapter", "redis", "--faults", "restart"], "needs a broker the command starts"),
    (["--producers", "0"], "at least 1"),
])
def test_usage_errors_are_exit_2_with_one_line(argv: list[str], message: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["soak", "--duration", "1s", "--out", str(tmp_path / "run"), *argv]) == 2
    assert message in one_line_error(capsys)


# ------------------------------------------------------------------------ analysis on known histories
def write_history(tmp_path: Path, ops: list[tuple[str, str, str, Any]]) -> Path:
    run = RunDirectory(tmp_path / "h", "nats", "jetstream", {})
    writer = run.history("soak")
    for process, type_, f, value in ops:
        writer.record(type_, f, value, process=process)  # type: ignore[arg-type]
    writer.close()
    return tmp_path / "h" / "history" / "soak.jsonl"


def send(process: str, msg_id: str, outcome: str = "ok") -> list[tuple[str, str, str, Any]]:
    value = "accepted" if outcome == "ok" else "nats: boom"
    return [(process, "invoke", "send", {"to": "soak", "id": msg_id}), (process, outcome, "send", value)]


def receive(process: str, msg_id: str) -> list[tuple[str, str, str, Any]]:
    return [(process, "invoke", "receive", process), (process, "ok", "receive", msg_id)]


def restart() -> list[tuple[str, str, str, Any]]:
    return [("nemesis", "info", f, {"broker": "nats"}) for f in ("stop", "stop", "start", "start")]


@pytest.mark.rules("DELIVERY-2", "DELIVERY-6")
def test_analyse_places_losses_by_producer_sequence_and_restart(tmp_path: Path) -> None:
    ops = [*send("p0", "p0-0"), *send("p0", "p0-1"), *send("p1", "p1-0"), *restart(),
           *send("p0", "p0-2"), *send("p0", "p0-3"), *send("p1", "p1-1", "info"),
           *send("p1.1", "p1-2", "fail"), *send("p1.1", "p1-3"),
           *receive("c0", "p0-1"), *receive("c0", "p0-3"), *receive("c0", "p0-3"),
           *receive("c0", "p1-1"), *receive("c0", "x-9")]
    report = analyse(write_history(tmp_path, ops))
    assert report.lost == ["p0-0", "p0-2", "p1-0", "p1-3"]
    assert report.lost_by_producer == {"p0": {"prefix": 1, "middle": 1, "postfix": 0},
                                       "p1": {"prefix": 1, "middle": 0, "postfix": 1}}
    assert report.lost_by_phase == {"before restart 1": 2, "after restart 1": 2}
    assert (report.attempted, report.acknowledged, report.failed, report.indeterminate) == (8, 6, 1, 1)
    assert (report.delivered, report.distinct_delivered, report.duplicated) == (5, 4, 1)
    assert (report.recovered, report.unexpected, report.restarts) == (1, 1, 1)


def test_analyse_without_faults_and_losses(tmp_path: Path) -> None:
    report = analyse(write_history(tmp_path, [*send("p0", "p0-0"), *receive("c0", "p0-0")]))
    assert report.lost == [] and report.lost_by_phase == {} and report.restarts == 0
    assert report.figures()["lost"] == 0 and report.ops == {"receive": {"ok": 1}, "send": {"ok": 1}}


def test_threadsafe_history_writer_keeps_index_order(tmp_path: Path) -> None:
    run = RunDirectory(tmp_path / "t", "reference", "artemis", {})
    writer = run.history("soak", threadsafe=True)

    def work(k: int) -> None:
        for n in range(500):
            writer.record("ok", "send", {"id": f"p{k}-{n}"}, process=f"p{k}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    records = [json.loads(line) for line in (tmp_path / "t" / "history" / "soak.jsonl").open()]
    assert [r["index"] for r in records] == list(range(2000))
    assert [r["time"] for r in records] == sorted(r["time"] for r in records)


# ------------------------------------------------------------------- the adapters' shared namespaces
def _join_one_queue(owner: Any, joiner: Any, namespace: str) -> None:
    """Two shared-namespace adapters declare the same queue: what one sends, the other receives."""
    owner.open(namespace)
    joiner.open(namespace)
    assert owner.declare_queue(QueueConfig(name="q")).is_ok
    assert joiner.declare_queue(QueueConfig(name="q")).is_ok
    assert joiner.send("q", Message(id="m1")).value == "accepted"
    assert owner.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=0)).is_ok
    assert owner.receive("c").value == "m1"


@pytest.mark.broker("nats")
def test_nats_shared_namespace_joins_one_stream() -> None:
    server = EmbeddedNatsServer().start()
    namespace = f"mqct-shared-{uuid.uuid4().hex[:6]}"
    owner, joiner = (NatsAdapter(url=server.url, shared_namespace=True) for _ in range(2))
    try:
        _join_one_queue(owner, joiner, namespace)
        joiner.close()  # the joiner created nothing: the stream stays
        assert owner.counters("q").value["message_count"] == 1
        assert owner.ack("c", "m1").is_ok
        owner.close()  # the owner created the stream: it goes
        owner.open(namespace)
        assert owner.declare_queue(QueueConfig(name="q")).is_ok
        assert owner.counters("q").value == {"message_count": 0, "added": 0}
    finally:
        owner.shutdown()
        joiner.shutdown()
        server.stop()


@pytest.mark.broker("redis")
def test_redis_shared_namespace_joins_one_stream() -> None:
    namespace = f"mqct-shared-{uuid.uuid4().hex[:6]}"
    owner, joiner = RedisAdapter(url=REDIS_URL, shared_namespace=True), RedisAdapter(
        url=REDIS_URL, shared_namespace=True)
    raw = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        _join_one_queue(owner, joiner, namespace)
        joiner.close()
        assert raw.exists(f"{namespace}:q") == 1
        owner.close()
        assert raw.exists(f"{namespace}:q") == 0
        plain = RedisAdapter(url=REDIS_URL)
        plain.open(namespace)
        assert plain.prefix != namespace  # without the option every open gets its own token
        plain.close()
    finally:
        owner.close()
        joiner.close()
        raw.close()


@pytest.mark.broker("rabbitmq")
@pytest.mark.rules("DELIVERY-1", "DELIVERY-2", "DELIVERY-6")
def test_soak_rabbitmq(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, meta, out = soak(tmp_path, "--adapter", "rabbitmq", "--duration", "1.5s", "--no-report")
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert meta["soak"]["lost"] == 0 and meta["soak"]["acknowledged"] > 50
    assert_accounting_consistent(meta["soak"])
    drain = [r for r in history(out) if r["f"] == "drain" and r["type"] != "invoke"]
    assert drain[0]["value"]["by"] == "counters" and drain[0]["value"]["empty"] is True


@pytest.mark.broker("activemq")
@pytest.mark.rules("DELIVERY-2", "DELIVERY-6")
def test_soak_activemq_with_prefetch_consumers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, meta, out = soak(tmp_path, "--adapter", "activemq", "--duration", "1.5s", "--no-report")
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert meta["soak"]["lost"] == 0 and meta["soak"]["acknowledged"] > 50
    assert_accounting_consistent(meta["soak"])
    records = history(out)
    consumers = [r for r in records if r["f"] == "consumer" and r["type"] == "invoke"]
    # ActiveMQ refuses pull consumers: the soak opens prefetch-1 consumers instead
    assert consumers and all(r["value"]["window_bytes"] == -1 and r["value"]["max_unacked"] == 1
                             for r in consumers)
    drain = [r for r in records if r["f"] == "drain" and r["type"] != "invoke"]
    assert drain[0]["value"]["by"] == "idle" and drain[0]["value"]["empty"] is True


def test_mqtt_is_not_soakable_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["soak", "--adapter", "mqtt", "--duration", "1s", "--out", str(tmp_path / "run")]) == 2
    assert "cannot share one queue" in one_line_error(capsys)


@pytest.mark.broker("nats")
def test_embedded_nats_restart_keeps_port_and_store() -> None:
    server = EmbeddedNatsServer().start()
    adapter = NatsAdapter(url=server.url, shared_namespace=True)
    namespace = f"mqct-restart-{uuid.uuid4().hex[:6]}"
    try:
        adapter.open(namespace)
        assert adapter.declare_queue(QueueConfig(name="q")).is_ok
        assert adapter.send("q", Message(id="m1")).value == "accepted"
        port, workdir, pid = server.port, server.workdir, server.pid
        server.restart()
        assert (server.port, server.workdir) == (port, workdir) and server.pid != pid
        adapter.shutdown()
        adapter = NatsAdapter(url=server.url, shared_namespace=True)
        adapter.open(namespace)
        assert adapter.declare_queue(QueueConfig(name="q")).is_ok  # joins the kept stream
        assert adapter.counters("q").value["message_count"] == 1
        server.restart(keep_store=False)
        assert server.port == port
        assert adapter.counters("q").type == "info"  # the old connection is gone
    finally:
        adapter.shutdown()
        server.stop()
    assert server.workdir is None and not Path(workdir or "/nonexistent").exists()
