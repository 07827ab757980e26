"""The runner ends an area's exploration at a finding that is a registered known deviation."""

from __future__ import annotations

from hypothesis import Phase, settings

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance import settings as suite_settings
from mqconform.conformance.registry import MACHINES
from mqconform.conformance.runner import run_machine
from mqconform.reference_model.profiles import profile


def test_a_known_deviation_ends_the_areas_exploration() -> None:
    """A finding whose rules are all registered deviations is the last one of its area: what follows
    in the example are consequences of the known wrong turn (rabbitmq-server#5609 cascades through the
    counters, receive, ack and delivery counts of everything after it)."""
    from mqconform.conformance.rules import all_rule_ids

    hyp = settings(suite_settings.get("ci", max_examples=30), phases=[Phase.generate, Phase.shrink],
                   database=None)
    claimed = profile("jetstream")  # the artemis model checked against jetstream: differences at once

    def run(known: frozenset[str]):  # type: ignore[no-untyped-def]
        return run_machine(MACHINES["ring"], lambda: ReferenceAdapter("artemis"), claimed, hyp,
                           max_reruns=3, known_deviations=known)

    plain = run(frozenset())
    assert len(plain.findings) >= 2 and not plain.stopped_at_deviation
    known = run(frozenset(all_rule_ids()))
    assert len(known.findings) == 1 and known.stopped_at_deviation
    assert known.findings[0].check == plain.findings[0].check
