"""The artemis adapter's connection state and plumbing: how a client error becomes an operation's
outcome, the management client, letting proton process what arrived, physical names. The
operations build on :class:`ArtemisClient`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from proton import ConnectionException, LinkException, Timeout
from proton.utils import ConnectionClosed, LinkDetached

from mqconform.text import one_line

from .._base import BrokerAdapter
from ..contract import Result
from .features import Features
from .management import Jolokia, ManagementError
from .records import _Address
from .server import ArtemisProcess
from .sizing import Sizing


class ArtemisClient(BrokerAdapter):
    """The state the artemis adapter's operations share (set by ArtemisAdapter.__init__ and open)."""

    url: str | None
    http_url: str | None
    user: str
    password: str
    version: str
    features: Features
    timeout: float
    settle_timeout: float
    block_url: str | None
    block_conn: Any
    broker: ArtemisProcess | None
    conn: Any
    sender_links: dict[str, Any]
    jolokia: Jolokia | None
    prefix: str
    server_version: str
    sizing: Sizing | None
    addresses_: dict[str, _Address]
    _broker_pid: int | None
    _dues: list[int]
    _far_origin: int

    def _classify(self, op: str, exc: Exception) -> Result | None:
        if isinstance(exc, Timeout | TimeoutError):
            return Result.info(f"artemis: {op}: timed out ({one_line(exc)})")
        if isinstance(exc, ConnectionException | ConnectionClosed | LinkDetached | LinkException | OSError):
            return Result.info(f"artemis: {op}: connection lost ({one_line(exc)})")
        if isinstance(exc, ManagementError):
            return Result.fail(f"artemis: {op}: {one_line(exc)}")
        return None

    def _mgmt(self) -> Jolokia:
        assert self.jolokia is not None
        return self.jolokia

    def _pump(self, seconds: float = 0.0) -> None:
        """Let proton process what arrived (and send what is queued) for up to `seconds`."""
        with contextlib.suppress(Timeout):
            self.conn.wait(lambda: False, timeout=seconds)

    def _pump_until(self, done: Callable[[], bool], seconds: float) -> None:
        """`_pump`, returning as soon as `done()` holds (a transfer or a drain's answer arrived)."""
        with contextlib.suppress(Timeout):
            self.conn.wait(done, timeout=seconds)

    def _physical(self, name: str) -> str:
        return f"{self.prefix}-{name}"

