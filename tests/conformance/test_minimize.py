"""The step-level minimiser keeps what the model claims: a SIGKILL restart stays after its flush wait."""

from __future__ import annotations

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring.driver import Step
from mqconform.conformance.exploring.minimize import _kills_follow_a_flush, minimize
from mqconform.reference_model.profiles import profile

rules = pytest.mark.rules


@rules("RESTART-4")
def test_a_kill_without_the_flush_advance_in_front_is_not_a_candidate() -> None:
    jetstream = profile("jetstream")
    assert jetstream.restart_flush_ms > 0
    head = [Step("queue", {"name": "q"}), Step("consumer", {"name": "c", "queue": "q", "window_bytes": 0}),
            Step("send", {"to": "q", "id": "m1"}), Step("receive", "c")]
    flush = Step("advance", 2 * jetstream.restart_flush_ms)
    assert _kills_follow_a_flush([*head, flush, Step("restart", "kill")], jetstream)
    assert not _kills_follow_a_flush([*head, Step("restart", "kill")], jetstream)
    assert not _kills_follow_a_flush([*head, Step("advance", 1), Step("restart", "kill")], jetstream)
    assert _kills_follow_a_flush([*head, Step("restart", "graceful")], jetstream)
    assert _kills_follow_a_flush([*head, Step("restart", "kill")], profile("artemis"))  # no flush interval


def test_a_holding_counterexample_is_kept_as_it_is() -> None:
    steps = [Step("queue", {"name": "q"}), Step("send", {"to": "q", "id": "m1"})]
    kept, message = minimize(steps, profile("artemis"), lambda: ReferenceAdapter("artemis"))
    assert kept == steps and message is None
