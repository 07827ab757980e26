"""The nats adapter's connection: nats-py on a private event loop, one reply inbox per example, and
how a client error becomes an operation's outcome. The operations build on :class:`NatsClient`."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import nats
from nats import errors as nats_errors
from nats.aio.client import Client
from nats.aio.subscription import Subscription
from nats.js import errors as js_errors
from nats.js.api import StorageType

from mqconform.text import one_line

from .._base import BrokerAdapter, Refused
from ..contract import AdapterError, Result
from .capabilities import capabilities_for
from .server import EmbeddedNatsServer

T = TypeVar("T")


class NatsClient(BrokerAdapter):
    """The connection state and plumbing the nats adapter's operations share."""

    url: str | None
    fetch_timeout: float
    request_timeout: float
    storage: StorageType
    server: EmbeddedNatsServer | None
    server_version: str
    _loop: asyncio.AbstractEventLoop
    _nc: Client | None
    _sub: Subscription | None
    _inbox: str
    #: RESTART-4: when the adapter's last operation ended (a SIGKILL waits KILL_QUIET_S after it)
    _last_op: float

    def _run(self, coro: Awaitable[T]) -> T:
        return self._loop.run_until_complete(coro)

    def _js(self) -> Any:
        if self._nc is None or self._nc.is_closed:
            raise nats_errors.ConnectionClosedError
        return self._nc.jetstream(timeout=self.request_timeout)

    def _invoke(self, fn: Callable[[], Any]) -> Any:
        """Run one operation: a coroutine on the private loop; the shared base operations (e.g.
        declare_address, which only records the address) are plain functions."""
        try:
            outcome = fn()
            return self._run(outcome) if inspect.isawaitable(outcome) else outcome
        finally:
            self._last_op = time.monotonic()

    def _classify(self, op: str, exc: Exception) -> Result | None:
        """A server refusal is fail (an internal server error, 500, is info: the outcome of e.g.
        creating a store is unknown); no answer in time or a lost connection is info."""
        if isinstance(exc, js_errors.APIError):
            if exc.code == 500:
                return Result.info(f"nats: {op}: server error {exc.description or exc}")
            return Result.fail(f"nats: {op}: {exc.description or exc}")
        if isinstance(exc, nats_errors.NoRespondersError):
            return Result.fail(f"nats: {op}: no responders (no stream on the subject)")
        if isinstance(exc, TimeoutError):
            return Result.info(f"nats: {op}: no answer within {self.request_timeout:g} s")
        if isinstance(exc, nats_errors.Error | OSError):
            return Result.info(f"nats: {op}: connection lost ({one_line(exc)})")
        return None

    async def _new_inbox(self) -> None:
        """A fresh reply subscription, so a late answer to an earlier example's request is never read
        as an answer to this one's."""
        assert self._nc is not None
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        self._inbox = self._nc.new_inbox()
        self._sub = await self._nc.subscribe(self._inbox)

    async def _connect(self, url: str) -> None:
        async def quiet(*_: Any) -> None:
            return None

        # max_reconnect_attempts=1: with 0, nats-py retries a refused first connection forever
        self._nc = await asyncio.wait_for(
            nats.connect(url, name="mqconform", connect_timeout=self.request_timeout,
                         allow_reconnect=False, max_reconnect_attempts=1, reconnect_time_wait=0.05,
                         error_cb=quiet, disconnected_cb=quiet, closed_cb=quiet),
            3 * self.request_timeout)
        self.server_version = str(self._nc._server_info.get("version", ""))
        try:
            await self._nc.jetstream(timeout=self.request_timeout).account_info()
        except (js_errors.ServiceUnavailableError, nats_errors.NoRespondersError):
            await self._disconnect()
            raise AdapterError(f"nats: JetStream is not enabled on {url} "
                               "(start nats-server with -js)") from None
        self.capabilities = capabilities_for(self.server_version) | self._restart_capability()

    def _restart_capability(self) -> frozenset[str]:
        """RESTART-1..4: ``restart`` with the embedded server on file storage (a server the adapter
        did not start is not its to restart; memory storage keeps nothing)."""
        if self.url is None and self.storage == StorageType.FILE:
            return frozenset({"restart"})
        return frozenset()

    async def _api(self, subject: str, body: Mapping[str, Any], what: str) -> dict[str, Any]:
        """One JetStream API request with a JSON body; its answer (Refused for an error answer)."""
        assert self._nc is not None
        reply = await self._nc.request(subject, json.dumps(body).encode(), timeout=self.request_timeout)
        answer: dict[str, Any] = json.loads(reply.data)
        if "error" in answer:
            raise Refused(f"nats: {what}: {answer['error'].get('description', answer['error'])}")
        return answer

    async def _disconnect(self) -> None:
        nc, self._nc, self._sub = self._nc, None, None
        if nc is not None and not nc.is_closed:
            with contextlib.suppress(Exception):  # a dead connection: nothing left to close cleanly
                await asyncio.wait_for(nc.close(), self.request_timeout)
