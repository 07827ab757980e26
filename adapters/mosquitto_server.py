"""Private `mosquitto` broker processes for the `mqtt` adapter, one per queue limit.

Mosquitto's queue limit (``max_queued_messages``) is one setting for the whole broker, so the
adapter runs one process per distinct limit, each on a free loopback port with a generated config
(``persistence false``, ``max_inflight_messages 0``, TCP_NODELAY) in a private temporary directory.
Processes start lazily, are reused for the life of the :class:`MosquittoPool`, and stop in
:meth:`MosquittoPool.stop` (or at interpreter exit). Output goes to a log file, never a caller's pipe.

The process helpers (free port, die-with-parent, stop) are reused from :mod:`.nats_embedded`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path

from .contract import AdapterError
from .nats_embedded import _die_with_parent, _stop_process, free_port

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


def port_accepts(port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


class MosquittoProcess:
    """One mosquitto on 127.0.0.1:<free port> with `max_queued_messages = max_queued`."""

    def __init__(self, binary: str, max_queued: int) -> None:
        self.binary = binary
        self.max_queued = max_queued
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir: str | None = None
        self._finalizer: weakref.finalize | None = None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> MosquittoProcess:
        last_error = "did not start"
        for _attempt in range(3):  # a free port can be taken between probing and binding
            self.port = free_port()
            self.workdir = tempfile.mkdtemp(prefix="mqc-mosquitto-")
            os.chmod(self.workdir, 0o755)  # mosquitto drops to user `mosquitto` when started as root
            conf = Path(self.workdir) / "mosquitto.conf"
            conf.write_text(config_text(self.port, self.max_queued))
            os.chmod(conf, 0o644)
            log_path = Path(self.workdir) / "mosquitto.log"
            with open(log_path, "wb") as log:
                self.process = subprocess.Popen(
                    [self.binary, "-c", str(conf)], stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
            self._finalizer = weakref.finalize(self, _stop_process, self.process, self.workdir)
            deadline = time.monotonic() + READY_TIMEOUT_S
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    lines = log_path.read_text(errors="replace").strip().splitlines()
                    last_error = f"exited with code {self.process.returncode}: {(lines or ['no output'])[-1]}"
                    break
                if port_accepts(self.port):
                    return self
                time.sleep(0.02)
            else:
                last_error = f"not ready within {READY_TIMEOUT_S:.0f} s"
            self.stop()
        raise AdapterError(f"mqtt: mosquitto ({self.binary}) {last_error}")

    def kill(self) -> None:
        """SIGKILL at once (a crash, for fault tests)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5)

    def stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self.process = None
        self.workdir = None


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
