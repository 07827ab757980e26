"""The rocketmq adapter's client process: ``Driver.java`` on the Apache RocketMQ Java client.

Why a Java driver: fast failure answers only requests waiting in the broker's remoting send queue, so
the client must speak RocketMQ's remoting protocol to the broker itself (the gRPC proxy in local mode
calls the broker's processors directly and bypasses that queue). On PyPI, ``rocketmq-python-client``
speaks gRPC to a proxy, ``rocketmq-client-python`` wraps the native C++ client (a shared library
installed separately) and ``rocketmq`` (ctypes over the same native client) was not tried; the Java
client is the protocol's reference implementation, of the broker's own release, and already among the
fetched jars. It runs in source-file mode
(``java -cp <jars> Driver.java``: no build step) and answers one JSON line per request line.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

from .._process import die_with_parent, java, stop_process
from ..contract import AdapterError
from .server import classpath

SOURCE = Path(__file__).with_name("Driver.java")
HEAP = ["-Xms32m", "-Xmx256m"]


class DriverError(Exception):
    """The driver answered ``ok: false`` (the client or the broker refused)."""


class Driver:
    """One driver process; :meth:`ask` sends one request and waits for its answer line."""

    def __init__(self, lib: Path, namesrv: str, log: Path) -> None:
        self._log = log.open("ab")
        self._lock = threading.Lock()
        self.process = subprocess.Popen(
            [java("rocketmq"), *HEAP, "-cp", classpath(lib), str(SOURCE)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._log, start_new_session=True,
            preexec_fn=die_with_parent if threading.current_thread() is threading.main_thread() else None)
        try:
            self.ask({"op": "start", "namesrv": namesrv})
        except (AdapterError, DriverError) as exc:
            self.close()
            raise AdapterError(f"rocketmq: the Java client did not start: {exc}") from None

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send `request`; its answer (DriverError when the driver says ok: false, AdapterError when
        the process is gone)."""
        with self._lock:
            stdin, stdout = self.process.stdin, self.process.stdout
            assert stdin is not None and stdout is not None
            try:
                stdin.write(json.dumps(request).encode() + b"\n")
                stdin.flush()
                line = stdout.readline()
            except OSError as exc:
                raise AdapterError(f"rocketmq: the Java client is gone: {exc}") from None
            if not line:
                raise AdapterError(f"rocketmq: the Java client exited (code {self.process.poll()})")
            answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise DriverError(str(answer.get("error")))
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.ask({"op": "quit"})
                self.process.wait(timeout=3)
            except (AdapterError, DriverError, subprocess.TimeoutExpired, ValueError):
                pass
        stop_process(self.process)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self._log.close()
