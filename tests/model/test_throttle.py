"""The MDB throttle model (seed S1) against the seed's worked examples and the reference note B."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqconform.reference_model.errors import ModelMisuse
from mqconform.reference_model.throttle import (
    Throttle,
    ThrottleConfig,
    tuning_max_sessions,
    worker_threads,
)
from mqconform.reference_model.world import World

#: a random program: ("offer",) or ("complete", index, outcome)
OPS = st.lists(st.one_of(st.just(("offer", 0, "commit")),
                         st.tuples(st.just("complete"), st.integers(0, 20),
                                   st.sampled_from(["commit", "commit", "rollback", "timeout"]))),
               max_size=60)
CONFIGS = st.builds(ThrottleConfig, name=st.just("t"), max_sessions=st.integers(1, 6),
                    low_equals_high=st.booleans(), block_rule=st.sampled_from(["gt", "ge"]))


def throttle(max_sessions: int, **kw: object) -> Throttle:
    return Throttle(ThrottleConfig(name="t", max_sessions=max_sessions, **kw))  # type: ignore[arg-type]


def run(t: Throttle, ops: list[tuple[str, int, str]], on_step=None) -> None:  # type: ignore[no-untyped-def]
    """Apply a random program; `on_step(t, before_blocked, before_in_flight, op, result)` after each."""
    counter = 0
    for op, index, outcome in ops:
        blocked, in_flight = t.blocked, t.in_flight
        if op == "offer":
            counter += 1
            result: object = t.offer(f"m{counter}")
        else:
            if not t.in_process:
                continue
            msg = sorted(t.in_process)[index % len(t.in_process)]
            result = t.complete(msg, outcome)  # type: ignore[arg-type]
        if on_step is not None:
            on_step(t, blocked, in_flight, op, result)


@pytest.mark.rules("THROTTLE-1")
@pytest.mark.parametrize(("sessions", "equals", "high", "low"),
                         [(2, False, 2, 1), (5, False, 5, 2), (1, False, 1, 0), (10, False, 10, 5),
                          (100, False, 100, 50), (5, True, 5, 5), (1, True, 1, 1)])
def test_thresholds_come_from_max_sessions(sessions: int, equals: bool, high: int, low: int) -> None:
    config = ThrottleConfig(name="t", max_sessions=sessions, low_equals_high=equals)
    assert (config.high, config.low) == (high, low)


@pytest.mark.rules("THROTTLE-1")
@pytest.mark.parametrize("bad", [{"max_sessions": 0}, {"max_sessions": 2, "block_rule": "gte"},
                                 {"max_sessions": 2, "dispatch_crossing": "later"},
                                 {"max_sessions": True}])
def test_bad_settings_are_misuse(bad: dict[str, object]) -> None:
    with pytest.raises(ModelMisuse):
        ThrottleConfig(name="t", **bad)  # type: ignore[arg-type]


@pytest.mark.rules("THROTTLE-6", "THROTTLE-2", "THROTTLE-3", "THROTTLE-4", "THROTTLE-5")
def test_seed_trace_high_2_low_1() -> None:
    """S1: two queued, the third sets 3 > 2 and blocks, 3 -> 2 stays blocked, 2 -> 1 = low releases."""
    t = throttle(2)
    assert [t.offer("a"), t.offer("b")] == ["queued", "queued"]
    assert (t.in_flight, t.blocked) == (2, False)
    assert t.offer("c") == "queued"  # dispatched before the block (dispatch_crossing=before_block)
    assert (t.in_flight, t.blocked, t.blocks) == (3, True, 1)
    assert t.offer("d") == "held"  # stays on the destination
    assert (t.in_flight, t.waiting) == (3, ["d"])
    assert t.complete("a") == []
    assert (t.in_flight, t.blocked) == (2, True)
    assert t.complete("b") == ["d"]  # 2 -> 1 = low: released, d is taken (1 -> 2)
    assert (t.in_flight, t.blocked, t.waiting) == (2, False, [])


@pytest.mark.rules("THROTTLE-3", "THROTTLE-6")
def test_after_release_reading_holds_the_crossing_message() -> None:
    t = throttle(2, dispatch_crossing="after_release")
    assert [t.offer("a"), t.offer("b"), t.offer("c"), t.offer("d")] == ["queued", "queued", "held", "held"]
    assert (t.in_flight, t.blocked, t.waiting) == (3, True, ["c", "d"])
    with pytest.raises(ModelMisuse):
        t.complete("c")  # counted, but not dispatched
    assert t.complete("a") == []
    assert t.complete("b") == ["c", "d"]  # 1 = low: c first, then d is taken (count 2)
    assert (t.in_flight, t.blocked) == (2, False)


@pytest.mark.rules("THROTTLE-3", "THROTTLE-7", "THROTTLE-15")
def test_ge_rule_blocks_at_high() -> None:
    t = throttle(2, block_rule="ge")
    assert [t.offer("a"), t.offer("b"), t.offer("c")] == ["queued", "queued", "held"]
    assert (t.in_flight, t.blocked) == (2, True)


@pytest.mark.rules("THROTTLE-4", "THROTTLE-14", "THROTTLE-16")
@pytest.mark.parametrize("outcome", ["commit", "rollback", "timeout"])
def test_every_completion_decrements_by_one(outcome: str) -> None:
    t = throttle(4)
    for m in "abc":
        t.offer(m)
    total = t.total
    queued = t.complete("b", outcome)  # type: ignore[arg-type]
    if outcome == "commit":
        assert (t.in_flight, queued, t.total) == (2, [], total)
    else:  # back to the destination, taken again as a new work record with a new increment
        assert (t.in_flight, queued, t.total) == (3, ["b"], total + 1)


@pytest.mark.rules("THROTTLE-14", "THROTTLE-16", "THROTTLE-8")
def test_rollback_while_blocked_waits_ahead_of_later_arrivals() -> None:
    t = throttle(2)
    for m in "abcd":
        t.offer(m)
    assert t.complete("a", "rollback") == []  # 3 -> 2, still blocked
    assert t.waiting == ["a", "d"]
    assert t.complete("b") == ["a", "d"]  # 2 -> 1 = low: a (redelivered) before d
    assert t.total == 5 and t.in_flight == 3 and t.blocked and t.blocks == 2


@pytest.mark.rules("THROTTLE-4")
def test_completing_an_unknown_record_is_misuse() -> None:
    t = throttle(2)
    t.offer("a")
    with pytest.raises(ModelMisuse):
        t.complete("zz")
    with pytest.raises(ModelMisuse):
        t.complete("a", "maybe")  # type: ignore[arg-type]
    with pytest.raises(ModelMisuse):
        t.offer("a")


@pytest.mark.rules("THROTTLE-3", "THROTTLE-5", "THROTTLE-7", "THROTTLE-9")
@given(config=CONFIGS, ops=OPS)
def test_hysteresis_invariants(config: ThrottleConfig, ops: list[tuple[str, int, str]]) -> None:
    t = Throttle(config)
    blocks = 0

    def check(t: Throttle, was_blocked: bool, before: int, op: str, result: object) -> None:
        nonlocal blocks
        assert 0 <= t.in_flight <= config.max_in_flight
        if was_blocked and op == "offer":
            assert result == "held"  # nothing queued while blocked
        if was_blocked and op == "complete" and (result or not t.blocked):
            assert before - 1 <= config.low  # released only at low
        if was_blocked and op == "complete" and before - 1 <= config.low:
            assert result or not t.waiting  # and always released there
        if t.waiting:
            assert t.blocked
        reblocked = was_blocked and op == "complete" and bool(result) and t.blocked
        blocks += (not was_blocked and t.blocked) or reblocked
        assert t.blocks == blocks

    run(t, ops, check)


@pytest.mark.rules("THROTTLE-8", "THROTTLE-2", "THROTTLE-4")
@given(config=CONFIGS, ops=OPS)
def test_no_message_is_lost_or_duplicated(config: ThrottleConfig, ops: list[tuple[str, int, str]]) -> None:
    t = Throttle(config)
    done: list[str] = []
    offered: list[str] = []

    def check(t: Throttle, _b: bool, _f: int, op: str, result: object) -> None:
        if op == "offer":
            offered.append(f"m{len(offered) + 1}")
        assert t.in_flight == len(t.in_process)
        everywhere = sorted(list(t.in_process) + t.waiting)
        assert len(everywhere) == len(set(everywhere))
        assert set(everywhere) <= set(offered)

    original = t.complete

    def complete(msg: str, outcome: str = "commit") -> list[str]:
        if outcome == "commit":
            done.append(msg)
        return original(msg, outcome)  # type: ignore[arg-type]

    t.complete = complete  # type: ignore[method-assign]
    run(t, ops, check)
    assert sorted(done + list(t.in_process) + t.waiting) == sorted(offered)


@pytest.mark.rules("THROTTLE-10")
@given(config=CONFIGS, ops=OPS)
def test_completing_everything_releases(config: ThrottleConfig, ops: list[tuple[str, int, str]]) -> None:
    t = Throttle(config)
    run(t, ops)
    for _ in range(1000):
        if not t.in_process:
            break
        t.complete(sorted(t.in_process)[0])
    assert not t.blocked and not t.waiting and t.in_flight == 0


def _simulate_workers(max_sessions: int, wt: int, steps: list[int]) -> tuple[bool, list[int]]:
    """A port with an endless backlog feeding WT servant worker threads through the WLM queue.

    Returns (was the bad state "free worker, empty WLM queue, blocked" ever seen, WLM queue lengths
    at each release while every worker was busy).
    """
    t = throttle(max_sessions)
    wlm: list[str] = []
    running: list[str] = []
    counter = 0
    bad = False
    at_release: list[int] = []

    def feed() -> None:
        nonlocal counter
        while not t.blocked:
            counter += 1
            t.offer(f"m{counter}")
            wlm.append(f"m{counter}")

    def dispatch() -> None:
        while wlm and len(running) < wt:
            running.append(wlm.pop(0))

    feed()
    dispatch()
    for pick in steps:
        if not running:
            break
        done = running.pop(pick % len(running))
        was_blocked = t.blocked
        t.complete(done)
        if was_blocked and not t.blocked:
            at_release.append(len(wlm))
        feed()
        dispatch()
        bad |= len(running) < wt and not wlm and t.blocked
    return bad, at_release


@pytest.mark.rules("THROTTLE-11")
@given(wt=st.integers(1, 8), steps=st.lists(st.integers(0, 50), max_size=80))
def test_two_wt_never_idles_a_worker_behind_the_throttle(wt: int, steps: list[int]) -> None:
    bad, _ = _simulate_workers(tuning_max_sessions(wt), wt, steps)
    assert not bad


@pytest.mark.rules("THROTTLE-11")
def test_below_two_wt_a_worker_idles_behind_the_throttle() -> None:
    bad, _ = _simulate_workers(max_sessions=4, wt=4, steps=[0] * 10)  # low 2 < WT 4
    assert bad


@pytest.mark.rules("THROTTLE-12")
@given(wt=st.integers(1, 6), n=st.integers(0, 6), steps=st.lists(st.integers(0, 50), max_size=80))
def test_two_wt_plus_n_keeps_n_ready_at_release(wt: int, n: int, steps: list[int]) -> None:
    _, at_release = _simulate_workers(tuning_max_sessions(wt, n), wt, steps)
    assert all(queued >= n for queued in at_release)


@pytest.mark.rules("THROTTLE-13", "THROTTLE-11", "THROTTLE-12")
def test_tuning_example_is_100() -> None:
    wt = worker_threads(servants=3, threads_per_servant=6)
    assert wt == 18
    assert tuning_max_sessions(wt) == 36
    assert tuning_max_sessions(wt, backlog=32) == 100 == 2 * (3 * 6 + 32)
    config = ThrottleConfig(name="t", max_sessions=100)
    assert (config.high, config.low) == (100, 50)
    with pytest.raises(ModelMisuse):
        tuning_max_sessions(0)


@pytest.mark.rules("THROTTLE-15")
@given(ops=OPS)
def test_high_one_ge_is_serial(ops: list[tuple[str, int, str]]) -> None:
    t = throttle(1, block_rule="ge")
    queued_order: list[str] = []

    def check(t: Throttle, _b: bool, _f: int, op: str, result: object) -> None:
        assert len(t.in_process) <= 1
        if op == "offer" and result == "queued":
            queued_order.append(max(t.in_process))
        elif op == "complete":
            queued_order.extend(result)  # type: ignore[arg-type]

    run(t, [op for op in ops if op[2] == "commit"], check)
    assert queued_order == sorted(queued_order, key=lambda m: int(m[1:]))


@pytest.mark.rules("THROTTLE-15")
def test_high_one_gt_allows_two_in_process() -> None:
    t = throttle(1)
    assert [t.offer("a"), t.offer("b")] == ["queued", "queued"]
    assert len(t.in_process) == 2


@pytest.mark.rules("THROTTLE-17")
def test_nondurable_topic_listener_is_not_throttled() -> None:
    t = throttle(1, listener="nondurable_topic")
    assert [t.offer(m) for m in "abcde"] == ["queued"] * 5
    assert not t.blocked and t.blocks == 0
    durable = throttle(1, listener="durable_topic")
    assert [durable.offer(m) for m in "abc"] == ["queued", "queued", "held"]


@pytest.mark.rules("THROTTLE-6", "THROTTLE-9")
def test_scenario_operations_through_the_world() -> None:
    w = World()
    w.call("throttle", name="lp", max_sessions=2, low_equals_high=False, block_rule="gt")
    assert [w.call("offer", throttle="lp", id=i) for i in (1, 2, 3, 4)] == ["queued"] * 3 + ["held"]
    assert w.call("throttle_state", throttle="lp") == {"in_flight": 3, "blocked": True, "blocks": 1,
                                                       "waiting": ["4"]}
    assert w.call("complete", throttle="lp", id=1) == []
    assert w.call("complete", throttle="lp", id=2, outcome="rollback") == ["2", "4"]
    assert w.call("throttle_state", throttle="lp")["in_flight"] == 3
    with pytest.raises(ModelMisuse):
        w.call("throttle", name="x", max_sessions=2, colour="red")
    with pytest.raises(ModelMisuse):
        w.call("offer", throttle="nope", id=1)
