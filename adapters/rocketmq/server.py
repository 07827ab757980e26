"""A private Apache RocketMQ 5.x name server and broker for the `rocketmq` adapter.

The jars are ``org.apache.rocketmq:rocketmq-namesrv``, ``rocketmq-broker`` and ``rocketmq-client``
of one release with their dependencies, fetched once by ``mvn dependency:copy-dependencies`` on a
generated pom into ``~/.cache/mqconform/servers/rocketmq/<version>/lib`` (``$MQCONFORM_CACHE`` moves
it). Each start runs ``NamesrvStartup`` and the broker from those jars (``ROCKETMQ_HOME`` and
``user.home`` a private temporary directory, so logs and the store stay there) on free loopback
ports, with small heaps and a small commit-log file. The broker's main class is the adapter's
``driver/BrokerDriver.java`` (compiled once per source and release into the cache, beside ``lib``):
it starts ``BrokerStartup``'s broker in its JVM and drives its send and pull queues step by step on a
logical clock over a loopback control port, and serves the queues through the broker's own client
classes (``driver/Queues.java``; docs/adapters/rocketmq.md). One send thread and one pull thread
(``sendMessageThreadPoolNums=1``, seed 002); the timer wheel on, pops read the retry topic first and
one revive queue (the queues' returns, in order).

``python -m mqconform.adapters.rocketmq.server --fetch`` warms the cache (setup.sh).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import ClassVar

from .._process import (
    LOOPBACK,
    SHORT_RUN_JIT,
    ServerProcess,
    free_port,
    java,
    maven_release,
    port_accepts,
    release_main,
)
from ..contract import AdapterError

#: the newest 5.x release whose jars Maven Central serves completely (5.5.1 lacks rocketmq-srvutil)
DEFAULT_VERSION = "5.5.0"
SERVED = ("5.3.3", "5.4.0", "5.5.0")
ARTIFACTS = ("rocketmq-namesrv", "rocketmq-broker", "rocketmq-client")
READY_TIMEOUT_S = 180.0
#: small heaps; C1 only, the serial collector and no TLS (no self-signed certificate to make) start
#: faster on two shared cores
JVM = [*SHORT_RUN_JIT, "-XX:+UseSerialGC", "-Dtls.server.mode=disabled"]
NAMESRV_HEAP = [*JVM, "-Xms32m", "-Xmx128m"]
BROKER_HEAP = [*JVM, "-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m"]
#: the driver's sources (package mqconform.rocketmq) and its main class
DRIVER_SOURCES = ("Clock.java", "Queues.java", "BrokerDriver.java")
DRIVER_MAIN = "mqconform.rocketmq.BrokerDriver"
#: the driver rewrites three clock reads with javassist (java.lang), sets queue capacities (j.u.c)
OPENS = ["--add-opens", "java.base/java.lang=ALL-UNNAMED",
         "--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED"]
CONTROL_FILE = "control.port"



def fetch(version: str = DEFAULT_VERSION) -> Path:
    """The folder of release `version`'s jars (``lib/``), fetched through Maven once, under a lock
    (mqconform.releases.maven_jars); AdapterError without mvn or on a failed fetch."""
    return maven_release("rocketmq", version, SERVED, "org.apache.rocketmq", ARTIFACTS,
                         f"rocketmq-broker-{version}.jar")


def classpath(lib: Path) -> str:
    return os.pathsep.join(str(p) for p in sorted(lib.glob("*.jar")))


def driver_classes(lib: Path) -> Path:
    """The folder of the driver's classes compiled against `lib` (javac once per source digest, into
    the cache beside ``lib``; a concurrent compile of the same sources is harmless)."""
    sources = [Path(__file__).with_name("driver") / name for name in DRIVER_SOURCES]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + str(lib).encode()).hexdigest()[:16]
    out = lib.parent / f"driver-{digest}"
    if (out / "mqconform" / "rocketmq" / "BrokerDriver.class").is_file():
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise AdapterError("rocketmq: no javac on PATH to compile the broker driver "
                           "(apt-get install openjdk-17-jdk-headless)")
    tmp = Path(tempfile.mkdtemp(prefix=".driver-", dir=lib.parent))
    done = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", classpath(lib), "-d", str(tmp),
                           *map(str, sources)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise AdapterError(f"rocketmq: the broker driver did not compile: {done.stderr.strip()[-2000:]}")
    try:
        tmp.rename(out)
    except OSError:  # compiled meanwhile by another process
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("", port))  # the HA port binds every interface (DefaultHAService)
        except OSError:
            return False
    return True


def broker_ports() -> int:
    """A listen port P with P-2 (the fast remoting port) and P+1 (HA) free too."""
    for _ in range(50):
        port = free_port()
        if port > 1026 and all(_port_free(p) for p in (port - 2, port + 1)):
            return port
    raise AdapterError("rocketmq: found no free port triple for the broker")


class _JavaProcess(ServerProcess):
    main_class = ""
    conf_name = ""
    heap: ClassVar[list[str]] = []
    ready_line = ""
    ready_timeout_s = READY_TIMEOUT_S
    poll_s = 0.2
    attempts = 1

    def __init__(self, lib: Path, version: str) -> None:
        super().__init__()
        self.lib = lib
        self.version = version

    def _conf(self) -> str:
        raise NotImplementedError

    def _classpath(self) -> str:
        return classpath(self.lib)

    def _jvm(self, workdir: Path) -> list[str]:
        return list(self.heap)

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        (workdir / self.conf_name).write_text(self._conf())
        # ROCKETMQ_HOME: the property MixAll reads before the environment variable
        command = [java("rocketmq"), *self._jvm(workdir), f"-Duser.home={workdir}",
                   f"-Drocketmq.home.dir={workdir}", "-cp", self._classpath(), self.main_class,
                   "-c", str(workdir / self.conf_name)]
        return command, workdir

    def _ready(self) -> bool:
        assert self.workdir is not None
        try:
            seen = self.ready_line in (Path(self.workdir) / self.log_name).read_text(errors="replace")
        except OSError:
            return False
        return seen and port_accepts(self.port)

    def _failure(self, reason: str) -> str:
        return f"rocketmq {self.version}: {self.main_class.rsplit('.', 1)[-1]} did not start: {reason}"


class NamesrvProcess(_JavaProcess):
    dir_prefix = "mqc-rocketmq-namesrv-"
    log_name = "namesrv.out"
    main_class = "org.apache.rocketmq.namesrv.NamesrvStartup"
    conf_name = "namesrv.conf"
    heap = NAMESRV_HEAP
    ready_line = "boot success"

    def _conf(self) -> str:
        return f"listenPort={self.port}\nbindAddress={LOOPBACK}\n"


class BrokerProcess(_JavaProcess):
    dir_prefix = "mqc-rocketmq-broker-"
    log_name = "broker.out"
    main_class = DRIVER_MAIN
    conf_name = "broker.conf"
    heap = BROKER_HEAP
    ready_line = "boot success"

    def __init__(self, lib: Path, version: str, namesrv_port: int) -> None:
        super().__init__(lib, version)
        self.namesrv_port = namesrv_port
        self.requested_port = broker_ports()
        self.classes = driver_classes(lib)

    def _classpath(self) -> str:
        return os.pathsep.join([str(self.classes), classpath(self.lib)])

    def _jvm(self, workdir: Path) -> list[str]:
        return [*self.heap, *OPENS, f"-Dmqc.control={workdir / CONTROL_FILE}"]

    def _ready(self) -> bool:
        return super()._ready() and self.control_port() is not None

    def control_port(self) -> int | None:
        """The driver's control port, once the broker has booted and the driver listens."""
        assert self.workdir is not None
        try:
            return int((Path(self.workdir) / CONTROL_FILE).read_text())
        except (OSError, ValueError):
            return None

    def _conf(self) -> str:
        assert self.workdir is not None
        store = Path(self.workdir) / "store"
        return "\n".join([
            "brokerClusterName=mqconform", "brokerName=mqconform-broker", "brokerId=0",
            f"brokerIP1={LOOPBACK}", f"bindAddress={LOOPBACK}",
            f"namesrvAddr={LOOPBACK}:{self.namesrv_port}",
            f"listenPort={self.port}", f"haListenPort={self.port + 1}",
            f"storePathRootDir={store}", f"storePathCommitLog={store / 'commitlog'}",
            # seed 002: fast failure on, one send thread (and one pull thread); the driver sets the
            # waits, the page-cache busy time and the queue capacities at each reset
            "brokerFastFailureEnable=true", "sendMessageThreadPoolNums=1", "pullMessageThreadPoolNums=1",
            # small files: 16 MiB commit-log segments, small consume queues, no index
            "mappedFileSizeCommitLog=16777216", "mappedFileSizeConsumeQueue=600000",
            "messageIndexEnable=false",
            # the queues (POP): the timer wheel delivers the pop checkpoints the revive service needs
            # to return a closed consumer's messages, and a pop reads the group's retry topic first
            "timerWheelEnable=true", "popFromRetryProbability=100", "reviveQueueNum=1",
            "autoCreateTopicEnable=true", ""])


class RocketMQServer:
    """A name server and one broker of release `version`, started together, stopped together."""

    def __init__(self, version: str = DEFAULT_VERSION, lib: Path | None = None) -> None:
        self.version = version
        self.lib = lib if lib is not None else fetch(version)
        self.namesrv = NamesrvProcess(self.lib, version)
        self.broker: BrokerProcess | None = None

    @property
    def namesrv_addr(self) -> str:
        return f"{LOOPBACK}:{self.namesrv.port}"

    @property
    def broker_addr(self) -> str:
        assert self.broker is not None
        return f"{LOOPBACK}:{self.broker.port}"

    def start(self) -> RocketMQServer:
        self.namesrv.start()
        try:
            self.broker = BrokerProcess(self.lib, self.version, self.namesrv.port)
            self.broker.start()
        except AdapterError:
            self.stop()
            raise
        return self

    def running(self) -> bool:
        return self.namesrv.running() and self.broker is not None and self.broker.running()

    def stop(self) -> None:
        """End both processes at once (SIGKILL: the store is temporary and removed with its directory;
        a clean shutdown takes seconds) and remove their directories."""
        if self.broker is not None:
            self.broker.kill()
            self.broker.stop()
        self.namesrv.kill()
        self.namesrv.stop()


_shared: dict[str, RocketMQServer] = {}


def shared_server(version: str = DEFAULT_VERSION) -> RocketMQServer:
    """The process-wide name server and broker of `version`, started on first use (stopped at exit)."""
    server = _shared.get(version)
    if server is None or not server.running():
        if server is not None:
            server.stop()
        server = RocketMQServer(version).start()
        _shared[version] = server
    return server


def main(argv: list[str] | None = None) -> int:
    """``--fetch``: warm the cache (idempotent); ``--run``: start a name server and broker, wait."""
    return release_main(argv, prog="python -m mqconform.adapters.rocketmq.server", served=SERVED,
                        default=DEFAULT_VERSION, fetch=fetch, start=lambda v: RocketMQServer(v).start(),
                        describe=lambda s: f"{s.namesrv_addr} {s.broker_addr}",
                        wait=lambda s: s.broker.process.wait() if s.broker and s.broker.process else None)

if __name__ == "__main__":
    sys.exit(main())
