"""Which spec rules a run can cover for an adapter, and for each rule it cannot, the capability missing.

Derived, not hand-written per adapter: a rule is evidenced by the checks that name it (:mod:`.rules`);
a check runs only inside its area's machine (the machine's ``REQUIRES`` / ``ANY_OF``) and behind the
capability gate of the machine code that makes it (each check's declared ``needs``, beside that
code: :mod:`~mqconform.conformance.exploring.checks`; :data:`CHECK_NEEDS` collects them). The
capabilities a run has are those of the claimed profile (model features plus the contract's extra
capabilities) that the adapter offers, exactly as :class:`~.base.ConformanceMachine` computes them.

A rule of the claimed profile is *coverable* when at least one of its checks can run; otherwise its
reason lists, per check that could evidence it, the capabilities that check lacks (the cheapest
first). ``<op>.accepted`` checks only ever fail (an operation the implementation refused), so they
never evidence a rule on their own. A run covers at most the coverable rules; whether it reaches each
one depends on the examples drawn (``mqconform run`` prints what it reached on its last line).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from mqconform.adapters.contract import EXTRA_CAPABILITIES
from mqconform.reference_model.options import ModelOptions

from ..exploring.checks import OVERFLOW_POLICY
from ..exploring.registry import MACHINES
from .rules import TABLES


def _collect_needs() -> dict[str, tuple[str, ...]]:
    """check name -> the capabilities of the gate in the machine code that makes it, from the checks'
    declarations (a name declared in several areas: the first area's, in MACHINES order)."""
    needs: dict[str, tuple[str, ...]] = {}
    for machine in MACHINES.values():
        for name, check in machine.CHECKS.items():
            if check.needs:
                needs.setdefault(name, check.needs)
    return needs


#: check name -> the capabilities its gate needs (none listed: the check runs whenever its area runs)
CHECK_NEEDS: dict[str, tuple[str, ...]] = _collect_needs()
#: checks that can only fail (the `fail` answer of an operation): they never evidence a pass
NEVER_EVIDENCE = "an operation refused"


@attrs.frozen
class RuleCoverage:
    rule: str
    coverable: bool
    #: per check that could evidence the rule: (area.check, capabilities it lacks), cheapest first
    lacking: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def reason(self) -> str:
        if self.coverable:
            return "coverable"
        if not self.lacking:
            return "no conformance check evidences it (model and scenario tests only)"
        fewest = len(self.lacking[0][1])  # the cheapest ways to cover it: fewest capabilities missing
        shown = [", ".join(caps) for _, caps in self.lacking if len(caps) == fewest]
        return "needs " + " | ".join(dict.fromkeys(shown))


def run_capabilities(claimed: ModelOptions, adapter_caps: Iterable[str]) -> frozenset[str]:
    """The capabilities a run has: the claimed profile's (and the contract's extras) the adapter offers;
    OVERFLOW_POLICY where it offers an overflow policy of the profile (ring.py queue_vocabulary)."""
    policies = {f"overflow:{name}" for name, _ in claimed.overflow_policies} | {OVERFLOW_POLICY}
    caps = (frozenset(claimed.features) | EXTRA_CAPABILITIES | policies) & frozenset(adapter_caps)
    if caps & policies:  # idempotent: the capabilities of a run are those of a run
        caps |= {OVERFLOW_POLICY}
    return caps


def _lacks(area: str, check: str, caps: frozenset[str]) -> tuple[str, ...] | None:
    """What `check` of `area` lacks under `caps` (empty: it can run); None: it never evidences."""
    machine = MACHINES[area]
    declared = machine.CHECKS[check]
    if not declared.evidences:
        return None
    missing = [c for c in machine.REQUIRES if c not in caps]
    if machine.ANY_OF and not any(c in caps for c in machine.ANY_OF):
        missing.append("|".join(machine.ANY_OF))
    missing += [c for c in declared.needs if c not in caps and c not in missing]
    return tuple(missing)


def rule_coverage(rules: Iterable[str], claimed: ModelOptions,
                  adapter_caps: Iterable[str]) -> dict[str, RuleCoverage]:
    """rule id -> whether a run of an adapter with `adapter_caps` under `claimed` can cover it."""
    caps = run_capabilities(claimed, adapter_caps)
    result: dict[str, RuleCoverage] = {}
    for rule in rules:
        lacking: list[tuple[str, tuple[str, ...]]] = []
        coverable = False
        for area, table in TABLES.items():
            if area not in MACHINES:
                continue  # a table mixed into the areas' own (the restart step's, RESTART_AREAS)
            for check, ids in table.items():
                if rule not in ids:
                    continue
                missing = _lacks(area, check, caps)
                if missing is None:
                    continue
                if not missing:
                    coverable = True
                lacking.append((f"{area}.{check}", missing))
        lacking.sort(key=lambda item: (len(item[1]), item[1]))
        result[rule] = RuleCoverage(rule, coverable, () if coverable else tuple(lacking))
    return result
