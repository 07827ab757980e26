"""After a finding the area explores on against the examples its budget has left, from another seed:
the budget is the area's, not each exploration's (a ring area with 26 findings once explored its
budget 16 times over, mostly the same examples again, in a 2.40.0 ci run)."""

from __future__ import annotations

from typing import Any

import pytest

from mqconform.conformance.exploring import runner
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.reference_model.profiles import ARTEMIS
from mqconform.selftest.mutants import MUTANTS


def test_each_exploration_after_a_finding_draws_what_the_budget_has_left(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, Any]] = []
    spent: list[int] = []
    explore = runner._explore

    def spy(cls: Any, context: Any, result: Any, quiet: Any, *args: Any) -> Any:
        seen.append((quiet.max_examples, getattr(cls, "_hypothesis_internal_use_seed", None)))
        found = explore(cls, context, result, quiet, *args)
        if found is not None:
            spent.append(context.examples_at_violation)
        return found

    monkeypatch.setattr(runner, "_explore", spy)
    mutant = next(m for m in MUTANTS if m.name == "priority-ignored")
    hyp = suite_settings.get("ci", database=None, max_examples=60)
    result = runner.run_machine(MACHINES["delivery"], mutant.adapter, ARTEMIS, hyp)
    assert len(result.findings) >= 2 and len(seen) == len(spent) + (len(seen) > len(spent))
    budgets = [budget for budget, _ in seen]
    assert budgets[0] == 60
    # each exploration gets what the ones before it left, never the whole budget again
    assert budgets[1:] == [60 - sum(spent[:i]) for i in range(1, len(budgets))]
    assert all(0 < later < earlier for earlier, later in zip(budgets, budgets[1:]))
    # each draws from its own seed (the first from the derandomized settings' own)
    seeds = [s for _, s in seen[1:]]
    assert None not in seeds and len(set(seeds)) == len(seeds)


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
    judge = Judge(load_deviations(), "artemis", "2.40.0", "artemis", "artemis",
                  adapter_factory=DropsAtLimitNegative)
    hyp = suite_settings.get("ci", database=None, max_examples=100)
    result = runner.run_machine(MACHINES["redelivery"], DropsAtLimitNegative, ARTEMIS, hyp,
                                seed_value=1, explain=judge.bug_model)
    known = [f for f in result.findings if "explained it as found" in f.message]
    assert known and all(judge.deviation(f) is not None for f in known)
    # the failing example's replay, and at most the one that ends shrinking: no search for a smaller
    # one; a violation not explained as found (here a 14-step story with a restart, whose shrunk form
    # the bug model explains) is shrunk as before
    assert [n for was_known, n in after if was_known] and all(n <= 2 for was_known, n in after if was_known)
    assert any(n > 100 for was_known, n in after if not was_known)
    assert engine.MAX_SHRINKING_SECONDS == before  # put back after each exploration
