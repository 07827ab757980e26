"""A private ``beanstalkd`` for the `beanstalkd` adapter: one process on a free loopback port.

No binlog (``-b`` is not given: every job lives in memory only), listening on 127.0.0.1, in a private
temporary directory that holds its log; stopped by :meth:`stop` (also at interpreter exit). The binary
is ``server_bin=PATH``, ``$MQCONFORM_BEANSTALKD_BIN``, ``beanstalkd`` on PATH or
``/usr/bin/beanstalkd`` (Debian package ``beanstalkd``). The process plumbing is :mod:`._process`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .._process import BinaryServer
from ..contract import AdapterError

__all__ = ["BIN_ENV", "BeanstalkdServer", "find_binary"]

#: environment variable naming a beanstalkd binary to use instead of the one on PATH
BIN_ENV = "MQCONFORM_BEANSTALKD_BIN"


def find_binary(explicit: str | None = None) -> str:
    """The beanstalkd to run: `explicit`, $MQCONFORM_BEANSTALKD_BIN, PATH, /usr/bin/beanstalkd."""
    if explicit is not None:
        if Path(explicit).is_file() and os.access(explicit, os.X_OK):
            return explicit
        raise AdapterError(f"beanstalkd: server_bin {explicit!r} is not an executable file")
    for candidate in (os.environ.get(BIN_ENV), shutil.which("beanstalkd"), "/usr/bin/beanstalkd"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise AdapterError("beanstalkd: no beanstalkd binary found (apt-get install beanstalkd, set "
                       f"{BIN_ENV}, or pass url= to use a running server)")


class BeanstalkdServer(BinaryServer):
    """One beanstalkd on 127.0.0.1:<free port>, jobs in memory only."""

    dir_prefix = "mqc-beanstalkd-"
    log_name = "beanstalkd.log"
    label = "beanstalkd"

    @property
    def url(self) -> str:
        return f"beanstalk://127.0.0.1:{self.port}"

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        return [self.binary, "-l", "127.0.0.1", "-p", str(self.port)], workdir
