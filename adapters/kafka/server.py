"""A private Apache Kafka broker for the `kafka` adapter: one KRaft node (broker and controller).

The release is the runtime classpath of ``org.apache.kafka:kafka_2.13:<version>`` fetched once through
``mvn dependency:copy-dependencies`` into the release cache of :mod:`mqconform.releases`
(``~/.cache/mqconform/servers/kafka_2.13/<version>/lib/``; ``$MQCONFORM_CACHE`` moves it). Each broker
gets a private temporary directory with a ``server.properties`` for two free loopback ports (PLAINTEXT
and CONTROLLER), its storage formatted by the release's own ``kafka.tools.StorageTool`` (what
``bin/kafka-storage.sh format --standalone`` runs) with ``--feature share.version=1`` (share groups,
KIP-932: preview in 4.1, production-ready in 4.2; the flag is passed to every release so that none
depends on a default), then ``kafka.Kafka server.properties`` (what ``bin/kafka-server-start.sh``
runs) with a small heap.

Share-group settings for a test broker (GroupCoordinatorConfig / ShareGroupConfig of the release):
heartbeats every 100 ms instead of 5 s and assignments at once (a new group serves its first fetch
within 0.2-0.3 s, a new member of it within 0.1 s); a default acquisition lock of 10 minutes (no lock
runs out within an example unless the queue's consumers ask for an ack wait) and a minimum of 1 s (so a
group may ask for a short ``share.record.lock.duration.ms``, the model's ack wait).

``python -m mqconform.adapters.kafka.server --fetch [--version V]`` warms the cache (setup.sh).
The process plumbing (ports, readiness wait, die-with-parent, stop and removal) is :mod:`.._process`.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import uuid
from pathlib import Path

from .._process import (
    LOOPBACK,
    SHORT_RUN_JIT,
    ServerProcess,
    free_port,
    java,
    last_line,
    port_accepts,
    release_main,
)
from ..contract import AdapterError
from .room import KAFKA_RELEASES

#: the releases Maven Central serves (the kafka room's release line); the default is the newest
SERVED = KAFKA_RELEASES
DEFAULT_VERSION = KAFKA_RELEASES[-1]
READY_TIMEOUT_S = 90.0
HEAP = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", *SHORT_RUN_JIT)
#: broker settings of a one-node test cluster with share groups (see the module docstring)
SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.share.heartbeat.interval.ms": "100",
    "group.share.min.heartbeat.interval.ms": "100",
    "group.share.assignment.interval.ms": "0",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.record.lock.duration.ms": "600000",
    "group.share.max.record.lock.duration.ms": "3600000",
    "auto.create.topics.enable": "false",
}


def fetch(version: str = DEFAULT_VERSION) -> Path:
    """The folder of release `version`'s jars (:func:`mqconform.releases.binary`: mvn into the cache
    once, under a lock); AdapterError without mvn or on a failed fetch."""
    from mqconform.releases import ReleaseError, binary, line

    if version not in SERVED:
        raise AdapterError(f"kafka: release {version} is not served (served: {', '.join(SERVED)})")
    try:
        jar = binary(line("kafka").release(version))
    except ReleaseError as exc:
        raise AdapterError(f"kafka: {exc} (or pass url= to use a running broker)") from None
    return jar.parent


def lib_of(server_bin: str) -> Path:
    """The jar folder of a given broker jar (``<lib>/kafka_2.13-<v>.jar``, what `mqconform matrix`
    passes)."""
    jar = Path(server_bin)
    if not (jar.name.startswith("kafka_2.13-") and jar.suffix == ".jar" and jar.is_file()):
        raise AdapterError(f"kafka: server_bin {server_bin} is not a kafka_2.13-<version>.jar")
    return jar.parent


def cluster_id() -> str:
    """A KRaft cluster id as ``StorageTool random-uuid`` prints one (org.apache.kafka.common.Uuid:
    16 random bytes, URL-safe base64 without padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def server_properties(port: int, controller_port: int, data: Path) -> str:
    """The server.properties of one combined node on 127.0.0.1:`port` (controller on
    `controller_port`), its log in `data`."""
    settings = {
        **SETTINGS,
        "controller.quorum.bootstrap.servers": f"{LOOPBACK}:{controller_port}",
        "listeners": f"PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
        "log.dirs": str(data),
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def first_error(log: Path) -> str:
    """The first line of a Java log that names an exception (else its last line): a stack trace's
    cause, not its last frame."""
    text = log.read_text(errors="replace") if log.exists() else ""
    found = next((ln.strip() for ln in text.splitlines() if "Exception" in ln or "Error:" in ln), None)
    return found or last_line([log])


class KafkaProcess(ServerProcess):
    """One KRaft node: PLAINTEXT on 127.0.0.1:<port>, CONTROLLER on 127.0.0.1:<controller_port>."""

    dir_prefix = "mqc-kafka-"
    log_name = "server.log"
    ready_timeout_s = READY_TIMEOUT_S
    poll_s = 0.1
    attempts = 2

    def __init__(self, version: str = DEFAULT_VERSION, lib: Path | None = None) -> None:
        super().__init__()
        self.version = version
        self.lib = lib if lib is not None else fetch(version)
        self.java = java("kafka")
        self.controller_port = 0

    @property
    def bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def _classpath(self) -> str:
        return str(self.lib / "*")

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        config = workdir / "server.properties"
        if not config.exists():
            self.controller_port = free_port()
            config.write_text(server_properties(self.port, self.controller_port, workdir / "data"))
            self._format(config, workdir)
        return [self.java, *HEAP, "-cp", self._classpath(), "kafka.Kafka", str(config)], workdir

    def _format(self, config: Path, workdir: Path) -> None:
        """``kafka-storage format --standalone --feature share.version=1`` with the release's own
        StorageTool."""
        command = [self.java, *HEAP, "-cp", self._classpath(), "kafka.tools.StorageTool", "format",
                   "-t", cluster_id(), "-c", str(config), "--standalone", "--feature", "share.version=1"]
        log = workdir / "format.log"
        with log.open("wb") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False, cwd=workdir)
        if done.returncode != 0:
            raise AdapterError(f"kafka {self.version}: storage format failed: {first_error(log)}")

    def _ready(self) -> bool:
        return port_accepts(self.port)

    def _failure(self, reason: str) -> str:
        return f"kafka {self.version}: broker did not start: {reason}"


_shared: dict[str, KafkaProcess] = {}


def shared_broker(version: str = DEFAULT_VERSION, lib: Path | None = None) -> KafkaProcess:
    """The process-wide broker of `version` (from `lib` when given), started on first use and reused
    (stopped at exit)."""
    key = str(lib) if lib is not None else version
    broker = _shared.get(key)
    if broker is None or not broker.running():
        broker = KafkaProcess(version, lib).start()
        _shared[key] = broker
    return broker


def main(argv: list[str] | None = None) -> int:
    """``--fetch``: warm the cache with one release (idempotent); ``--run``: start one and wait."""
    return release_main(argv, prog="python -m mqconform.adapters.kafka.server", served=SERVED,
                        default=DEFAULT_VERSION, fetch=fetch, start=lambda v: KafkaProcess(v).start(),
                        describe=lambda b: str(b.bootstrap),
                        wait=lambda b: b.process.wait() if b.process else None)

if __name__ == "__main__":
    sys.exit(main())
