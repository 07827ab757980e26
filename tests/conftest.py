"""Suite-wide test settings: the suite's own Hypothesis profiles (ci under CI=true), and the broker
services the adapter tests use, started when one is down (scripts/services.sh; e.g. after a reboot)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

from mqconform.adapters._process import SHORT_RUN_JIT
from mqconform.adapters.rooms import rooms
from mqconform.conformance.exploring import settings as suite_settings

settings.load_profile(suite_settings.default_profile())
#: the tests' Spark jobs are short and small: the JVM's first tier of compilation only (about half the
#: JVM's CPU of a report over a small run: 69 -> 38 s measured), for the sessions and the CLI runs alike,
#: with the test brokers' options (a tiered JVM's code cache: a worker's session lives the whole run)
os.environ.setdefault("MQCONFORM_SPARK_JAVA_OPTIONS", " ".join(SHORT_RUN_JIT))

ROOT = Path(__file__).resolve().parent.parent
#: loopback port -> the service scripts/services.sh starts there (the broker rooms that need one)
SERVICES = {room.service[1]: room.service[0] for room in rooms() if room.service is not None}


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Once per run (not in xdist workers): start the services that are down."""
    if hasattr(session.config, "workerinput"):
        return
    down = [name for port, name in SERVICES.items() if not _listening(port)]
    script = ROOT / "scripts" / "services.sh"
    if down and script.exists():
        print(f"\nconftest: {', '.join(down)} down; starting with scripts/services.sh", flush=True)
        subprocess.run(["bash", str(script)], check=False, stdin=subprocess.DEVNULL)
