"""A private embedded HornetQ 2.4 server for the `hornetq` adapter.

The jars (``org.hornetq:hornetq-server`` and ``hornetq-stomp-protocol`` with their runtime
dependencies: core client, journal, commons, native, jboss-logging, jgroups, netty 4.0) are fetched
once with ``mvn dependency:copy-dependencies`` on a generated pom into
``~/.cache/mqconform/servers/hornetq/<version>/lib`` (``$MQCONFORM_CACHE`` moves it). The server is
``Launcher.java`` beside this module, run by ``java`` in source-file mode (no build step): one STOMP
acceptor and a line-oriented control socket (address settings, queues, counters, the paging store),
both on free loopback ports, its journal and page files in a private temporary directory.
HornetQ 2.4.9 runs on Java 17 without ``--add-opens`` (measured).

``python -m mqconform.adapters.hornetq.server --fetch`` warms the cache (scripts/setup.sh).
"""

from __future__ import annotations

import contextlib
import socket
import sys
from pathlib import Path

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

#: the 2.4 releases Maven Central serves (maven-metadata.xml of org.hornetq:hornetq-server; 2.4.2,
#: 2.4.8, 2.4.10 and later are not on Central), oldest first; the default is the newest
SERVED = ("2.4.0.Final", "2.4.1.Final", "2.4.3.Final", "2.4.4.Final", "2.4.5.Final", "2.4.6.Final",
          "2.4.7.Final", "2.4.9.Final")
DEFAULT_VERSION = SERVED[-1]
READY_TIMEOUT_S = 90.0
READY_LINE = b"HQMQC ready"
HEAP = ("-Xms64M", "-Xmx256M", *SHORT_RUN_JIT)
LAUNCHER = Path(__file__).with_name("Launcher.java")
ARTIFACTS = ("hornetq-server", "hornetq-stomp-protocol")


def fetch(version: str = DEFAULT_VERSION) -> Path:
    """The folder of release `version`'s jars (``lib/``), fetched through Maven once, under a lock
    (mqconform.releases.maven_jars); AdapterError without mvn or on a failed fetch."""
    return maven_release("hornetq", version, SERVED, "org.hornetq", ARTIFACTS,
                         f"hornetq-server-{version}.jar")


class Control:
    """The launcher's control socket: one command a line, one answer a line."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((LOOPBACK, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("r", encoding="utf-8", newline="\n")

    def ask(self, *words: object) -> list[str]:
        """The answer's words after ``ok``; ControlError with the server's text after ``err``."""
        self.sock.sendall((" ".join(str(w) for w in words) + "\n").encode())
        line = self.reader.readline()
        if not line:
            raise ConnectionError("hornetq control socket closed")
        status, _, rest = line.rstrip("\n").partition(" ")
        if status != "ok":
            raise ControlError(rest)
        return rest.split()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class ControlError(Exception):
    """The server refused a control command (its exception text)."""


class HornetQProcess(ServerProcess):
    """One embedded HornetQ: STOMP on 127.0.0.1:<port>, the control socket on <control_port>."""

    dir_prefix = "mqc-hornetq-"
    log_name = "server.log"
    ready_timeout_s = READY_TIMEOUT_S
    poll_s = 0.1
    attempts = 2

    def __init__(self, version: str = DEFAULT_VERSION) -> None:
        super().__init__()
        self.version = version
        self.lib = fetch(version)
        self.java = java("hornetq")
        self.control_port = 0

    @property
    def url(self) -> str:
        return f"stomp://{LOOPBACK}:{self.port}"

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        self.control_port = free_port()
        return [self.java, *HEAP, "-cp", f"{self.lib}/*", str(LAUNCHER), str(workdir / "data"),
                str(self.port), str(self.control_port)], workdir

    def _ready(self) -> bool:
        assert self.workdir is not None
        try:
            seen = READY_LINE in (Path(self.workdir) / self.log_name).read_bytes()
        except OSError:
            return False
        return seen and port_accepts(self.port) and port_accepts(self.control_port)

    def _failure(self, reason: str) -> str:
        return f"hornetq {self.version}: server did not start: {reason}"


_shared: dict[str, HornetQProcess] = {}


def shared_server(version: str = DEFAULT_VERSION) -> HornetQProcess:
    """The process-wide server of `version`, started on first use and reused (stopped at exit)."""
    server = _shared.get(version)
    if server is None or not server.running():
        server = HornetQProcess(version).start()
        _shared[version] = server
    return server


def main(argv: list[str] | None = None) -> int:
    """``--fetch``: warm the cache with one release (idempotent); ``--run``: start one and wait."""
    return release_main(argv, prog="python -m mqconform.adapters.hornetq.server", served=SERVED,
                        default=DEFAULT_VERSION, fetch=fetch, start=lambda v: HornetQProcess(v).start(),
                        describe=lambda s: f"{s.url} control {LOOPBACK}:{s.control_port}",
                        wait=lambda s: s.process.wait() if s.process else None)

if __name__ == "__main__":
    sys.exit(main())
