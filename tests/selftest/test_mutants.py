"""The suite must fail: every mutant is caught by its area's machine with a short counterexample."""

from __future__ import annotations

import pytest

from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import run_machine
from mqconform.selftest.mutants import MUTANTS

MAX_STEPS = 12
#: the steps of an example: most mutants show within 15, and shorter examples are cheaper to find and to
#: shrink (the ci profile's 30 tripled this file's time); these need the ci profile's 30 steps to show
#: within its examples (a second ack of one message, a scan after a longer wait)
STEPS = 15
CI_STEPS = frozenset({"double-ack-counts", "double-ack-without-invalid-ack", "wrong-consumer-ack",
                      "admission-early-scan"})
#: the examples a mutant's test may explore (a caught mutant stops at its first failure, so only an
#: uncaught one explores them all: report_multiple_bugs is off): three times the `ci` settings' 200.
#: Hypothesis derives a derandomized run's seed from the state machine class's source, so any edit
#: of a machine's text draws other examples: when the checks moved beside their steps, six mutants
#: that 200 examples had caught needed 300-400, and one draw must not decide whether the suite can
#: fail (two need more than 200 for their long set-ups: redelivery-cap-ignored, overflow-needs-both)
EXAMPLES = 600


def test_at_least_two_mutants_per_area() -> None:
    assert len(MUTANTS) >= 16
    assert {m.name for m in MUTANTS} >= CI_STEPS
    for area in MACHINES:
        assert sum(m.area == area for m in MUTANTS) >= 2, area


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_is_caught(mutant) -> None:  # type: ignore[no-untyped-def]
    steps = {} if mutant.name in CI_STEPS else {"stateful_step_count": STEPS}
    # the first failure is shrunk at once (the ci settings go on looking for other bugs after it)
    hyp = suite_settings.get("ci", database=None, max_examples=EXAMPLES,
                             report_multiple_bugs=False, **steps)
    result = run_machine(MACHINES[mutant.area], mutant.adapter, mutant.options, hyp, max_reruns=0)
    assert result.unknown is None
    assert result.findings, f"mutant {mutant.name} ({mutant.description}) was not caught"
    finding = result.findings[0]
    assert len(finding.steps) <= MAX_STEPS, (
        f"{mutant.name}: counterexample has {len(finding.steps)} steps: {finding.steps}")
