"""Broker processes the adapters start themselves: one implementation of what every launcher shares.

A free loopback port, a bounded wait until the broker is ready, stopping a process (SIGTERM, wait,
SIGKILL), die-with-parent (Linux: the child gets SIGTERM when the main thread that started it dies, so a
killed test run leaves no broker behind) and the life of a private temporary directory (config, logs,
store). :class:`ServerProcess` ties them together; a launcher subclass only writes its config, names
its command line and says when it is ready (:mod:`.nats.server`, :mod:`.mqtt.server`,
:mod:`.activemq.server`). Output always goes to log files in the directory, never a caller's pipe.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

from .contract import AdapterError

LOOPBACK = "127.0.0.1"
#: the JVM options of every test broker the adapters start: C1 only. A test broker lives minutes and
#: runs many code paths a few thousand times each; C2's compilations took over half of Artemis' CPU in
#: a run of 3000 management reads (2.40.0, two cores shared). C1 alone gets the 48 MB code cache of a
#: JVM without tiers, which a long-lived JVM fills (a test worker's Spark driver did: "Out of space in
#: CodeCache", and its SparkContext stopped): the tiered JVM's 240 MB
SHORT_RUN_JIT = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def port_accepts(port: int, host: str = LOOPBACK, timeout: float = 0.2) -> bool:
    """Whether a TCP connection to host:port succeeds within `timeout`."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _listening_inodes(port: int) -> set[str] | None:
    """The socket inodes listening on TCP `port` (/proc/net/tcp, tcp6), or None where /proc cannot
    tell (not Linux)."""
    inodes: set[str] = set()
    try:
        tables = [Path("/proc/net/tcp").read_text(), Path("/proc/net/tcp6").read_text()]
    except OSError:
        return None
    for table in tables:
        for line in table.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def owns_port(pid: int, port: int) -> bool:
    """Whether a process of `pid`'s process group (a broker started in its own session, and the JVM
    a launcher script runs) listens on TCP `port`; true where /proc cannot tell."""
    inodes = _listening_inodes(port)
    if inodes is None:
        return True
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            # the process group is the 5th field of stat, after the parenthesised name
            if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[2]) != pid:
                continue
            if any(str(fd.readlink()) in wanted for fd in (proc / "fd").iterdir()):
                return True
        except (OSError, ValueError, IndexError):
            continue
    return False


def java(broker: str, package: str = "openjdk-17-jre-headless") -> str:
    """The java on PATH that starts `broker`; AdapterError naming the Debian package without one."""
    found = shutil.which("java")
    if found is None:
        raise AdapterError(f"{broker}: no java on PATH (apt-get install {package})")
    return found


def maven_release(broker: str, version: str, served: Sequence[str], group: str,
                  artifacts: Sequence[str], marker: str) -> Path:
    """The folder of `broker` release `version`'s jars (``lib/``): `artifacts` of Maven `group` at that
    version, fetched once under a lock (mqconform.releases.maven_jars) into the cache; `marker` is a
    jar the complete folder has. AdapterError for an unserved release, without mvn or on a failed fetch."""
    from mqconform.releases import ReleaseError, cache_root, maven_jars

    if version not in served:
        raise AdapterError(f"{broker}: release {version} is not served (served: {', '.join(served)})")
    try:
        return maven_jars(cache_root() / "servers" / broker / version,
                          [(group, artifact, version) for artifact in artifacts], marker)
    except ReleaseError as exc:
        raise AdapterError(f"{broker} {version}: {exc}") from None


def die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the thread that started it ends (the kernel
    ties PR_SET_PDEATHSIG to the creating thread, so only the main thread may use it)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def stop_process(process: subprocess.Popen[bytes] | None, timeout: float = 5.0) -> None:
    """SIGTERM (a clean shutdown), then SIGKILL when it has not exited after `timeout` seconds."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


def _cleanup(holder: dict[str, subprocess.Popen[bytes] | None], workdir: str) -> None:
    """The finalizer of one directory's life: stop its current process, remove the directory."""
    stop_process(holder.get("process"))
    shutil.rmtree(workdir, ignore_errors=True)


def last_line(paths: list[Path]) -> str:
    """The last non-blank line of the logs that exist (for a one-line start-up error)."""
    text = "".join(p.read_text(errors="replace") for p in paths if p.exists())
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


class ServerProcess:
    """One broker process on 127.0.0.1:<port> with a private temporary directory.

    ``start()`` writes the config (:meth:`_prepare`), launches the command it returns and waits until
    :meth:`_ready` (bounded by ``ready_timeout_s``), retrying on a fresh port when the probed port
    was taken meanwhile. ``halt()`` (SIGTERM) and ``kill()`` (SIGKILL, a crash) keep the directory
    and the port, so a later ``start()`` brings the same broker back on its own store; ``stop()``
    (also at interpreter exit) ends the process and removes the directory.
    """

    #: prefix of the temporary directory
    dir_prefix = "mqc-server-"
    #: the process's output file inside the directory
    log_name = "server.log"
    ready_timeout_s = 10.0
    poll_s = 0.02
    attempts = 3

    def __init__(self, port: int | None = None) -> None:
        self.requested_port = port
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir: str | None = None
        self._holder: dict[str, subprocess.Popen[bytes] | None] = {"process": None}
        self._finalizer: weakref.finalize | None = None

    # ------------------------------------------------------------------ what a launcher says
    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        """Write the config for self.port into `workdir`; the command line and its cwd."""
        raise NotImplementedError

    def _ready(self) -> bool:
        """Whether the started broker serves (default: its port accepts connections)."""
        return port_accepts(self.port)

    def _log_paths(self) -> list[Path]:
        assert self.workdir is not None
        return [Path(self.workdir) / self.log_name]

    def _failure(self, reason: str) -> str:
        """The AdapterError text when the broker does not start."""
        return f"server {reason}"

    # ------------------------------------------------------------------ life cycle
    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> Self:
        """Start the broker and wait until it is ready; AdapterError when it does not come up. After
        halt() or kill() it starts again on the same port and directory."""
        if self.running():
            return self
        reuse = self.workdir is not None
        attempts = 1 if reuse or self.requested_port else self.attempts
        reason = "did not start"
        for _attempt in range(attempts):
            if not reuse:
                self.port = self.requested_port or free_port()
                self.workdir = tempfile.mkdtemp(prefix=self.dir_prefix)
                self._holder = {"process": None}
                self._finalizer = weakref.finalize(self, _cleanup, self._holder, self.workdir)
            failed = self._launch()
            if failed is None:
                return self
            reason = failed
            if reuse:
                self.halt()  # keep the store: a later start() may still bring it back
            else:
                self.stop()
        raise AdapterError(self._failure(reason))

    def _launch(self) -> str | None:
        """Launch the command and wait: None when ready, else why not."""
        assert self.workdir is not None
        command, cwd = self._prepare(Path(self.workdir))
        # a broker started from another thread (the soak's nemesis) would die with that thread
        tie = sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
        with open(Path(self.workdir) / self.log_name, "ab") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, cwd=cwd, preexec_fn=die_with_parent if tie else None)
        self._holder["process"] = self.process
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return f"exited with code {self.process.returncode}: {last_line(self._log_paths())}"
            # ready, and on its own port: free_port's port can be taken by another process (a test
            # worker's broker) between the probe and the bind, and that broker then answers
            if self._ready() and owns_port(self.process.pid, self.port):
                return None
            time.sleep(self.poll_s)
        return f"not ready within {self.ready_timeout_s:.0f} s"

    def halt(self) -> None:
        """SIGTERM (a clean shutdown), keeping the directory and the port for a later start()."""
        stop_process(self.process)

    def kill(self) -> None:
        """SIGKILL at once (a crash, for fault tests), keeping the directory and the port."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5)

    def go_down(self, kill: bool) -> None:
        """For a restart: kill() (a crash) or halt() (a clean shutdown), keeping the directory."""
        if kill:
            self.kill()
        else:
            self.halt()

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 5 s) and remove its directory."""
        if self._finalizer is not None:
            self._finalizer()  # runs _cleanup once
            self._finalizer = None
        self.process = None
        self.workdir = None

    close = stop


class BinaryServer(ServerProcess):
    """A server started from one binary (``binary``), ready once its port accepts connections; its
    start failures read ``<label>: server (<binary>) <reason>``."""

    label = "server"

    def __init__(self, binary: str) -> None:
        super().__init__()
        self.binary = binary

    def _failure(self, reason: str) -> str:
        return f"{self.label}: server ({self.binary}) {reason}"


def release_main(argv: list[str] | None, *, prog: str, served: Sequence[str], default: str,
                 fetch: Callable[[str], object], start: Callable[[str], Any],
                 describe: Callable[[Any], str], wait: Callable[[Any], None]) -> int:
    """The command line of a broker launcher fetched from Maven Central (``python -m
    mqconform.adapters.<broker>.server``): ``--fetch`` warms the cache with one release (idempotent,
    what scripts/setup.sh runs), ``--run`` starts one, prints `describe(server)` and waits (`wait`)
    until interrupted. An AdapterError is one line on stderr and exit 3."""
    import argparse
    import contextlib

    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--fetch", action="store_true", help="fetch the release into the cache")
    parser.add_argument("--run", action="store_true", help="start one, print where it listens, wait")
    parser.add_argument("--version", default=default, choices=list(served))
    args = parser.parse_args(argv)
    try:
        if args.fetch:
            print(fetch(args.version))
        if args.run:
            server = start(args.version)
            print(describe(server), flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                wait(server)
            server.stop()
    except AdapterError as exc:
        print(exc, file=sys.stderr)
        return 3
    return 0
