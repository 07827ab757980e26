"""Each check is declared once (mqconform.conformance.exploring.checks), and the declarations and the
machines agree: every check a machine makes is declared in its area (else a failure would cite no
rule; :func:`undeclared`, asserted on every run of test_reference_conforms), every declared check is
made by some step, and one check name needs the same capabilities wherever it is declared with needs.

Rule ids: every id in mqconform.conformance.judging.rules (the declarations' rules).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mqconform.adapters.contract import COUNTERS
from mqconform.conformance.exploring.checks import Check, Checks, check, rule_table
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.judging.coverage import CHECK_NEEDS
from mqconform.conformance.judging.rules import TABLES

EXPLORING = Path(__file__).resolve().parents[2] / "mqconform" / "conformance" / "exploring"
#: checks a machine makes in an area that declares them nowhere (a failure there cites no rule), and why.
#: Declaring one changes the run's rule outcomes (and the golden files of tests/house): its own change.
UNDECLARED = {
    "counters.expired": "compared by base.compare_counters in every queue area where the adapter shows the "
                        "counter; declared (EXPIRY-7) in the expiry area only",
}


def undeclared(area: str, checked: set[str]) -> list[str]:
    """The checks a run of `area`'s machine made that its CHECKS do not declare (less UNDECLARED's);
    test_reference_conforms asserts there are none, on every run of every machine under every profile."""
    return sorted(checked - set(MACHINES[area].RULES) - set(UNDECLARED))


def test_undeclared_names_a_check_made_outside_the_declarations() -> None:
    assert undeclared("ring", {"send.result", "ring.bound", "ring.never_declared"}) == ["ring.never_declared"]
    assert undeclared("delivery", {"counters.expired"}) == []
    for name in UNDECLARED:  # a stale entry: the check is declared in every area now
        assert any(name not in machine.RULES for machine in MACHINES.values()), name


def _strings() -> tuple[set[str], set[str], set[str]]:
    """The string constants of the machines' modules, and the constant heads and tails of their
    f-strings (``f"counters.{name}"``: head ``counters.``; ``f"{op}.accepted"``: tail ``.accepted``)."""
    constants: set[str] = set()
    heads: set[str] = set()
    tails: set[str] = set()
    for path in EXPLORING.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                constants.add(node.value)
            elif isinstance(node, ast.JoinedStr) and len(node.values) == 2:
                first, last = node.values
                if isinstance(first, ast.Constant) and str(first.value).endswith(".") and first.value != ".":
                    heads.add(first.value)
                if isinstance(last, ast.Constant) and str(last.value).startswith(".") and last.value != ".":
                    tails.add(last.value)
    return constants, heads, tails


def _made(name: str, constants: set[str], heads: set[str], tails: set[str]) -> bool:
    """Is check `name` spelled by a machine: a literal, or an f-string's head or tail around a
    constant (``counters.`` + ``message_count``; ``restart.kill`` + ``.counters``)?"""
    if name in constants:
        return True
    if any(name.startswith(head) and name[len(head):] in constants | set(COUNTERS) for head in heads):
        return True
    return any(name.endswith(tail) and name[:-len(tail)] in constants for tail in tails)


def _declared_names() -> set[str]:
    return {name for machine in MACHINES.values() for name in machine.CHECKS}


def test_every_declared_check_is_made_by_a_step() -> None:
    constants, heads, tails = _strings()
    tails |= {".accepted"}  # the driver's `<op>.accepted`, for an operation `<op>` a step calls
    unused = sorted(name for name in _declared_names() if not _made(name, constants, heads, tails))
    assert not unused, f"declared checks no machine step makes: {unused}"
    assert not _made("ring.never_made", constants, heads, tails)
    assert not _made("never.accepted", constants, heads, tails)


def test_one_name_needs_the_same_capabilities_wherever_it_needs_any() -> None:
    needs: dict[str, set[tuple[str, ...]]] = {}
    for machine in MACHINES.values():
        for name, declared in machine.CHECKS.items():
            if declared.needs:
                needs.setdefault(name, set()).add(declared.needs)
    assert {name: sorted(found) for name, found in needs.items() if len(found) > 1} == {}
    assert {name: needs[name] for name in needs} == {name: {CHECK_NEEDS[name]} for name in needs}


def test_the_tables_are_the_machines_declarations() -> None:
    for area, machine in MACHINES.items():
        assert TABLES[area] is machine.RULES
        assert set(TABLES[area]) == set(machine.CHECKS), area


def test_citing_changes_rules_only_and_never_adds_a_check() -> None:
    base = Checks(check("send.result", "DELIVERY-2"), check("nack.result", "DELIVERY-8", needs=("nack",)))
    cited = base.citing({"nack.result": ("RING-9",)})
    assert cited["nack.result"] == Check("nack.result", ("RING-9",), ("nack",))
    assert cited["send.result"] == base["send.result"] and list(cited) == list(base)
    with pytest.raises(KeyError, match=r"send\.overflow"):
        base.citing({"send.overflow": ("RING-28",)})


def test_a_vocabulary_check_also_evidences_its_generic_checks_rules() -> None:
    checks = Checks(check("send.result", "RING-3"), check("send.overflow", "RING-28", extends="send.result"))
    table = rule_table("nowhere", checks)
    assert table == {"send.result": ("RING-3",), "send.overflow": ("RING-28", "RING-3")}
    assert not check("queue.accepted", "RING-1").evidences
    assert check("set_ring_size.accepted", "RING-2", needs=("set_ring_size",)).evidences
