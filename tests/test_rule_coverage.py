"""Every spec rule has a test, and every test names only rules that exist.

Rule ids are collected from: the conformance machines' check declarations (their CHECKS, collected by
mqconform.conformance.judging.rules),
`@pytest.mark.rules(...)` markers in tests/, and the `rules:` line of the bundled scenario files.
"""

from __future__ import annotations

import re
from pathlib import Path

from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.judging.rules import all_rule_ids
from mqconform.spec import load_catalogue

ROOT = Path(__file__).resolve().parent.parent
ID = re.compile(r"\b([A-Z]+-\d+)\b")
MARKER = re.compile(r"rules\(([^)]*)\)")
SCENARIO_RULES = re.compile(r"^#\s*rules:\s*(.*)$", re.MULTILINE)


def _marker_ids() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name == "test_rule_coverage.py":
            continue
        for args in MARKER.findall(path.read_text()):
            for rule in re.findall(r"[\"']([A-Z]+-\d+)[\"']", args):
                found.setdefault(rule, set()).add(str(path.relative_to(ROOT)))
    return found


def _scenario_ids() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "spec" / "examples").glob("*.y*ml")):
        for line in SCENARIO_RULES.findall(path.read_text()):
            for rule in ID.findall(line):
                found.setdefault(rule, set()).add(str(path.relative_to(ROOT)))
    return found


def _tested() -> set[str]:
    return set(all_rule_ids()) | set(_marker_ids()) | set(_scenario_ids())


def test_every_spec_rule_has_a_test() -> None:
    """A rule without a test fails the build unless spec/ says why nothing checks it (`unchecked`)."""
    catalogue = load_catalogue()
    tested = _tested()
    untested = sorted(rule.id for rule in catalogue if rule.id not in tested and not rule.unchecked)
    assert not untested, f"{len(untested)} spec rules have no test: {', '.join(untested)}"
    gaps = sorted(rule.id for rule in catalogue if rule.unchecked)
    print(f"rules covered: {len(catalogue) - len(gaps)} of {len(catalogue)}; unchecked: {', '.join(gaps)}")


def test_unchecked_rules_are_really_unchecked() -> None:
    """A rule marked `unchecked` that a test names is a stale mark: remove the mark."""
    stale = sorted(rule.id for rule in load_catalogue() if rule.unchecked and rule.id in _tested())
    assert not stale, f"rules marked unchecked in spec/ but named by tests: {', '.join(stale)}"


def test_tests_name_only_known_rules() -> None:
    known = {rule.id for rule in load_catalogue()}
    named = {rule: {"a machine's CHECKS (mqconform/conformance/exploring)"} for rule in all_rule_ids()}
    for source in (_marker_ids(), _scenario_ids()):
        for rule, places in source.items():
            named.setdefault(rule, set()).update(places)
    unknown = {rule: sorted(places) for rule, places in named.items() if rule not in known}
    assert not unknown, f"tests name rules that are not in spec/: {unknown}"


#: observable rules no conformance check evidences yet, and why (a known gap, reported, never a pass)
NO_CHECK_YET = {
    "RING-26": "RabbitMQ dead-letters a dropped head asynchronously: a dead-letter queue's count read "
               "right after the send is flaky on a quorum queue (the adapter would have to wait for it)",
}


def test_every_rule_has_a_conformance_check_or_says_why_not() -> None:
    """A rule of a profile that no conformance check evidences (model and scenario tests only) says in
    spec/ why its subject cannot be observed from outside an adapter (`unobservable`); a rule marked so
    that a check evidences is a stale mark."""
    catalogue = load_catalogue()
    evidenced = {rule for machine in MACHINES.values() for check, ids in machine.RULES.items() for rule in ids
                 if machine.CHECKS[check].evidences}  # as coverage.py counts them
    silent = sorted(rule.id for rule in catalogue
                    if rule.id not in evidenced and not rule.unobservable and not rule.unchecked
                    and rule.id not in NO_CHECK_YET)
    assert not silent, f"rules without a conformance check or an `unobservable` reason: {', '.join(silent)}"
    stale = sorted(rule.id for rule in catalogue if rule.unobservable and rule.id in evidenced)
    assert not stale, f"rules marked unobservable in spec/ but evidenced by a check: {', '.join(stale)}"
    assert not set(NO_CHECK_YET) & evidenced, "a rule listed in NO_CHECK_YET has a check now: remove it"
