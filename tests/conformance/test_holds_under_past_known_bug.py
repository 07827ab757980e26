"""holds_under on a finding of an area that explored past a known bug (its option among the finding's
`options`): the bug model is compared with the model *without* the bug, so a counterexample of that
bug found through an invariant check (ring.bound: pending above the ring on the implementation's own
values) is still explained; a bug that changes nothing on the steps still explains nothing. Seeds
684653 and 989465 on Artemis 2.40.0 (2026-11-29) failed ring.bound on the evicts-delivered bug's
5- and 9-step counterexamples while the comparison took the options as the model without the bug.
No broker is needed: the bug model stands in for the implementation."""

from __future__ import annotations

from pathlib import Path

from mqconform.conformance.judging.bug_replay import holds_under
from mqconform.reference_model.profiles import profile
from tests.conformance.bug_model_support import bug_model, scenario_steps

ROOT = Path(__file__).resolve().parents[2]
EVICTS = "artemis-non-destructive-ring-evicts-delivered"
STEPS = scenario_steps(ROOT / "docs/findings/artemis-non-destructive-ring-evicts-delivered.yaml")


def test_a_bug_the_area_explored_past_still_explains_its_counterexample() -> None:
    options = {"ring_eviction_keeps_delivered_pending": True}
    assert holds_under(STEPS, EVICTS, profile("artemis"), lambda: bug_model(EVICTS, "artemis"))
    assert holds_under(STEPS, EVICTS, profile("artemis"), lambda: bug_model(EVICTS, "artemis"), options)


def test_a_bug_that_changes_nothing_on_the_steps_explains_nothing() -> None:
    other = "artemis-non-destructive-delete-uncounted"  # no delete in the steps
    options = {"ring_eviction_keeps_delivered_pending": True}
    assert not holds_under(STEPS, other, profile("artemis"), lambda: bug_model(EVICTS, "artemis"), options)
