"""Shared fixtures of the broker adapter tests (generic, but for `artemis`: the Artemis feature tests'
adapter on each of artemis_releases.RELEASES, which a module with an `artemis` fixture of its own
overrides).

`namespace` gives every test its own name prefix (test name + xdist worker + random token), so
tests running in parallel (`pytest -n auto`) against one shared broker never see each other's
queues; each adapter adds its own random token per open() on top.
"""

from __future__ import annotations

import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mqconform.adapters.contract import Adapter, AdapterError
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from tests.adapters.artemis_releases import RELEASES as ARTEMIS_RELEASES


@pytest.fixture
def namespace(request: pytest.FixtureRequest) -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    test = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-")[:40]
    return f"mqct-{test}-{worker}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assert_same_names_do_not_meet(factory: Callable[[], Adapter], namespace: str) -> None:
    """Two adapters opened with the same namespace and logical names never share a queue: each open
    adds its own token (safe under pytest -n auto and for concurrent runs on one broker)."""
    one, two = factory(), factory()
    one.open(namespace)
    two.open(namespace)
    try:
        for adapter in (one, two):
            adapter.declare_queue(QueueConfig("q"))
            adapter.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
        one.send("q", Message("m1"))
        assert two.receive("c").value is None
        assert one.receive("c").value == "m1"
    finally:
        for adapter in (one, two):
            getattr(adapter, "shutdown", adapter.close)()


def assert_unreachable(adapter: Adapter, prefix: str, max_seconds: float | None = None) -> str:
    """Opening `adapter` on a port nothing listens on is one AdapterError line that starts with
    `prefix` and never shows the password ("secret" in the tests' URLs); returns the message."""
    t0 = time.monotonic()
    with pytest.raises(AdapterError) as info:
        adapter.open("x")
    if max_seconds is not None:
        assert time.monotonic() - t0 < max_seconds
    message = str(info.value)
    assert message.startswith(prefix), message
    assert "secret" not in message and "\n" not in message
    getattr(adapter, "shutdown", adapter.close)()
    return message


@pytest.fixture(scope="module")
def embedded() -> Iterator[Any]:
    """One NATS adapter with its embedded server per module (and xdist worker); tests open/close it."""
    from mqconform.adapters.nats import NatsAdapter

    adapter = NatsAdapter()
    yield adapter
    adapter.shutdown()


@pytest.fixture(scope="module", params=ARTEMIS_RELEASES)
def artemis(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The artemis adapter on its own broker of each release (artemis_releases.RELEASES), in turn."""
    from mqconform.adapters.artemis import ArtemisAdapter

    adapter = ArtemisAdapter(version=request.param)
    yield adapter
    adapter.shutdown()
