"""Private `mosquitto` broker processes for the `mqtt` adapter, one per queue limit.

Mosquitto's queue limit (``max_queued_messages``) is one setting for the whole broker, so the
adapter runs one process per distinct limit, each on a free loopback port with a generated config
(``persistence false``, ``max_inflight_messages 0``, TCP_NODELAY) in a private temporary directory.
Processes start lazily, are reused for the life of the :class:`MosquittoPool`, and stop in
:meth:`MosquittoPool.stop` (or at interpreter exit). Output goes to a log file, never a caller's pipe.

The process plumbing (free port, readiness, stop, die-with-parent, directory) is :mod:`._process`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .._process import ServerProcess, port_accepts
from ..contract import AdapterError

__all__ = ["MosquittoPool", "MosquittoProcess", "config_text", "find_binary", "port_accepts"]

#: environment variable naming a mosquitto binary to use instead of the one on PATH
BIN_ENV = "MQCONFORM_MOSQUITTO_BIN"
READY_TIMEOUT_S = 10.0


def find_binary(explicit: str | None = None) -> str:
    """The mosquitto to run: `explicit`, $MQCONFORM_MOSQUITTO_BIN, PATH, /usr/sbin/mosquitto."""
    for candidate in (explicit, os.environ.get(BIN_ENV), shutil.which("mosquitto"), "/usr/sbin/mosquitto"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise AdapterError("mqtt: no mosquitto binary found (apt-get install mosquitto, set "
                       f"{BIN_ENV}, or pass url= to use a running broker)")


def config_text(port: int, max_queued: int) -> str:
    """The broker config: loopback listener, no persistence, `max_queued` per client (0 = none),
    no in-flight cap (so a connected client gets every message of its session at once)."""
    return (f"listener {port} 127.0.0.1\n"
            "allow_anonymous true\n"
            "persistence false\n"
            "set_tcp_nodelay true\n"
            f"max_queued_messages {max_queued}\n"
            "max_queued_bytes 0\n"
            "max_inflight_messages 0\n"
            "max_inflight_bytes 0\n"
            "log_dest stderr\n"
            "log_type error\nlog_type warning\nlog_type notice\n")


class MosquittoProcess(ServerProcess):
    """One mosquitto on 127.0.0.1:<free port> with `max_queued_messages = max_queued`."""

    dir_prefix = "mqc-mosquitto-"
    log_name = "mosquitto.log"
    ready_timeout_s = READY_TIMEOUT_S

    def __init__(self, binary: str, max_queued: int) -> None:
        super().__init__()
        self.binary = binary
        self.max_queued = max_queued

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        os.chmod(workdir, 0o755)  # mosquitto drops to user `mosquitto` when started as root
        conf = workdir / "mosquitto.conf"
        conf.write_text(config_text(self.port, self.max_queued))
        os.chmod(conf, 0o644)
        return [self.binary, "-c", str(conf)], None

    def _failure(self, reason: str) -> str:
        return f"mqtt: mosquitto ({self.binary}) {reason}"


class MosquittoPool:
    """Lazily started mosquitto processes keyed by queue limit (0 = unlimited)."""

    def __init__(self, binary: str | None = None) -> None:
        self.binary = binary
        self.processes: dict[int, MosquittoProcess] = {}

    def port_for(self, max_queued: int) -> int:
        process = self.processes.get(max_queued)
        if process is None or not process.running():
            process = MosquittoProcess(find_binary(self.binary), max_queued).start()
            self.processes[max_queued] = process
        return process.port

    def stop(self) -> None:
        for process in self.processes.values():
            process.stop()
        self.processes.clear()

