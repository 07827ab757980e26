"""A violation a registered deviation explains as it is found is not shrunk by Hypothesis: a known bug's
story is minimised step by step only (runner.run_machine's `known`, RunContext.known_bug), in a run
(its judge) and in a version campaign's task (the plan's registry, campaign._known)."""

from __future__ import annotations

from typing import Any

import pytest

from mqconform.conformance.exploring import runner
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.reference_model.profiles import ARTEMIS


def test_a_failure_a_registered_bug_explains_as_found_is_not_shrunk_by_hypothesis(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the judge explains a violation as it was found (a registered bug model holds on its steps),
    Hypothesis' shrinking ends at once: a known bug's story is minimised step by step only, not
    shrunk for up to 90 s per finding (most of a 2.40.0 ci ring area's 3098 examples were shrinking).
    Its finding says so, and is still the registered bug's."""
    from hypothesis.internal.conjecture import engine

    from mqconform.conformance.judging.verdict import Judge, load_deviations
    from tests.buggy_artemis import DropsAtLimitNegative

    after: list[tuple[bool, int]] = []  # per finding: known as found, examples run after its violation
    explore = runner._explore

    def spy(cls: Any, context: Any, result: Any, quiet: Any, *args: Any) -> Any:
        found = explore(cls, context, result, quiet, *args)
        if found is not None:
            after.append((context.known_as_found, context.examples - context.examples_at_violation))
        return found

    monkeypatch.setattr(runner, "_explore", spy)
    before = engine.MAX_SHRINKING_SECONDS
    # one adapter for the exploration and the judge's replays, as a run with one worker has: the
    # replay runs once the failing example closed it
    adapter = DropsAtLimitNegative()
    judge = Judge(load_deviations(), "artemis", "2.40.0", "artemis", "artemis",
                  adapter_factory=lambda: adapter)
    hyp = suite_settings.get("ci", database=None, max_examples=100)
    result = runner.run_machine(MACHINES["redelivery"], lambda: adapter, ARTEMIS, hyp,
                                seed_value=1, explain=judge.bug_model)
    assert result.unknown is None
    known = [f for f in result.findings if "explained it as found" in f.message]
    assert known and all(judge.deviation(f) is not None for f in known)
    # the failing example's replay, and at most the one that ends shrinking: no search for a smaller
    # one; a violation not explained as found (here a 14-step story with a restart, whose shrunk form
    # the bug model explains) is shrunk as before
    assert [n for was_known, n in after if was_known] and all(n <= 2 for was_known, n in after if was_known)
    assert any(n > 100 for was_known, n in after if not was_known)
    assert before == engine.MAX_SHRINKING_SECONDS  # put back after each exploration



def test_a_campaign_task_asks_the_plans_registry() -> None:
    """A version campaign's task judges by the plan's registry (`matrix` sets it unless --strict): a
    registered bug's regression story on a release with that bug is known, another release's is not;
    a plan without a registry shrinks everything."""
    import pickle
    from pathlib import Path

    import attrs

    from mqconform.conformance.campaign import _known
    from mqconform.conformance.exploring.driver import Step
    from mqconform.conformance.exploring.runner import Finding
    from mqconform.conformance.judging.verdict import load_deviations
    from mqconform.conformance.plan import RunPlan
    from tests.buggy_artemis import WithBug
    from tests.conformance.bug_model_support import scenario_steps

    root = Path(__file__).resolve().parents[2]
    steps = scenario_steps(root / "docs/findings/artemis-priority-after-cancel.yaml")
    finding = Finding("delivery", "receive.id", ("DELIVERY-3",), "a difference",
                      [Step(*next(iter(s.items()))) for s in steps], 0.0)
    plan = RunPlan.build("reference", {}, settings_name="ci", areas="delivery")
    assert _known(plan, WithBug(), ARTEMIS) is None
    with_registry = attrs.evolve(plan, deviations=load_deviations())
    with_registry = pickle.loads(pickle.dumps(with_registry))  # as a Spark task gets it
    known = _known(with_registry, WithBug(), ARTEMIS)
    assert known is not None and known(finding)
    assert not _known(with_registry, WithBug(server_version="2.35.0"), ARTEMIS)(finding)
