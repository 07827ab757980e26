"""An area whose examples sleep seconds on a broker (expiry: REAL_TIME_SHARE) runs a share of the
settings' examples against an adapter with a real clock, all of them on a logical one, and all of
them whenever the run names its example count; and against a real clock an example advances at most
MAX_ADVANCES times."""

from __future__ import annotations

from typing import Any

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.machines.expiry import ADVANCE_MS, MAX_ADVANCES, ExpiryMachine
from mqconform.conformance.exploring.runner import run_machine
from mqconform.reference_model.profiles import ARTEMIS


class RealClockReference(ReferenceAdapter):
    """The model behind an adapter that says its advance sleeps (it does not: the test stays fast)."""

    real_time = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.advances_per_example: list[int] = []

    def open(self, namespace: str) -> None:
        super().open(namespace)
        self.advances_per_example.append(0)

    def advance(self, ms: int) -> Any:
        self.advances_per_example[-1] += ms == ADVANCE_MS  # not the set-up's short one
        return super().advance(ms)


@pytest.mark.parametrize(("real_time", "cap", "capped"), [(True, True, True), (False, True, False),
                                                         (True, False, False)])
def test_the_expiry_area_runs_a_share_of_the_examples_on_a_real_clock(real_time: bool, cap: bool,
                                                                      capped: bool) -> None:
    adapter = RealClockReference() if real_time else ReferenceAdapter()
    hyp = suite_settings.get("dev", max_examples=20, database=None)
    result = run_machine(ExpiryMachine, lambda: adapter, ARTEMIS, hyp, max_reruns=0, seed_value=3,
                         cap_real_time=cap)
    assert not result.findings and result.unknown is None
    # Hypothesis runs about max_examples (a few more when a draw is rejected): 20, or 20 // 5
    if capped:
        assert 1 <= result.examples <= 2 * (20 // ExpiryMachine.REAL_TIME_SHARE)
    else:
        assert result.examples >= 20


def test_an_example_on_a_real_clock_advances_at_most_max_advances_times() -> None:
    adapter = RealClockReference()
    hyp = suite_settings.get("dev", max_examples=40, database=None)
    run_machine(ExpiryMachine, lambda: adapter, ARTEMIS, hyp, max_reruns=0, seed_value=5, cap_real_time=False)
    assert max(adapter.advances_per_example) == MAX_ADVANCES
