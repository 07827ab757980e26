"""The RocketMQ fast-failure model (seed S2) against the seed's numbers and the reference note A."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqconform.reference_model.admission import (
    OVERLOAD_TEXT,
    Admission,
    AdmissionConfig,
    QueueLimit,
    clean_text,
)
from mqconform.reference_model.errors import ModelMisuse
from mqconform.reference_model.world import World

#: a random program: submit to a queue, take from a queue, lock held/released, or advance time
OPS = st.lists(st.one_of(
    st.tuples(st.just("submit"), st.sampled_from(["send", "pull"])),
    st.tuples(st.just("take"), st.sampled_from(["send", "pull"])),
    st.tuples(st.just("lock"), st.booleans()),
    st.tuples(st.just("advance"), st.sampled_from([1, 3, 10, 37, 150, 400, 1200])),
), max_size=50)
SMALL = {"send": {"wait_ms": 200, "capacity": 3}, "pull": {"wait_ms": 50, "capacity": 3}}


def world(**settings: object) -> World:
    w = World()
    w.call("admission", name="broker", **settings)
    return w


def answer(w: World, request: str) -> dict[str, object] | None:
    return w.call("request", id=request)  # type: ignore[no-any-return]


def play(w: World, ops: list[tuple[str, object]]) -> dict[str, tuple[str, int]]:
    """Run a random program on `w`; returns request -> (queue, submitted at)."""
    submitted: dict[str, tuple[str, int]] = {}
    for op, arg in ops:
        if op == "submit":
            rid = f"r{len(submitted) + 1}"
            submitted[rid] = (str(arg), w.now_ms)
            w.call("submit", queue=arg, id=rid)
        elif op == "take":
            w.call("take", queue=arg)
        elif op == "lock":
            w.call("lock", state="held" if arg else "released")
        else:
            w.advance(int(arg))  # type: ignore[call-overload]
    return submitted


@pytest.mark.rules("ADMISSION-4", "ADMISSION-8", "ADMISSION-1", "ADMISSION-15")
def test_defaults_are_the_seeds() -> None:
    config = AdmissionConfig()
    assert {q: (limit.wait_ms, limit.capacity) for q, limit in config.queues.items()} == {
        "send": (200, 10_000), "pull": (5_000, 100_000), "heartbeat": (31_000, 50_000),
        "transaction": (3_000, 100_000)}
    assert (config.scan_start_ms, config.scan_period_ms, config.enabled) == (1000, 10, True)
    assert (config.busy_after_ms, config.busy_upper_ms) == (1000, 10_000_000)
    partial = AdmissionConfig(queues={"send": QueueLimit(wait_ms=20, capacity=2)})
    assert partial.queues["send"].wait_ms == 20 and partial.queues["pull"].wait_ms == 5_000


@pytest.mark.rules("ADMISSION-4")
@pytest.mark.parametrize("settings", [{"scan_period_ms": 0}, {"busy_after_ms": 5, "busy_upper_ms": 5},
                                      {"queues": {"send": {"wait_ms": -1, "capacity": 1}}},
                                      {"queues": {"send": {"wait_ms": 1}}}, {"queues": [1]},
                                      {"colour": "red"}])
def test_bad_settings_are_misuse(settings: dict[str, object]) -> None:
    with pytest.raises(ModelMisuse):
        world(**settings)


@pytest.mark.rules("ADMISSION-1")
def test_nothing_is_answered_before_the_first_tick() -> None:
    w = world()
    w.call("submit", queue="send", id="early")
    w.advance(999)
    assert answer(w, "early") is None
    w.advance(1)
    assert answer(w, "early") == {
        "answer": "TIMEOUT_CLEAN_QUEUE", "at_ms": 1000, "code": 2,
        "text": clean_text("TIMEOUT_CLEAN_QUEUE", 1000, 0)}


@pytest.mark.rules("ADMISSION-2", "ADMISSION-3", "ADMISSION-10", "ADMISSION-4")
def test_send_is_rejected_at_the_first_tick_at_or_after_200_ms() -> None:
    """S2: a send is rejected at most about 210 ms after it was queued."""
    w = world()
    w.advance(1003)
    w.call("submit", queue="send", id="s")
    w.advance(199)
    assert answer(w, "s") is None  # 1202: 199 ms in queue, never early
    w.advance(7)
    assert answer(w, "s") is None  # 1209: the first tick at or after 1203 + 200 is 1210
    w.advance(1)
    got = answer(w, "s")
    assert got == {"answer": "TIMEOUT_CLEAN_QUEUE", "at_ms": 1210, "code": 2,
                   "text": "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in "
                           "queue: 207ms, size of queue: 0"}


@pytest.mark.rules("ADMISSION-10", "ADMISSION-3", "ADMISSION-1")
@given(start=st.integers(1000, 1100), delays=st.lists(st.integers(0, 60), min_size=1, max_size=8))
def test_every_send_is_answered_within_210_ms(start: int, delays: list[int]) -> None:
    w = world()
    w.advance(start)
    submitted = []
    for i, delay in enumerate(delays):
        w.advance(delay)
        submitted.append((f"s{i}", w.now_ms))
        w.call("submit", queue="send", id=f"s{i}")
    w.advance(1000)
    for rid, at in submitted:
        got = answer(w, rid)
        assert got is not None and got["answer"] == "TIMEOUT_CLEAN_QUEUE"
        assert at + 200 <= got["at_ms"] < at + 210  # type: ignore[operator]
        assert (got["at_ms"] - 1000) % 10 == 0  # type: ignore[operator]


@pytest.mark.rules("ADMISSION-5", "ADMISSION-2")
def test_scan_stops_at_the_first_young_request() -> None:
    w = world(scan_start_ms=0, queues=SMALL)
    w.call("submit", queue="send", id="old")
    w.advance(100)
    w.call("submit", queue="send", id="young")
    w.advance(100)  # tick at 200: old is 200 ms in queue, young 100 ms
    assert answer(w, "old")["text"] == clean_text("TIMEOUT_CLEAN_QUEUE", 200, 1)  # type: ignore[index]
    assert answer(w, "young") is None
    w.advance(100)
    assert answer(w, "young")["at_ms"] == 300  # type: ignore[index]


@pytest.mark.rules("ADMISSION-6", "ADMISSION-15", "ADMISSION-17", "ADMISSION-18")
def test_pcbusy_drain_takes_the_whole_send_queue() -> None:
    queues = {"send": {"wait_ms": 60_000, "capacity": 10}, "pull": {"wait_ms": 60_000, "capacity": 10}}
    w = world(queues=queues)
    w.advance(1000)
    w.call("lock", state="held")  # begin 1000
    for i in range(3):
        w.call("submit", queue="send", id=f"s{i}")
        w.advance(300)
    w.call("submit", queue="pull", id="p")
    w.advance(100)  # 2000: held exactly 1000 ms: not busy (strict)
    assert [answer(w, f"s{i}") for i in range(3)] == [None, None, None]
    w.advance(10)  # 2010: held 1010 ms > 1000
    got = [answer(w, f"s{i}") for i in range(3)]
    assert [g["answer"] for g in got] == ["PCBUSY_CLEAN_QUEUE"] * 3  # type: ignore[index]
    assert [g["text"] for g in got] == [  # type: ignore[index]
        clean_text("PCBUSY_CLEAN_QUEUE", 1010, 2), clean_text("PCBUSY_CLEAN_QUEUE", 710, 1),
        clean_text("PCBUSY_CLEAN_QUEUE", 410, 0)]
    assert answer(w, "p") is None  # the drain applies to the send queue only


@pytest.mark.rules("ADMISSION-18", "ADMISSION-6")
def test_drain_runs_before_the_timeout_scan() -> None:
    w = world(scan_start_ms=0, busy_after_ms=30, queues=SMALL)
    w.call("lock", state="held")
    w.call("submit", queue="send", id="s")
    w.advance(400)  # first tick with work: 40 (busy), before the send's 200 ms limit
    assert answer(w, "s")["answer"] == "PCBUSY_CLEAN_QUEUE"  # type: ignore[index]
    assert AdmissionConfig(queues={"zz": QueueLimit(1, 1), "ack": QueueLimit(1, 1),
                                   "admin": QueueLimit(1, 1)}).scan_order() == [
        "send", "pull", "heartbeat", "transaction", "ack", "admin", "zz"]


@pytest.mark.rules("ADMISSION-15")
def test_page_cache_predicate_is_exact() -> None:
    a = Admission(AdmissionConfig())
    for now in (0, 1001, 5_000_000, 20_000_000):
        assert not a.page_cache_busy(now)  # a free lock is never busy (not begin = 0)
    a.set_lock(True, 500)
    assert not a.page_cache_busy(1500)  # exactly 1000 ms
    assert a.page_cache_busy(1501)
    assert a.page_cache_busy(500 + 9_999_999)
    assert not a.page_cache_busy(500 + 10_000_000)  # the sanity bound
    a.set_lock(True, 1400)  # already held: the holder's begin stays
    assert a.lock_begin == 500
    a.set_lock(False, 1600)
    assert not a.page_cache_busy(1600)


@pytest.mark.rules("ADMISSION-16")
def test_no_pcbusy_after_the_lock_is_released() -> None:
    queues = {"send": {"wait_ms": 60_000, "capacity": 10}}
    w = world(scan_start_ms=0, busy_after_ms=30, queues=queues)
    w.call("lock", state="held")
    w.advance(20)
    w.call("submit", queue="send", id="a")  # held 20, not busy yet: queued
    w.advance(20)  # 40: held 40 > 30
    assert answer(w, "a")["answer"] == "PCBUSY_CLEAN_QUEUE"  # type: ignore[index]
    w.call("lock", state="released")
    w.call("submit", queue="send", id="b")
    w.advance(5000)
    assert answer(w, "b") is None


@pytest.mark.rules("ADMISSION-19", "ADMISSION-20")
@pytest.mark.parametrize("enabled", [True, False])
def test_a_send_meeting_a_busy_page_cache_is_refused_on_arrival_or_when_run(enabled: bool) -> None:
    queues = {"send": {"wait_ms": 60_000, "capacity": 10}, "pull": {"wait_ms": 60_000, "capacity": 10}}
    w = world(scan_start_ms=0, busy_after_ms=30, queues=queues, enabled=enabled)
    w.call("submit", queue="send", id="early")  # queued while the lock is free
    w.call("lock", state="held")
    w.advance(31)  # held 31 > 30: busy
    assert w.call("submit", queue="send", id="late") == "REJECTREQUEST"
    assert w.call("submit", queue="pull", id="pull") == "queued"  # the guards are the send's only
    assert answer(w, "late") == {"answer": "REJECTREQUEST", "at_ms": 31, "code": 2,
                                 "text": "[REJECTREQUEST]system busy, start flow control for a while"}
    if not enabled:  # no scan drains it: a worker runs it, and the put hook refuses it
        assert w.call("take", queue="send") == "early"
        assert answer(w, "early")["answer"] == "PC_SYNCHRONIZED"  # type: ignore[index]
        assert "early" not in w.admissions["broker"].executed
    assert w.call("take", queue="pull") == "pull"
    assert answer(w, "pull")["answer"] == "processed"  # type: ignore[index]


@pytest.mark.rules("ADMISSION-19", "ADMISSION-20")
def test_without_the_guards_only_the_scan_answers_pcbusy() -> None:
    """The named option page_cache_guards off: seed S2's text alone (the drain only)."""
    queues = {"send": {"wait_ms": 60_000, "capacity": 10}}
    w = world(scan_start_ms=0, busy_after_ms=30, queues=queues, enabled=False, page_cache_guards=False)
    w.call("lock", state="held")
    w.advance(31)
    assert w.call("submit", queue="send", id="a") == "queued"
    assert w.call("take", queue="send") == "a"
    assert answer(w, "a")["answer"] == "processed"  # type: ignore[index]


@pytest.mark.rules("ADMISSION-8")
def test_overload_at_capacity_10000() -> None:
    w = world()
    assert all(w.call("submit", queue="send", id=f"s{i}") == "queued" for i in range(10_000))
    assert w.call("submit", queue="send", id="over") == "OVERLOAD"
    assert answer(w, "over") == {"answer": "OVERLOAD", "at_ms": 0, "text": OVERLOAD_TEXT, "code": 2}
    assert w.admissions["broker"].queue_length("send") == 10_000
    assert w.call("take", queue="send") == "s0"
    assert w.call("submit", queue="send", id="again") == "queued"
    assert w.call("submit", queue="pull", id="p") == "queued"  # capacities are per queue


@pytest.mark.rules("ADMISSION-9", "ADMISSION-12", "ADMISSION-13")
def test_worker_takes_the_head_and_its_request_is_never_rejected() -> None:
    w = world(scan_start_ms=0, queues=SMALL)
    for rid in ("a", "b", "c"):
        w.call("submit", queue="send", id=rid)
    assert w.call("take", queue="send") == "a"
    assert answer(w, "a") == {"answer": "processed", "at_ms": 0, "text": None, "code": None}
    w.advance(500)
    assert answer(w, "a")["answer"] == "processed"  # type: ignore[index]
    assert answer(w, "b")["answer"] == "TIMEOUT_CLEAN_QUEUE"  # type: ignore[index]
    assert w.call("take", queue="send") is None  # b and c were removed by the scan: never executed
    assert w.admissions["broker"].executed == ["a"]


@pytest.mark.rules("ADMISSION-11")
def test_disabled_fast_failure_answers_nothing() -> None:
    w = world(enabled=False, busy_after_ms=30, queues=SMALL)
    w.call("lock", state="held")
    w.call("submit", queue="send", id="a")
    w.advance(100_000)
    assert answer(w, "a") is None
    assert w.admissions["broker"].next_tick_ms(0) is None
    assert w.call("take", queue="send") == "a"


@pytest.mark.rules("ADMISSION-7", "ADMISSION-9", "ADMISSION-13", "ADMISSION-12", "ADMISSION-3")
@given(ops=OPS, start=st.sampled_from([0, 7, 1000]), busy_after=st.sampled_from([30, 1000]))
def test_exactly_one_answer_per_request(ops: list[tuple[str, object]], start: int, busy_after: int) -> None:
    w = world(scan_start_ms=start, busy_after_ms=busy_after, queues=SMALL)
    admission = w.admissions["broker"]
    seen: dict[str, object] = {}
    submitted: dict[str, tuple[str, int]] = {}
    for step in ops:
        if step[0] == "submit":
            rid = f"r{len(submitted) + 1}"
            submitted[rid] = (str(step[1]), w.now_ms)
            w.call("submit", queue=step[1], id=rid)
        else:
            play(w, [step])
        for rid in submitted:  # an answer, once given, never changes
            got = answer(w, rid)
            if rid in seen:
                assert got == seen[rid]
            elif got is not None:
                seen[rid] = got
    executed = admission.executed
    assert len(executed) == len(set(executed))
    for rid, got in seen.items():
        queue, at = submitted[rid]
        kind = got["answer"]  # type: ignore[index]
        assert (rid in executed) == (kind == "processed")  # rejected => not stored
        if kind == "TIMEOUT_CLEAN_QUEUE":
            assert got["at_ms"] - at >= SMALL[queue]["wait_ms"]  # type: ignore[index, operator]
    order = list(submitted)
    for queue in ("send", "pull"):  # one worker per queue: executed is a subsequence of enqueue order
        run = [r for r in executed if submitted[r][0] == queue]
        assert run == sorted(run, key=order.index)


@pytest.mark.rules("ADMISSION-1", "ADMISSION-5", "ADMISSION-6")
@given(ops=OPS, start=st.sampled_from([0, 7, 1000]), busy_after=st.sampled_from([30, 1000]))
def test_skipping_idle_ticks_changes_nothing(ops: list[tuple[str, object]], start: int,
                                             busy_after: int) -> None:
    """World.advance only stops at ticks with work; ticking every 10 ms gives the same answers."""
    config = AdmissionConfig(scan_start_ms=start, busy_after_ms=busy_after,
                             queues={q: QueueLimit(**v) for q, v in SMALL.items()})
    w = world(scan_start_ms=start, busy_after_ms=busy_after, queues=SMALL)
    naive = Admission(config)
    now = 0
    count = 0
    for op, arg in ops:
        if op == "submit":
            count += 1
            assert w.call("submit", queue=arg, id=f"r{count}") == naive.submit(str(arg), f"r{count}", now)
        elif op == "take":
            assert w.call("take", queue=arg) == naive.take(str(arg), now)
        elif op == "lock":
            w.call("lock", state="held" if arg else "released")
            naive.set_lock(bool(arg), now)
        else:
            target = now + int(arg)  # type: ignore[call-overload]
            w.advance(int(arg))  # type: ignore[call-overload]
            tick = start if now < start else start + ((now - start) // 10 + 1) * 10
            while tick <= target:
                naive.tick(tick)
                tick += 10
            now = target
    for i in range(1, count + 1):
        assert w.admissions["broker"].answer(f"r{i}") == naive.answer(f"r{i}")


@pytest.mark.rules("ADMISSION-14")
def test_a_retry_after_a_client_timeout_can_store_twice() -> None:
    """S2: the client retries; if the first attempt was still queued and then ran, both are stored."""
    w = world(scan_start_ms=0, queues={"send": {"wait_ms": 200, "capacity": 10}})
    w.call("submit", queue="send", id="m#1")
    w.advance(150)  # the client's budget runs out before the broker answers; it retries
    w.call("submit", queue="send", id="m#2")
    assert [w.call("take", queue="send"), w.call("take", queue="send")] == ["m#1", "m#2"]
    stored = [rid.split("#")[0] for rid in w.admissions["broker"].executed]
    assert stored == ["m", "m"]  # a duplicate: consumers must be idempotent
    # a rejected attempt is not stored, so its retry does not duplicate
    w.call("submit", queue="send", id="n#1")
    w.advance(210)
    w.call("submit", queue="send", id="n#2")
    w.call("take", queue="send")
    assert [r for r in w.admissions["broker"].executed if r.startswith("n")] == ["n#2"]


@pytest.mark.rules("ADMISSION-7")
def test_misuse() -> None:
    w = world(queues=SMALL)
    w.call("submit", queue="send", id="a")
    with pytest.raises(ModelMisuse):
        w.call("submit", queue="send", id="a")
    with pytest.raises(ModelMisuse):
        w.call("submit", queue="nope", id="b")
    with pytest.raises(ModelMisuse):
        w.call("request", id="zz")
    with pytest.raises(ModelMisuse):
        w.admissions["broker"].tick(1005)  # not a tick time
