"""A timed example on a real clock: a failing check is discarded (Hypothesis ``reject``), not
reported, when the broker's clock ran further ahead of the model's than the machine's margin
(Driver.clock_lead); below the margin, and without one, the failure stands."""

from __future__ import annotations

import pytest
from hypothesis.errors import UnsatisfiedAssumption

from mqconform.adapters import _base as base
from mqconform.adapters._base import BrokerAdapter
from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring.driver import Driver, Violation
from mqconform.conformance.exploring.timing import TimeLedger, describe
from mqconform.reference_model.profiles import JETSTREAM


class LeadingClock(ReferenceAdapter):
    """The model, whose 'broker clock' runs `lead` ms ahead of the logical one, and whose receives
    find a message the model has not (as if a timer had fired early)."""

    lead = 0.0

    def clock_lead_ms(self) -> float:
        return self.lead

    def receive(self, consumer: str) -> Result:
        return Result.ok("early")


def _failing_receive(lead: float, limit: float | None) -> Driver:
    adapter = LeadingClock(options=JETSTREAM)
    adapter.lead = lead
    driver = Driver(adapter, JETSTREAM, None, {"receive.ack_wait": ("REDELIVERY-27",)},
                    ledger=TimeLedger())
    driver.both("queue", {"name": "q"})
    driver.both("consumer", {"name": "c", "queue": "q"})
    driver.clock_lead.limit_ms = limit
    driver.both("receive", "c", compare="receive.ack_wait")
    return driver


def test_a_failure_past_the_margin_is_discarded_and_counted() -> None:
    ledger = TimeLedger()
    adapter = LeadingClock(options=JETSTREAM)
    adapter.lead = 120.0
    driver = Driver(adapter, JETSTREAM, None, {}, ledger=ledger)
    driver.clock_lead.limit_ms = 60.0
    driver.both("queue", {"name": "q"})
    driver.both("consumer", {"name": "c", "queue": "q"})
    with pytest.raises(UnsatisfiedAssumption):
        driver.both("receive", "c", compare="receive.ack_wait")
    assert driver.clock_lead.ms == 120.0
    assert driver.ledger.discarded == 1
    summary = driver.ledger.summary(1.0)
    assert summary["discarded"] == 1
    assert "1 example(s) discarded" in describe(summary, 1.0)


@pytest.mark.parametrize(("lead", "limit"), [(30.0, 60.0), (500.0, None)])
def test_a_failure_inside_the_margin_or_without_one_stands(lead: float, limit: float | None) -> None:
    with pytest.raises(Violation):
        _failing_receive(lead=lead, limit=limit)


def test_a_passing_check_is_never_discarded() -> None:
    driver = Driver(LeadingClock(options=JETSTREAM), JETSTREAM, None, {})
    driver.clock_lead.limit_ms = 60.0
    driver.clock_lead.ms = 500.0
    driver.check("x", True, lambda: "never")
    assert driver.ledger.discarded == 0


class FakeClock:
    """time.monotonic and time.sleep for adapters._base: real time passes only when the test says
    (or the adapter sleeps), so a loaded machine cannot move the figures."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_broker_adapter_measures_its_lead_from_open_less_the_advances(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Clocked(BrokerAdapter):
        name = "clocked"
        capabilities = frozenset({"advance_time"})

    clock = FakeClock()
    monkeypatch.setattr(base, "time", clock)
    adapter = Clocked()
    adapter._reset()
    clock.now += 0.5  # opened 500 ms ago
    assert adapter.clock_lead_ms() == pytest.approx(500)
    assert adapter.advance(400).is_ok  # 400 of them were advances: no sleep was needed
    assert clock.now == pytest.approx(1000.5) and adapter.clock_lead_ms() == pytest.approx(100)
    assert adapter.advance(200).is_ok  # the advance sleeps until the broker's clock meets the model's
    assert clock.now == pytest.approx(1000.6) and adapter.clock_lead_ms() == pytest.approx(0, abs=1e-6)


_TIMED_SCENARIO = """
profile: jetstream
{limit}
steps:
- queue: {{name: q}}
- consumer: {{name: c, queue: q, window_bytes: 0, ack_wait_ms: 200}}
- advance: 300
- receive: c
  expect: {{result: null}}
"""


@pytest.mark.parametrize(("lead", "limit", "verdict"), [(120.0, 60, "unknown"), (30.0, 60, "fail"),
                                                        (500.0, None, "fail")])
def test_a_scenario_mismatch_past_its_margin_is_not_judged(lead: float, limit: int | None,
                                                             verdict: str) -> None:
    """The scenario runner reads the same clock: with ``clock_lead_limit_ms`` set, a mismatch after
    the implementation's clock ran further ahead is ``unknown``; below it, or without the key, FAIL."""
    from mqconform.scenario.loader import parse
    from mqconform.scenario.runner import run_scenario, run_until_judged

    text = _TIMED_SCENARIO.format(limit="" if limit is None else f"clock_lead_limit_ms: {limit}")
    adapter = LeadingClock(options=JETSTREAM)
    adapter.lead = lead
    outcome = run_scenario(parse(text, "timed.yaml"), adapter)
    assert (outcome.verdict, outcome.step) == (verdict, 4)
    if verdict == "unknown":
        assert f"ran {lead:.0f} ms ahead" in outcome.message
        attempts: list[str] = []

        class Counted(LeadingClock):
            def open(self, namespace: str) -> None:
                attempts.append(namespace)
                super().open(namespace)

        counted = Counted(options=JETSTREAM)
        counted.lead = lead
        assert run_until_judged(parse(text, "timed.yaml"), counted, attempts=3).verdict == "unknown"
        assert len(attempts) == 3 and len(set(attempts)) == 3


def test_a_malformed_clock_lead_limit_is_one_line_naming_the_file() -> None:
    from mqconform.scenario.loader import ScenarioError, parse

    with pytest.raises(ScenarioError, match=r"timed.yaml:3: clock_lead_limit_ms must be a positive"):
        parse(_TIMED_SCENARIO.format(limit="clock_lead_limit_ms: -5"), "timed.yaml")


class TieOrder(ReferenceAdapter):
    """The model, except that after two timers started apart came due together it hands out m2
    first, as a broker's real clock may (the operations before m1's timer took longer)."""

    def receive(self, consumer: str) -> Result:
        given = super().receive(consumer)
        if self.world.broker.timer_tie_ms is not None and given.value == "m1":
            return Result.ok("m2")
        return given


class RealClockOrder(TieOrder):
    """TieOrder with a real clock that never runs ahead."""

    def clock_lead_ms(self) -> float:
        return 0.0


def _backoff_tie(adapter: TieOrder, limit: float | None) -> Driver:
    driver = Driver(adapter, JETSTREAM, None,
                    {"receive.backoff": ("REDELIVERY-32",)}, ledger=TimeLedger())
    driver.both("queue", {"name": "q", "max_delivery_attempts": 4})
    driver.both("consumer", {"name": "c", "queue": "q", "window_bytes": 0, "ack_wait_ms": 300,
                             "backoff_ms": [300, 500, 300]})
    driver.clock_lead.limit_ms = limit
    for msg_id in ("m1", "m2"):
        driver.both("send", {"to": "q", "id": msg_id})
    driver.both("receive", "c", compare="receive.backoff")
    driver.both("nack", {"consumer": "c", "id": "m1"}, compare="receive.backoff")
    driver.both("receive", "c", compare="receive.backoff")  # m1 again: BackOff[1], due at 500
    driver.both("advance", 200)
    driver.both("receive", "c", compare="receive.backoff")  # m2: BackOff[0] from 200, due at 500
    driver.both("advance", 300)
    driver.both("receive", "c", compare="receive.backoff")  # a tie on the logical clock only
    return driver


@pytest.mark.parametrize("limit", [60.0, None])
def test_a_failure_after_timers_came_due_together_is_discarded_on_a_real_clock(limit: float | None) -> None:
    with pytest.raises(UnsatisfiedAssumption):
        _backoff_tie(RealClockOrder(options=JETSTREAM), limit)


def test_a_failure_after_a_tie_stands_without_a_real_clock() -> None:
    with pytest.raises(Violation, match="expected 'm1'"):
        _backoff_tie(TieOrder(options=JETSTREAM), limit=60.0)


def test_a_scenario_mismatch_after_a_tie_is_not_judged() -> None:
    from mqconform.scenario.loader import parse
    from mqconform.scenario.runner import run_scenario

    text = """
profile: jetstream
steps:
- queue: {name: q, max_delivery_attempts: 4}
- consumer: {name: c, queue: q, window_bytes: 0, ack_wait_ms: 300, backoff_ms: [300, 500, 300]}
- send: {to: q, id: m1}
- send: {to: q, id: m2}
- receive: c
- nack: {consumer: c, id: m1}
- receive: c
- advance: 200
- receive: c
- advance: 300
- receive: c
  expect: {result: m1}
"""
    outcome = run_scenario(parse(text, "tie.yaml"), RealClockOrder(options=JETSTREAM))
    assert (outcome.verdict, outcome.step) == ("unknown", 11)
    assert run_scenario(parse(text, "tie.yaml"), TieOrder(options=JETSTREAM)).verdict == "fail"
    assert "came due together at 500 ms" in outcome.message


def test_a_timed_finding_s_scenario_keeps_its_margin() -> None:
    """The counterexample of a comparison made under a margin replays under it: on a loaded machine
    `mqconform scenario` then says UNKNOWN where the clock ran past it, never a false FAIL."""
    from mqconform.conformance.exploring.counterexamples import scenario_text
    from mqconform.conformance.exploring.driver import Step
    from mqconform.conformance.exploring.runner import Finding
    from mqconform.scenario.loader import parse

    with pytest.raises(Violation) as raised:
        _failing_receive(lead=30.0, limit=60.0)
    assert raised.value.clock_lead_limit_ms == 60.0
    steps = [Step("queue", {"name": "q"}), Step("consumer", {"name": "c", "queue": "q"}),
             Step("receive", "c")]
    timed = Finding("redelivery", "receive.ack_wait", ("REDELIVERY-27",), "m", steps, 1.0,
                    clock_lead_limit_ms=raised.value.clock_lead_limit_ms)
    assert parse(scenario_text(timed, "jetstream"), "timed.yaml").clock_lead_limit_ms == 60.0
    untimed = Finding("redelivery", "receive.ack_wait", ("REDELIVERY-27",), "m", steps, 1.0)
    assert parse(scenario_text(untimed, "jetstream"), "plain.yaml").clock_lead_limit_ms is None
