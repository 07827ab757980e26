"""The `beanstalkd` adapter against real beanstalkd processes (the adapter's own server on a free
loopback port). No mocks, no skips: a missing beanstalkd is a failure."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import greenstalk
import pytest
from hypothesis import Phase, settings

from mqconform.adapters.beanstalkd.adapter import (
    CAPABILITIES,
    BeanstalkdAdapter,
    beanstalk_priority,
    raw_roundtrip_loop,
)
from mqconform.adapters.beanstalkd.server import BeanstalkdServer, find_binary
from mqconform.adapters.contract import AdapterError, Result, contract_violation
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring.machines.delivery import DeliveryMachine
from mqconform.conformance.exploring.machines.redelivery import RedeliveryMachine
from mqconform.conformance.exploring.runner import run_machine
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import profile
from tests.adapters.conftest import assert_same_names_do_not_meet, assert_unreachable

pytestmark = pytest.mark.broker("beanstalkd")

PULL = {"window_bytes": 0}
SHOWN = ("message_count", "pending_count", "delivering_count", "scheduled_count", "paged_count", "added")


@pytest.fixture(scope="module")
def shared() -> Iterator[BeanstalkdAdapter]:
    """One adapter (and its own beanstalkd) per module and xdist worker."""
    adapter = BeanstalkdAdapter()
    yield adapter
    adapter.shutdown()


@pytest.fixture
def bs(shared: BeanstalkdAdapter, namespace: str) -> Iterator[BeanstalkdAdapter]:
    shared.open(namespace)
    yield shared
    shared.close()


def values(results: list[Result]) -> list[Any]:
    out = []
    for r in results:
        if isinstance(r.value, dict):
            out.append((r.type, {k: r.value[k] for k in SHOWN if k in r.value}))
        else:
            out.append((r.type, r.value if r.is_ok else r.error))
    return out


def model() -> ReferenceAdapter:
    ref = ReferenceAdapter("beanstalkd")
    ref.open("x")
    return ref


def priority_and_return_steps(a: Any) -> list[Result]:
    """Priorities, a release, a close with two reserved jobs, the counters and delivery counts."""
    out = [a.declare_queue(QueueConfig("q")), a.open_consumer(ConsumerConfig("c", "q", **PULL)),
           a.open_consumer(ConsumerConfig("d", "q", **PULL))]
    for i, priority in enumerate((4, 0, 9, 4, 9), start=1):
        out.append(a.send("q", Message(f"m{i}", priority=priority)))
    out += [a.receive("c"), a.receive("c"), a.counters("q")]  # m3, m5 (priority 9)
    out += [a.nack("c", "m5"), a.receive("d"), a.delivery_count("q", "m5")]  # m5 back at its place
    out += [a.receive("c"), a.close_consumer("c"), a.counters("q")]  # c held m3 and m1
    out += [a.receive("d") for _ in range(4)]
    out += [a.delivery_count("q", m) for m in ("m1", "m3", "m4", "m2")]
    out += [a.ack("d", m) for m in ("m5", "m3", "m1", "m4", "m2", "m2")]
    out += [a.counters("q")]
    return out


def test_contract_and_capabilities(bs: BeanstalkdAdapter) -> None:
    assert contract_violation(bs) is None
    assert bs.profile == "beanstalkd" and bs.capabilities == CAPABILITIES
    assert bs.server_version.startswith("1.")
    for missing in ("ring", "scheduling", "ack_wait", "redelivery_delay", "dead_letter",
                    "max_unacked", "transactions", "browse", "pending_order", "invalid_ack",
                    "counter:killed", "counter:acknowledged", "window_bytes"):
        assert missing not in bs.capabilities
    assert [beanstalk_priority(p) for p in (9, 4, 0)] == [0, 5, 9]


@pytest.mark.rules("DELIVERY-35", "REDELIVERY-35", "DELIVERY-37", "DELIVERY-8")
def test_priorities_releases_and_closes_as_the_model_says(bs: BeanstalkdAdapter) -> None:
    got = values(priority_and_return_steps(bs))
    assert got == values(priority_and_return_steps(model()))
    received = [v for t, v in got if isinstance(v, str) and v.startswith("m")]
    assert received[:4] == ["m3", "m5", "m5", "m1"]  # 9 before 4 before 0; the released m5 first again
    assert received[4:8] == ["m3", "m1", "m4", "m2"]  # the close gave m3 and m1 back at their places
    assert got[-1] == ("ok", {"message_count": 0, "pending_count": 0, "delivering_count": 0,
                              "scheduled_count": 0, "paged_count": 0, "added": 5})


@pytest.mark.rules("REDELIVERY-36")
def test_bury_is_a_reject_and_kick_brings_the_job_back(bs: BeanstalkdAdapter) -> None:
    a = bs
    a.declare_queue(QueueConfig("q"))
    a.open_consumer(ConsumerConfig("c", "q", **PULL))
    a.send("q", Message("m1"))
    a.send("q", Message("m2"))
    assert a.receive("c").value == "m1"
    assert a.nack("c", "m1", requeue=False).value == "ok"
    assert a.nack("c", "m1", requeue=False).value == "failed"  # no longer held
    assert a.counters("q").value["message_count"] == 1  # the buried job is out of the queue
    assert a.delivery_count("q", "m1").value is None
    stats = a.job_stats("q", "m1")
    assert stats is not None and stats["state"] == "buried"
    assert (stats["reserves"], stats["buries"], stats["releases"], stats["kicks"]) == (1, 1, 0, 0)
    assert a.delete_message("q", "m1").value is False  # on the dead-letter list, not in the queue
    assert [a.receive("c").value, a.receive("c").value] == ["m2", None]  # never reserved while buried
    # kick-job (outside the model's operations) makes it ready again, counted in kicks
    tube = a.queues["q"].tube
    raw: Any = greenstalk.Client(a._address(), encoding=None, use=tube, watch=tube)
    try:
        raw.kick_job(a.queues["q"].jobs["m1"])
    finally:
        raw.close()
    assert a.receive("c").value == "m1"
    stats = a.job_stats("q", "m1")
    assert stats is not None and (stats["reserves"], stats["buries"], stats["kicks"]) == (2, 1, 1)


@pytest.mark.rules("REDELIVERY-37", "DELIVERY-36")
def test_release_with_a_delay_makes_the_job_delayed(bs: BeanstalkdAdapter) -> None:
    def steps(a: Any) -> list[Result]:
        out = [a.declare_queue(QueueConfig("q")), a.open_consumer(ConsumerConfig("c", "q", **PULL))]
        out += [a.send("q", Message(f"m{i}")) for i in (1, 2, 3)]
        out += [a.receive("c"), a.receive("c"), a.nack("c", "m1", delay_ms=3_600_000),
                a.nack("c", "m2", delay_ms=2000), a.counters("q"), a.receive("c"), a.receive("c"),
                a.delivery_count("q", "m1"), a.ack("c", "m1"), a.delete_message("q", "m2"),
                a.counters("q")]
        return out

    got = values(steps(bs))
    assert got == values(steps(model()))
    assert got[9][1]["scheduled_count"] == 2 and got[10:12] == [("ok", "m3"), ("ok", None)]
    stats = bs.job_stats("q", "m1")
    assert stats is not None and stats["state"] == "delayed" and stats["releases"] == 1
    assert stats["delay"] == 3600


@pytest.mark.rules("DELIVERY-36")
def test_delete_by_id_reaches_ready_jobs_not_reserved_ones(bs: BeanstalkdAdapter) -> None:
    def steps(a: Any) -> list[Result]:
        out = [a.declare_queue(QueueConfig("q")), a.open_consumer(ConsumerConfig("c", "q", **PULL))]
        out += [a.send("q", Message(f"m{i}")) for i in (1, 2, 3)]
        out += [a.receive("c"), a.delete_message("q", "m1"), a.delete_message("q", "m2"),
                a.delete_message("q", "m2"), a.delete_message("q", "never"), a.counters("q"),
                a.receive("c"), a.receive("c"), a.ack("c", "m1"), a.ack("c", "m3"), a.counters("q")]
        return out

    got = values(steps(bs))
    assert got == values(steps(model()))
    assert got[6:10] == [("ok", False), ("ok", True), ("ok", False), ("ok", False)]


def test_time_to_run_gives_an_unsettled_job_back_and_counts_a_timeout(namespace: str) -> None:
    """What ack_wait would map to, outside the machines (TTR is whole seconds, at least 1): a job its
    holder does not settle within its TTR is ready again, its timeouts count is 1 and its reserves 2;
    the holder can no longer delete it (doc/protocol.txt "reserve", prot.c conn_timeout: timeout_ct++).

    beanstalkd 1.12 does so only once the holder's connection is scheduled again: with an idle holder
    the job often stays reserved past its TTR (time-left negative, timeouts 0; about half of the trials
    here, upstream issues #380 and #262), so the holder sends a command (stats) after the TTR first."""
    adapter = BeanstalkdAdapter(ttr_s=1)
    try:
        adapter.open(namespace)
        adapter.declare_queue(QueueConfig("q"))
        adapter.open_consumer(ConsumerConfig("c", "q", **PULL))
        adapter.open_consumer(ConsumerConfig("d", "q", **PULL))
        adapter.send("q", Message("m1"))
        assert adapter.receive("c").value == "m1"
        assert adapter.receive("d").value is None
        time.sleep(2.2)  # the TTR (1 s) has run out
        adapter.consumers["c"].client.stats()  # the holder's connection is heard from again
        deadline = time.monotonic() + 3
        while adapter.counters("q").value["pending_count"] == 0:
            assert time.monotonic() < deadline, "the job did not time out"
            time.sleep(0.05)
        assert adapter.receive("d").value == "m1"
        stats = adapter.job_stats("q", "m1")
        assert stats is not None and (stats["reserves"], stats["timeouts"], stats["ttr"]) == (2, 1, 1)
        assert adapter.ack("c", "m1").value == "failed"  # no longer c's
        assert adapter.ack("d", "m1").value == "ok"
    finally:
        adapter.shutdown()


def test_what_beanstalkd_cannot_do_is_unsupported(bs: BeanstalkdAdapter) -> None:
    a = bs
    assert a.declare_queue(QueueConfig("r", ring_size=3)).error.startswith("unsupported")
    assert a.declare_queue(QueueConfig("q")).is_ok
    assert a.declare_queue(QueueConfig("q")).type == "fail"
    assert a.open_consumer(ConsumerConfig("push", "q")).error.startswith("unsupported")
    capped = ConsumerConfig("cap", "q", window_bytes=0, max_unacked=2)
    assert a.open_consumer(capped).error.startswith("unsupported")
    assert a.open_consumer(ConsumerConfig("c", "q", **PULL)).is_ok
    a.send("q", Message("m1"))
    assert a.receive("c").value == "m1"
    for result in (a.nack("c", "m1", delay_ms=1500), a.nack("c", "m1", multiple=True), a.browse("q"),
                   a.pending_ids("q"), a.send("q", Message("s", scheduled_at_ms=5)),
                   a.ack("c", "m1", tx=True), a.commit("c")):
        assert result.type == "fail" and (result.error or "").startswith("unsupported"), result
    assert a.send("q", Message("p", priority=10)).type == "fail"
    assert a.receive("nobody").type == "fail"


def test_close_removes_every_job(shared: BeanstalkdAdapter, namespace: str) -> None:
    shared.open(namespace)
    shared.declare_queue(QueueConfig("q"))
    shared.open_consumer(ConsumerConfig("c", "q", **PULL))
    for i in (1, 2, 3):
        shared.send("q", Message(f"m{i}"))
    shared.receive("c")
    shared.receive("c")
    shared.nack("c", "m2", requeue=False)
    tube = shared.queues["q"].tube
    shared.close()
    raw: Any = greenstalk.Client(shared._address(), encoding=None)
    try:
        assert tube not in raw.tubes()  # no job left, nobody uses it: beanstalkd removed the tube
    finally:
        raw.close()


def test_two_adapters_with_the_same_names_do_not_meet(shared: BeanstalkdAdapter, namespace: str) -> None:
    url = shared.url
    assert url is not None
    assert_same_names_do_not_meet(lambda: BeanstalkdAdapter(url=url), namespace)


def test_url_uses_a_running_server_and_its_absence_is_an_adapter_error(namespace: str,
                                                                       free_port: int) -> None:
    server = BeanstalkdServer(find_binary()).start()
    try:
        adapter = BeanstalkdAdapter(url=server.url)
        adapter.open(namespace)
        assert adapter.server is None and adapter.declare_queue(QueueConfig("q")).is_ok
        adapter.shutdown()
    finally:
        server.stop()
    assert_unreachable(BeanstalkdAdapter(url=f"beanstalk://127.0.0.1:{free_port}", timeout=1.0),
                       f"beanstalkd: cannot use beanstalk://127.0.0.1:{free_port}", max_seconds=5)
    with pytest.raises(AdapterError, match=r"^beanstalkd: server_bin '/nonexistent/beanstalkd' is not"):
        BeanstalkdAdapter(server_bin="/nonexistent/beanstalkd").open("x")


def test_server_killed_mid_test_gives_info(namespace: str) -> None:
    adapter = BeanstalkdAdapter(timeout=1.0)
    try:
        adapter.open(namespace)
        adapter.declare_queue(QueueConfig("q"))
        adapter.open_consumer(ConsumerConfig("c", "q", **PULL))
        assert adapter.send("q", Message("m1")).is_ok
        assert adapter.server is not None
        adapter.server.kill()
        t0 = time.monotonic()
        results = [adapter.send("q", Message("m2")), adapter.receive("c"), adapter.counters("q")]
        assert [r.type for r in results] == ["info", "info", "info"]
        assert all((r.error or "").startswith("beanstalkd: ") for r in results)
        assert time.monotonic() - t0 < 10
        adapter.close()  # must not hang or raise
    finally:
        adapter.shutdown()


def test_raw_roundtrip_loop() -> None:
    assert raw_roundtrip_loop(20) > 0


#: finding a difference needs no shrinking (shrinking replays against the server many times)
FIND = settings(deadline=None, derandomize=True, database=None,
                phases=(Phase.explicit, Phase.reuse, Phase.generate))
FAST = settings(max_examples=10, stateful_step_count=15, deadline=None, derandomize=True, database=None)


@pytest.mark.rules("DELIVERY-35", "DELIVERY-36", "DELIVERY-37", "REDELIVERY-35", "REDELIVERY-36")
def test_small_conformance_run_under_the_claimed_profile(shared: BeanstalkdAdapter) -> None:
    for machine in (DeliveryMachine, RedeliveryMachine):
        result = run_machine(machine, lambda: shared, profile("beanstalkd"), FAST, max_reruns=0)
        assert result.unknown is None, result.unknown
        assert result.findings == [], [f.message for f in result.findings]
        assert "receive.id" in result.checked and "delivery_count" in result.checked


@pytest.mark.rules("REDELIVERY-2", "REDELIVERY-35")
def test_artemis_profile_finds_that_a_close_keeps_the_reserve_count(shared: BeanstalkdAdapter) -> None:
    """Under artemis a consumer close undoes the delivery count; beanstalkd's reserves never goes down."""
    # derandomized: the examples follow the machine's source, so its edits move the first example that
    # closes a consumer holding a reserved job (60 found it until the delivery machine's mode draws changed)
    hyp = settings(FIND, max_examples=200, stateful_step_count=20)
    result = run_machine(DeliveryMachine, lambda: shared, profile("artemis"), hyp, max_reruns=0)
    assert result.findings, "the suite did not tell beanstalkd's reserves from Artemis' delivery count"
    finding = result.findings[0]
    assert finding.check == "delivery_count" and "REDELIVERY-2" in finding.rules
    assert "close" in [s.op for s in finding.steps]


@pytest.mark.rules("REDELIVERY-6", "REDELIVERY-26")
def test_artemis_profile_finds_that_beanstalkd_has_no_delivery_limit(shared: BeanstalkdAdapter) -> None:
    """Under artemis a message released max-delivery-attempts times leaves the queue; beanstalkd keeps
    releasing it (the model's dead-letter at the limit: message_count one lower)."""
    hyp = settings(FIND, max_examples=250, stateful_step_count=20)
    # the delivery count (the test above) and the count past the limit (redelivery.limit) would show
    # first: without those checks the message left at the limit is what shows. An exploration-bound
    # test: the redelivery machine's rules decide how soon it reaches the limit
    result = run_machine(RedeliveryMachine, lambda: shared, profile("artemis"), hyp, max_reruns=0,
                         skip_checks=("delivery_count", "delivery.redelivered", "redelivery.limit"))
    found = {f.check for f in result.findings}
    assert found, "the suite did not tell beanstalkd from a queue with a delivery limit"
    limit = [f for f in result.findings if "queue q message_count: expected" in f.message]
    assert limit, [f.message for f in result.findings]
    assert any(s.op == "nack" for s in limit[0].steps)
