"""An adapter that raises or behaves non-deterministically makes its machine *unknown*: never a
conformance failure, never a pass, never a traceback."""

from __future__ import annotations

import itertools
from typing import Any

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import merge_outcomes, run_machine
from mqconform.reference_model.profiles import ARTEMIS


class RaisingAdapter(ReferenceAdapter):
    """Raises a bug of its own from the sixth receive of an example on (counted per instance, so a
    replay raises again whatever examples the seed draws first)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = itertools.count()

    def receive(self, consumer: str) -> Result:
        if next(self.calls) >= 5:
            raise KeyError("bug in the adapter")
        return super().receive(consumer)


class CoinAdapter(ReferenceAdapter):
    """Answers sends wrongly every other time, whatever the example: not reproducible."""

    calls = itertools.count()

    def send(self, to: str, message: Any) -> Result:
        result = super().send(to, message)
        return Result.ok("dropped") if next(self.calls) % 2 else result


class OnceAdapter(ReferenceAdapter):
    """Answers one send wrongly, the tenth of the first example that has ten, then never again in the
    run: Hypothesis cannot replay it (the example counted per instance, whatever the seed draws)."""

    fired = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = itertools.count()

    def send(self, to: str, message: Any) -> Result:
        result = super().send(to, message)
        if next(self.calls) == 9 and not OnceAdapter.fired:
            OnceAdapter.fired = True
            return Result.ok("dropped")
        return result


def _run(factory: Any) -> Any:
    hyp = suite_settings.get("ci", database=None, max_examples=30)
    return run_machine(MACHINES["delivery"], factory, ARTEMIS, hyp, max_reruns=0)


def test_an_adapter_exception_is_unknown_not_a_failure() -> None:
    result = _run(lambda: RaisingAdapter("artemis"))
    assert result.findings == []
    assert result.unknown is not None and "KeyError" in result.unknown
    assert "pass" not in merge_outcomes([result]).values()


def test_a_non_reproducible_difference_is_reported_not_crashed() -> None:
    result = _run(lambda: CoinAdapter("artemis"))
    # either shrunk to a counterexample or, when Hypothesis cannot reproduce it, unknown
    assert result.findings or result.unknown
    assert "pass" not in {v for k, v in merge_outcomes([result]).items() if k == "DELIVERY-2"}


def test_a_failure_hypothesis_cannot_replay_is_still_reported_with_its_steps() -> None:
    """A real broker's timing can make the replay of a failing example generate another run
    (Hypothesis' Flaky): the failure was observed, so it is a finding, with the steps that showed it;
    since its replays (a send's answer, which a scenario compares) never fail again, it is FLAKY: its
    rules are unknown, never pass nor fail."""
    result = _run(lambda: OnceAdapter("artemis"))
    assert result.unknown is None
    assert len(result.findings) == 1
    finding = result.findings[0]
    assert finding.check == "send.result" and "dropped" in finding.message
    sends = [step for step in finding.steps if step.op in ("send", "send_batch")]
    sent = sum(len(step.args["ids"]) if step.op == "send_batch" else 1 for step in sends)
    assert sent >= 10 and finding.steps[-1] is sends[-1]  # up to the tenth send, where it answered wrongly
    # not a failure: the verdict (verdict.judge) marks its rules unknown
    assert finding.flaky and "flaky:" in finding.message and merge_outcomes([result])["DELIVERY-2"] != "fail"


def test_outcomes_follow_the_claimed_profile_but_never_hide_a_failure() -> None:
    from mqconform.conformance.exploring.runner import Finding, MachineResult

    ran = MachineResult("delivery", checked={"receive.id", "pending.order"})
    merged = merge_outcomes([ran], "rabbitmq-classic")
    assert merged["DELIVERY-14"] == "pass"  # rabbitmq-classic's FIFO rule, evidenced by receive.id
    assert merged["DELIVERY-3"] == "not_applicable"  # Artemis priorities do not apply: never a pass
    failed = MachineResult("delivery", checked={"pending.order"},
                           findings=[Finding("delivery", "pending.order", ("DELIVERY-3",), "m2 before m1",
                                             [], 0.1)])
    assert merge_outcomes([failed], "rabbitmq-classic")["DELIVERY-3"] == "fail"
    # a finding whose check names rules of the profile fails those, not the other profiles' rules
    mixed = MachineResult("redelivery", checked={"receive.id"},
                          findings=[Finding("redelivery", "receive.id", ("REDELIVERY-22", "DELIVERY-16"),
                                            "m3 beyond the prefetch", [], 0.1)])
    merged = merge_outcomes([mixed], "rabbitmq-quorum")
    assert merged["DELIVERY-16"] == "fail"
    assert merged["REDELIVERY-22"] == "not_applicable"


def _generation_flaky_for(monkeypatch: Any, times: int) -> list[int]:
    """Hypothesis stops the first `times` explorations, after one example each, as a real broker's
    timing makes it do: an example's choices generated another run than before. Returns the
    explorations' example budgets."""
    from hypothesis.errors import FlakyStrategyDefinition

    from mqconform.conformance.exploring import runner

    budgets: list[int] = []
    real = runner.run_state_machine_as_test

    def run_state_machine_as_test(cls: Any, settings: Any) -> None:
        budgets.append(settings.max_examples)
        if len(budgets) <= times:
            real(cls, settings=suite_settings.get("ci", database=None, max_examples=1))
            raise FlakyStrategyDefinition("Inconsistent data generation! Data generation behaved "
                                          "differently between test cases.")
        real(cls, settings=settings)

    monkeypatch.setattr(runner, "run_state_machine_as_test", run_state_machine_as_test)
    return budgets


def test_an_exploration_stopped_for_inconsistent_generation_explores_the_rest_from_another_seed(
        monkeypatch: Any) -> None:
    """The examples until Hypothesis stopped held: the area explores its budget's rest and has a
    verdict, and says it was restarted."""
    from mqconform.conformance.exploring.runner import GENERATION_RESTARTS

    budgets = _generation_flaky_for(monkeypatch, GENERATION_RESTARTS)
    result = run_machine(MACHINES["delivery"], lambda: ReferenceAdapter("artemis"), ARTEMIS,
                         suite_settings.get("ci", database=None, max_examples=30))
    assert result.unknown is None and result.findings == []
    assert budgets == [30, 29, 28]  # each restart takes the examples left
    assert len(result.restarts) == GENERATION_RESTARTS and "Inconsistent" in result.restarts[0]
    assert merge_outcomes([result])["DELIVERY-2"] == "pass"


def test_an_exploration_that_stays_inconsistent_is_unknown(monkeypatch: Any) -> None:
    from mqconform.conformance.exploring.runner import GENERATION_RESTARTS

    budgets = _generation_flaky_for(monkeypatch, GENERATION_RESTARTS + 1)
    result = _run(lambda: ReferenceAdapter("artemis"))
    assert result.unknown is not None and "non-deterministically" in result.unknown
    # max_reruns=0 allows no restart at all; with the default, the last of the restarts stays unknown
    assert len(budgets) == 1
    budgets.clear()
    result = run_machine(MACHINES["delivery"], lambda: ReferenceAdapter("artemis"), ARTEMIS,
                         suite_settings.get("ci", database=None, max_examples=30))
    assert result.unknown is not None and "Inconsistent" in result.unknown
    assert len(budgets) == GENERATION_RESTARTS + 1 and len(result.restarts) == GENERATION_RESTARTS
    assert "pass" not in merge_outcomes([result]).values()
