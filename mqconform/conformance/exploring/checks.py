"""Each check declared once, beside the machine step that makes it, as Hypothesis declares a ``@rule``.

A :class:`Check` names the check a step makes (``d.check``, ``d.expect_equal``, ``compare=``), the
spec rules it verifies and the capabilities of the gate around it (``needs``: none, the check runs
wherever its area runs). A module declares its checks at module level in a :class:`Checks`; a machine
class lists its area's checks in ``CHECKS`` (its parent's with :meth:`Checks.citing` where the same
step verifies other rules in this area), and the machine's check -> rules table ``RULES`` is collected
from them (:func:`rule_table`). :mod:`mqconform.conformance.judging.rules` (``TABLES``) and
:mod:`~mqconform.conformance.judging.coverage` (``CHECK_NEEDS``) collect the machines' declarations.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping

import attrs

#: the capability of any ``overflow:<policy>`` of the claimed profile's policies (a check's need)
OVERFLOW_POLICY = "overflow:<policy>"


@attrs.frozen
class Check:
    """One check: its name, the spec rules it verifies, the capabilities its gate needs."""

    name: str
    rules: tuple[str, ...]
    needs: tuple[str, ...] = ()
    #: the check this one stands in for (a broker's vocabulary): it also evidences that check's rules
    #: in its area (resolved after the spec's ``evidenced_by``)
    extends: str = ""

    @property
    def evidences(self) -> bool:
        """``<op>.accepted`` only ever fails (an operation refused): it evidences no rule on its own,
        unless its gate needs a capability (the operation is the step's subject)."""
        return not self.name.endswith(".accepted") or bool(self.needs)


def check(name: str, *rules: str, needs: tuple[str, ...] = (), extends: str = "") -> Check:
    """A :class:`Check`, its rules as arguments: ``check("purge.result", "RING-29", needs=("purge",))``."""
    return Check(name, rules, needs, extends)


class Checks(Mapping[str, Check]):
    """An ordered set of declarations by name; ``a | b`` is ``a`` with ``b``'s added or replacing."""

    def __init__(self, *items: Check | Checks) -> None:
        self._by_name: dict[str, Check] = {}
        for item in items:
            for one in item.values() if isinstance(item, Checks) else (item,):
                self._by_name[one.name] = one

    def __getitem__(self, name: str) -> Check:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __or__(self, other: Checks) -> Checks:
        return Checks(self, other)

    def __repr__(self) -> str:
        return f"Checks({', '.join(self._by_name)})"

    def citing(self, rules: Mapping[str, tuple[str, ...]]) -> Checks:
        """The same checks, those named in `rules` verifying these rules instead (an area's own
        reading of a shared step); a name not declared here is an error, never a new check."""
        unknown = sorted(set(rules) - set(self._by_name))
        if unknown:
            raise KeyError(f"citing undeclared checks: {', '.join(unknown)}")
        return Checks(*(attrs.evolve(one, rules=rules.get(one.name, one.rules)) for one in self.values()))

    def without(self, *names: str) -> Checks:
        """The same checks but `names` (an area whose machine never makes them)."""
        return Checks(*(one for name, one in self.items() if name not in names))


@functools.cache
def _evidence() -> dict[str, tuple[str, ...]]:
    """``<area>.<check>`` -> the broker-profile rules the spec says it also evidences
    (a rule's ``evidenced_by``: under a broker's profile the model implements that broker's rule, so
    the same comparison fails when it is broken; merge_outcomes keeps the claimed profile's)."""
    from mqconform.spec import load_catalogue

    found: dict[str, tuple[str, ...]] = {}
    for rule in load_catalogue():
        for name in rule.evidenced_by:
            found[name] = (*found.get(name, ()), rule.id)
    return found


def rule_table(area: str, checks: Checks) -> dict[str, tuple[str, ...]]:
    """The check -> rule ids table of `area`: each declaration's rules, then the rules the spec's
    ``evidenced_by`` adds, then a check's ``extends`` (its own rules, then its generic check's)."""
    table = {name: one.rules for name, one in checks.items()}
    for name, rules in _evidence().items():
        where, _, name_in_area = name.partition(".")
        if where == area and name_in_area in table:
            table[name_in_area] = tuple(dict.fromkeys(table[name_in_area] + rules))
    for name, one in checks.items():
        if one.extends:
            table[name] = tuple(dict.fromkeys(table[name] + table.get(one.extends, ())))
    return table


def unknown_evidence(areas: Mapping[str, Checks]) -> list[str]:
    """The spec's ``evidenced_by`` names that name no declared check of their area (an error)."""
    from mqconform.spec import load_catalogue

    return [f"{rule.location}: {rule.id} evidenced_by {name!r}: no such check in area "
            f"{name.partition('.')[0]!r}" for rule in load_catalogue() for name in rule.evidenced_by
            if name.partition(".")[2] not in areas.get(name.partition(".")[0], {})]


@functools.cache
def rule_applies(rule: str, profile: str) -> bool:
    """Does spec rule `rule` apply to `profile`? (the catalogue loaded once: machines ask per example)"""
    from mqconform.spec import load_catalogue

    catalogue = load_catalogue()
    return rule in catalogue and catalogue[rule].applies_to(profile)
