"""EXPIRY-8: a message's duplicate id (Artemis _AMQ_DUPL_ID) and expiry to an expiry address, in the
model."""

from __future__ import annotations

import pytest

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.config import AddressConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.profiles import profile


def expiring() -> Broker:
    """dlx (queue dlq), and q and q2 whose expiry address is dlx."""
    broker = Broker(profile("artemis"))
    broker.declare_address(AddressConfig("dlx"))
    broker.declare_queue(QueueConfig("dlq", address="dlx"))
    for name in ("q", "q2"):
        broker.declare_queue(QueueConfig(name, expiry_address="dlx"))
    return broker


@pytest.mark.rules("EXPIRY-8")
def test_a_duplicate_send_is_dropped_per_address() -> None:
    b = expiring()
    assert b.send("dlx", Message("d1", duplicate_id="X")) == "accepted"
    assert b.send("dlx", Message("d2", duplicate_id="X")) == "dropped"
    assert b.send("q", Message("m1", duplicate_id="X")) == "accepted"  # q's cache is its own
    assert b.send("q", Message("m2", duplicate_id="X")) == "dropped"
    assert b.pending_ids("dlq") == ["d1"] and b.pending_ids("q") == ["m1"]
    assert b.counters("q").added == 1


@pytest.mark.rules("EXPIRY-8", "EXPIRY-6", "EXPIRY-7")
def test_an_expiry_copy_is_never_rejected_and_caches_a_new_id() -> None:
    b = expiring()
    b.send("dlx", Message("d1", duplicate_id="X"))
    b.send("q", Message("m1", duplicate_id="X", ttl_ms=1000))
    b.send("q", Message("m3", duplicate_id="Y", ttl_ms=1000))
    b.send("q2", Message("m5", duplicate_id="Y", ttl_ms=2000))
    b.advance(1000)
    assert b.pending_ids("dlq") == ["d1", "m1", "m3"]  # m1's copy although dlx routed X
    assert b.counters("q").expired == 2 and b.counters("q").message_count == 0
    b.advance(1000)
    assert b.pending_ids("dlq") == ["d1", "m1", "m3", "m5"]  # two copies of id Y
    assert b.send("dlx", Message("d3", duplicate_id="Y")) == "dropped"  # cached by m3's copy
    assert b.send("dlx", Message("d4", duplicate_id="W")) == "accepted"


@pytest.mark.rules("EXPIRY-8")
def test_duplicate_ids_need_the_feature_and_a_page_address() -> None:
    b = Broker(profile("rabbitmq-classic"))
    b.declare_queue(QueueConfig("q"))
    with pytest.raises(Unsupported):
        b.send("q", Message("m1", duplicate_id="X"))
    a = Broker(profile("artemis"))
    a.declare_address(AddressConfig("d", max_size_messages=5, full_policy="DROP"))
    with pytest.raises(ModelMisuse):
        a.send("d", Message("m1", duplicate_id="X"))
