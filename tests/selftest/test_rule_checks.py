"""The checks of the rules that once had only model tests can fail, each on its own.

Rule ids: RING-17 (ring.pending_bound), REDELIVERY-29 (close.tx_kept), PAGING-26 (send.blocked),
REDELIVERY-11 (window.dispatched), ADMISSION-13 (admission.no_resurrection: made at every take after
an answer, so that it counts when it holds; before, it was made only to fail, and a run left the rule
uncovered).
"""

from __future__ import annotations

import pytest
from hypothesis import Phase
from hypothesis.stateful import run_state_machine_as_test

from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.base import RunContext
from mqconform.conformance.exploring.driver import Violation
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import machine_class
from mqconform.reference_model.profiles import ARTEMIS
from mqconform.selftest.mutants import MUTANTS

NO_SHRINK = (Phase.explicit, Phase.generate)


def _only(area: str, check: str, mutant: str) -> Violation:
    """Run `area`'s machine against a mutant with every check but `check` disabled; its violation
    (not shrunk: the mutants' own tests show the shrinking, this one only which check fails)."""
    machine = MACHINES[area]
    adapter = next(m for m in MUTANTS if m.name == mutant).adapter
    context = RunContext(adapter, ARTEMIS, None, frozenset(machine.RULES) - {check})
    with pytest.raises(Violation) as info:
        run_state_machine_as_test(machine_class(machine, context),
                                  settings=suite_settings.get("ci", database=None, phases=NO_SHRINK))
    return info.value


@pytest.mark.rules("RING-17")
def test_a_ring_kept_above_its_size_without_a_nack_is_caught() -> None:
    violation = _only("ring", "ring.pending_bound", "ring-return-over-bound")
    assert violation.check == "ring.pending_bound" and violation.rules == ("RING-17",)
    assert "no nack or ring-size decrease" in violation.message


@pytest.mark.rules("REDELIVERY-29")
def test_a_close_that_rolls_back_the_transaction_is_caught() -> None:
    violation = _only("redelivery", "close.tx_kept", "close-rolls-back-tx")
    assert violation.check == "close.tx_kept" and "REDELIVERY-29" in violation.rules


@pytest.mark.rules("PAGING-26")
def test_block_that_pages_is_caught() -> None:
    violation = _only("paging", "send.blocked", "block-pages")
    assert violation.check == "send.blocked" and "PAGING-26" in violation.rules
    assert "expected 'blocked'" in violation.message


@pytest.mark.rules("REDELIVERY-11")
def test_a_window_overrun_is_caught_by_the_dispatched_count() -> None:
    violation = _only("delivery", "window.dispatched", "window-overrun")
    assert violation.check == "window.dispatched" and "REDELIVERY-11" in violation.rules


@pytest.mark.rules("ADMISSION-13")
def test_a_worker_that_runs_a_request_already_answered_is_caught() -> None:
    violation = _only("admission", "admission.no_resurrection", "admission-second-answer")
    assert violation.check == "admission.no_resurrection" and "ADMISSION-13" in violation.rules
    assert "already answered TIMEOUT_CLEAN_QUEUE" in violation.message
