"""Which spec rules each check verifies: check name -> rule ids, per area, collected from the checks'
declarations (:mod:`mqconform.conformance.exploring.checks`: each machine's ``CHECKS``, declared
beside the steps that make them, with the rules the spec's ``evidenced_by`` adds).

A check that fails reports these ids; a check that ran without failing passes them; ids whose
checks never ran (missing capability) are not applicable.
"""

from __future__ import annotations

from mqconform.conformance.exploring.checks import rule_applies as rule_applies
from mqconform.conformance.exploring.checks import rule_table, unknown_evidence
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.restart import RESTART_CHECKS, RestartSteps


def _collect() -> dict[str, dict[str, tuple[str, ...]]]:
    """Each area's table from its machine's declarations, and the restart step's own (``restart``: the
    checks mixed into the areas of RESTART_AREAS); a spec ``evidenced_by`` naming no check fails."""
    unknown = unknown_evidence({area: machine.CHECKS for area, machine in MACHINES.items()}
                               | {"restart": RESTART_CHECKS})
    if unknown:
        raise ValueError("; ".join(unknown) + " (the machines' CHECKS, mqconform.conformance.exploring)")
    tables = {area: machine.RULES for area, machine in MACHINES.items()}
    tables["restart"] = rule_table("restart", RESTART_CHECKS)
    return tables


TABLES: dict[str, dict[str, tuple[str, ...]]] = _collect()
#: the areas whose machines mix in the restart step (mqconform/conformance/exploring/restart.py)
RESTART_AREAS = tuple(area for area, machine in MACHINES.items() if issubclass(machine, RestartSteps))


def rules_for(area: str) -> dict[str, tuple[str, ...]]:
    """The check -> rule ids table of one area (its machine's RULES)."""
    return TABLES[area]


def all_rule_ids() -> set[str]:
    return {rule for table in TABLES.values() for ids in table.values() for rule in ids}


def profile_rule_ids(rules: tuple[str, ...], profile: str) -> tuple[str, ...]:
    """The ids of `rules` that apply to `profile` (a failure line names only those); all of them
    when none does, so a failure never prints an empty rule list."""
    from mqconform.spec import load_catalogue

    catalogue = load_catalogue()
    kept = tuple(r for r in rules if r in catalogue and catalogue[r].applies_to(profile))
    return kept or rules


def failure_rules(rules: tuple[str, ...], profile: str) -> str:
    """The rule list of a failure line: the ids of the claimed profile, comma-separated."""
    return ", ".join(profile_rule_ids(rules, profile))
