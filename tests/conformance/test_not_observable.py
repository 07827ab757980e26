"""An observation the adapter cannot make in some state is skipped for that step, never a stop."""

from __future__ import annotations

from typing import Any

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring.driver import Driver, Inconclusive


class Blind(ReferenceAdapter):
    """The model, except that it cannot see delivery counts of messages with an even number."""

    def delivery_count(self, queue: str, msg_id: str) -> Result:
        if int(msg_id[1:]) % 2 == 0:
            return Result.not_observable(f"the delivery count of {msg_id!r}")
        return super().delivery_count(queue, msg_id)


def _driver(adapter: Any) -> Driver:
    d = Driver(adapter, ReferenceAdapter("artemis").options, None, {"delivery_count": ("REDELIVERY-1",)})
    adapter.open("t")
    d.both("queue", {"name": "q"})
    d.both("consumer", {"name": "c", "queue": "q", "window_bytes": 0})
    for n in (1, 2):
        d.both("send", {"to": "q", "id": f"m{n}"})
        d.both("receive", "c")
    return d


@pytest.mark.rules("REDELIVERY-1")
def test_not_observable_is_none_and_evidences_nothing() -> None:
    d = _driver(Blind("artemis"))
    assert d.observe_if_observable("delivery_count", "q", "m2") is None
    assert d.not_observed == {"delivery_count": 1}
    assert "delivery_count" not in d.checked  # never evidenced: no pass from it
    assert d.observe_if_observable("delivery_count", "q", "m1") == (1, 1)


def test_other_failures_still_stop_and_observe_both_keeps_stopping() -> None:
    d = _driver(Blind("artemis"))
    with pytest.raises(Inconclusive):
        d.observe_both("delivery_count", "q", "m2")
    assert Result.fail("unsupported: x").is_not_observable is False
    assert Result.not_observable("x").error == "not observable: x"


@pytest.mark.rules("REDELIVERY-1", "REDELIVERY-2")
def test_a_machine_run_goes_on_past_unobservable_counts() -> None:
    from hypothesis import Phase, settings

    from mqconform.conformance.exploring import settings as suite_settings
    from mqconform.conformance.exploring.machines.redelivery import RedeliveryMachine
    from mqconform.conformance.exploring.runner import run_machine
    from mqconform.reference_model.profiles import profile

    hyp = settings(suite_settings.get("ci", max_examples=15), phases=[Phase.generate], database=None)
    result = run_machine(RedeliveryMachine, lambda: Blind("artemis"), profile("artemis"), hyp, max_reruns=0)
    assert result.unknown is None and not result.findings
    assert "delivery_count" in result.checked  # odd ids were still compared
