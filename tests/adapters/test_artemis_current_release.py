"""Artemis 2.56.0, the current release: published under the Maven group org.apache.artemis
from 2.50.0, fetched through Maven into the release cache like the older ones, started by the adapter
with the same instance rewrite, driven with every capability. No skips: without mvn or java it fails."""

from __future__ import annotations

import pytest

from mqconform import releases
from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.artemis.features import CAPABILITIES
from mqconform.adapters.artemis.room import artemis_group
from mqconform.adapters.artemis.server import fetch
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig

pytestmark = pytest.mark.broker("artemis")

CURRENT = "2.56.0"


def test_the_group_follows_the_release() -> None:
    assert artemis_group("2.44.0") == "org.apache.activemq"
    assert artemis_group("2.50.0") == artemis_group(CURRENT) == "org.apache.artemis"
    source = releases.line("artemis").release(CURRENT).source
    assert source == f"org.apache.artemis:apache-artemis:{CURRENT}:tar.gz:bin"


def test_the_current_release_starts_and_is_driven_with_every_capability(namespace: str) -> None:
    home = fetch(CURRENT)
    assert home.name == f"apache-artemis-{CURRENT}" and (home / "bin" / "artemis").is_file()
    adapter = ArtemisAdapter(version=CURRENT)
    try:
        assert adapter.capabilities >= CAPABILITIES - {"restart"}
        adapter.open(namespace)
        assert adapter.declare_queue(QueueConfig("q", ring_size=2)).is_ok
        for i in (1, 2, 3):
            assert adapter.send("q", Message(f"m{i}")).value == "accepted"
        assert adapter.open_consumer(ConsumerConfig("c", "q", window_bytes=0)).is_ok
        assert adapter.pending_ids("q").value == ["m2", "m3"]  # the ring of 2 replaced m1
        assert adapter.receive("c").value == "m2"
        assert adapter.ack("c", "m2").value == "ok"
        counters = adapter.counters("q").value
        assert (counters["message_count"], counters["acknowledged"]) == (1, 1)
        adapter.close()
        assert adapter.server_version == CURRENT
    finally:
        adapter.shutdown()
