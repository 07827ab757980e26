"""A broker adapter's `advance` (adapters/_base.py) on a fake clock: it sleeps until the example's
logical time has passed since open(), and a message the model expires by then has run out on the
broker too, however late in real time it was sent (EXPIRY-1/2)."""

from __future__ import annotations

import pytest

from mqconform.adapters import _base


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Clocked(_base.BrokerAdapter):
    capabilities = frozenset({"advance_time"})

    def __init__(self) -> None:
        self._reset()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(_base, "time", fake)
    return fake


@pytest.mark.rules("EXPIRY-1", "EXPIRY-2")
def test_advance_sleeps_only_what_the_operations_did_not_take(clock: FakeTime) -> None:
    adapter = Clocked()
    clock.now += 0.3  # the operations took 300 ms
    assert adapter.advance(1000).is_ok
    assert clock.slept == [pytest.approx(0.7)]
    clock.now += 2.0  # far ahead of the logical time: no sleep at all
    assert adapter.advance(500).is_ok
    assert clock.slept[-1] == 0.0


@pytest.mark.rules("EXPIRY-1", "EXPIRY-2")
def test_advance_waits_for_a_ttl_sent_late_to_run_out(clock: FakeTime) -> None:
    adapter = Clocked()
    clock.now += 0.8  # the send happened 800 ms into an example still at logical time 0
    adapter._note_ttl(1000)  # the model expires it at 1000 ms; the broker at 1.8 s real
    adapter._note_ttl(None)  # no TTL: nothing to wait for
    assert adapter.advance(1500).is_ok  # logical 1500 = real 1.5 s: 0.7 s would be too short
    assert clock.now - 100.0 >= 1.8 + _base.TTL_MARGIN_S - 1e-9
    before = clock.now
    assert adapter.advance(100).is_ok  # that TTL is done with; the logical time is behind: no sleep
    assert clock.now == before


@pytest.mark.rules("EXPIRY-1", "EXPIRY-2")
def test_advance_does_not_wait_for_a_ttl_the_model_has_not_expired(clock: FakeTime) -> None:
    adapter = Clocked()
    adapter._note_ttl(5000)
    assert adapter.advance(1000).is_ok
    assert clock.slept == [pytest.approx(1.0)]


def _slow_operations(adapter: Clocked, clock: FakeTime, seconds: float, n: int = 10) -> None:
    """n operations of `seconds` each, measured by the adapter's `_do`."""
    def step() -> None:
        clock.now += seconds
    for _ in range(n):
        assert adapter._do("counters", step).is_ok


@pytest.mark.rules("EXPIRY-1", "EXPIRY-2")
def test_the_ttl_margin_grows_with_the_round_trips_measured_during_the_run(clock: FakeTime) -> None:
    quiet, loaded = Clocked(), Clocked()
    _slow_operations(quiet, clock, 0.002)
    _slow_operations(loaded, clock, 0.030)
    assert quiet.latency.ttl_margin_s(_base.TTL_MARGIN_S) == _base.TTL_MARGIN_S  # the floor holds
    assert loaded.latency.ttl_margin_s(_base.TTL_MARGIN_S) == pytest.approx(0.18)  # 6 x 30 ms
    loaded._clock_origin = quiet._clock_origin = clock.now
    loaded._note_ttl(1000)
    assert loaded.advance(1000).is_ok  # the model expires it now; the broker gets 180 ms, not 50
    assert clock.now - loaded._clock_origin == pytest.approx(1.18)


def test_margins_stay_bounded_and_ignore_what_is_not_a_round_trip(clock: FakeTime) -> None:
    adapter = Clocked()
    for _ in range(10):
        adapter.latency.record("advance", 5.0)  # a sleep, not a round trip
    assert adapter.latency.typical_s() is None
    _slow_operations(adapter, clock, 2.0)  # a machine so loaded that nothing is timely
    assert adapter.latency.ttl_margin_s(0.05) == pytest.approx(0.2)  # capped at 4 x the floor
    before = clock.now
    assert adapter._settle_deadline(0.5) - before == pytest.approx(2.0)
    assert adapter.latency.summary()["p90_ms"] == pytest.approx(2000.0)


def test_a_settle_wait_is_not_latency(clock: FakeTime) -> None:
    """An operation's round trip ends where its settle starts: a settle that runs out its bound every
    time (a broker whose counters never match) does not lengthen the next settle."""
    adapter = Clocked()

    def ack_then_settle() -> None:
        clock.now += 0.002  # the request
        deadline = adapter._settle_deadline(1.0)
        clock.now = deadline  # the settle runs out its bound
    for _ in range(20):
        assert adapter._do("ack", ack_then_settle).is_ok
    assert adapter.latency.typical_s() == pytest.approx(0.002)
    assert adapter._settle_deadline(1.0) - clock.now == pytest.approx(1.0)
