"""After a finding the area explores on against the examples its budget has left, from another seed:
the budget is the area's, not each exploration's (a ring area with 26 findings once explored its
budget 16 times over, mostly the same examples again, in a 2.40.0 ci run)."""

from __future__ import annotations

import itertools
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
    assert all(0 < later < earlier for earlier, later in itertools.pairwise(budgets))
    # each draws from its own seed (the first from the derandomized settings' own)
    seeds = [s for _, s in seen[1:]]
    assert None not in seeds and len(set(seeds)) == len(seeds)

