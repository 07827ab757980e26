"""The spec catalogue: rules as data, one YAML file per area, loaded and checked with file:line errors.

A rule file has the top-level keys ``area``, ``title`` and ``rules``; each rule has ``id``,
``statement``, ``kind``, ``source``, ``profiles`` and optionally ``params``, ``notes`` and
``unchecked`` (why no model code or test checks the rule yet: an explicit, reported gap, never a pass),
``unobservable`` (why no conformance check can evidence the rule: its subject cannot be observed
from outside any adapter through the contract; the model's and scenario tests still check it) and
``evidenced_by`` (``<area>.<check>`` names: conformance checks that also evidence the rule, where the
model implements it under its profiles, e.g. a broker's own order of returns seen by
``redelivery.receive.id``; mqconform.conformance.exploring.checks adds the rule to those checks' rules).
Every validation error is a :class:`SpecError` whose message starts ``<file>:<line>:``; line
numbers come from the YAML nodes (``yaml.compose``), so they point at the offending key or value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .yaml_nodes import compose, malformed

#: The implementations a rule may apply to (``profiles: all`` means every one of them).
PROFILES: Final[tuple[str, ...]] = (
    "artemis", "hornetq", "hornetq-2.4", "rabbitmq-classic", "rabbitmq-quorum", "jetstream", "redis-streams",
    "activemq-classic", "mosquitto", "beanstalkd", "kafka-share", "rocketmq",
)
#: What a rule constrains: a state that must never occur, something that must eventually happen,
#: or the value of a counter.
KINDS: Final[tuple[str, ...]] = ("safety", "liveness", "counter")
#: Area name -> the id prefix of its rules, in catalogue order.
AREAS: Final[Mapping[str, str]] = MappingProxyType({
    "delivery": "DELIVERY", "ring": "RING", "redelivery": "REDELIVERY", "scheduling": "SCHED",
    "paging": "PAGING", "throttle": "THROTTLE", "admission": "ADMISSION", "storage": "STORAGE",
    "restart": "RESTART", "expiry": "EXPIRY", "retention": "RETENTION", "lastvalue": "LASTVALUE",
})

_TOP_REQUIRED: Final = ("area", "title", "rules")
_RULE_REQUIRED: Final = ("id", "statement", "kind", "source", "profiles")
_RULE_OPTIONAL: Final = ("params", "notes", "unchecked", "unobservable", "evidenced_by")
_ID: Final = re.compile(r"^([A-Z]+)-([1-9][0-9]*)$")


class SpecError(ValueError):
    """A spec file is malformed or breaks a catalogue rule; the message is ``<file>:<line>: <problem>``."""


def _freeze(params: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(params))


@attrs.frozen
class Rule:
    """One spec rule: a single testable sentence, where it comes from, and where it applies."""

    id: str
    area: str
    statement: str
    kind: str
    source: str
    profiles: frozenset[str]
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze, hash=False)
    notes: str = ""
    #: why nothing checks this rule yet (empty: the rule has tests); reports list it as uncovered
    unchecked: str = ""
    #: why no conformance check can evidence it from outside an adapter (empty: one can, or should)
    unobservable: str = ""
    #: conformance checks (``<area>.<check>``) that also evidence it under its profiles
    evidenced_by: tuple[str, ...] = ()
    #: ``<file>:<line>`` of the rule's id, for reports and error messages.
    location: str = attrs.field(default="", eq=False)

    def applies_to(self, profile: str) -> bool:
        """True when the rule holds for implementations of `profile`."""
        return profile in self.profiles


@attrs.frozen(eq=False)
class Catalogue:
    """Every rule by id; iteration is in file order (areas in :data:`AREAS` order)."""

    rules: Mapping[str, Rule] = attrs.field(converter=_freeze)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules.values())

    def __len__(self) -> int:
        return len(self.rules)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Rule):
            return self.rules.get(item.id) == item
        return item in self.rules

    def __getitem__(self, rule_id: str) -> Rule:
        return self.rules[rule_id]

    @property
    def areas(self) -> tuple[str, ...]:
        """The areas that have rules, in catalogue order."""
        return tuple(dict.fromkeys(rule.area for rule in self))

    def by_area(self, area: str) -> tuple[Rule, ...]:
        """The rules of one area in file order (empty for an area without rules)."""
        return tuple(rule for rule in self if rule.area == area)

    def for_profile(self, profile: str) -> tuple[Rule, ...]:
        """The rules that apply to `profile`; ValueError for a name not in :data:`PROFILES`."""
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
        return tuple(rule for rule in self if profile in rule.profiles)


class _File:
    """One YAML file being checked: its name for messages and the constructor of its values."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        self.constructor = yaml.constructor.SafeConstructor()

    def error(self, node: Node | None, problem: str) -> SpecError:
        line = node.start_mark.line + 1 if node is not None else 1
        return SpecError(f"{self.name}:{line}: {problem}")

    def value(self, node: Node) -> Any:
        return self.constructor.construct_object(node, deep=True)

    def text(self, node: Node, key: str) -> str:
        value = self.value(node)
        if value is None:
            raise self.error(node, f"empty {key}")
        if not isinstance(value, str):
            raise self.error(node, f"{key} must be a string, not {type(value).__name__}")
        if not value.strip():
            raise self.error(node, f"empty {key}")
        return value.strip()

    def mapping(self, node: Node, allowed: tuple[str, ...], required: tuple[str, ...],
                what: str) -> dict[str, tuple[Node, Node]]:
        """The key -> (key node, value node) pairs of a mapping node, checked against the key lists."""
        if not isinstance(node, MappingNode):
            raise self.error(node, f"{what} must be a mapping with keys {', '.join(required)}")
        found: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            key = self.value(key_node)
            if not isinstance(key, str):
                raise self.error(key_node, f"{what} key must be a string, not {key!r}")
            if key in found:
                raise self.error(key_node, f"duplicate key {key!r} in {what}")
            if key not in allowed:
                raise self.error(key_node, f"unknown key {key!r} in {what} (allowed: {', '.join(allowed)})")
            found[key] = (key_node, value_node)
        for key in required:
            if key not in found:
                raise self.error(node, f"missing key {key!r} in {what}")
        return found


def _profiles(file: _File, node: Node) -> frozenset[str]:
    if isinstance(node, ScalarNode):
        if file.value(node) == "all":
            return frozenset(PROFILES)
        raise file.error(node, f"profiles must be a list of profile names or 'all', not {node.value!r}")
    if not isinstance(node, SequenceNode):
        raise file.error(node, "profiles must be a list of profile names or 'all'")
    if not node.value:
        raise file.error(node, "empty profiles")
    names: list[str] = []
    for item in node.value:
        name = file.value(item)
        if name not in PROFILES:
            raise file.error(item, f"unknown profile {name!r} (known: {', '.join(PROFILES)})")
        if name in names:
            raise file.error(item, f"duplicate profile {name!r}")
        names.append(name)
    return frozenset(names)


def _checks(file: _File, node: Node) -> tuple[str, ...]:
    if not isinstance(node, SequenceNode) or not node.value:
        raise file.error(node, "evidenced_by must be a non-empty list of <area>.<check> names")
    names: list[str] = []
    for item in node.value:
        name = file.value(item)
        area, _, check = name.partition(".") if isinstance(name, str) else ("", "", "")
        if area not in AREAS or not check:
            raise file.error(item, f"evidenced_by names <area>.<check> (areas: {', '.join(AREAS)}), "
                                   f"not {name!r}")
        if name in names:
            raise file.error(item, f"duplicate check {name!r}")
        names.append(name)
    return tuple(names)


def _rule(file: _File, node: Node, area: str, seen: dict[str, str]) -> Rule:
    fields = file.mapping(node, _RULE_REQUIRED + _RULE_OPTIONAL, _RULE_REQUIRED, "rule")
    id_node = fields["id"][1]
    rule_id = file.text(id_node, "id")
    match = _ID.match(rule_id)
    if match is None:
        raise file.error(id_node, f"malformed id {rule_id!r} (expected PREFIX-<n>, n >= 1)")
    prefix = AREAS[area]
    if match.group(1) != prefix:
        raise file.error(id_node, f"id {rule_id} does not match area {area!r} (expected {prefix}-<n>)")
    location = f"{file.name}:{id_node.start_mark.line + 1}"
    if rule_id in seen:
        raise file.error(id_node, f"duplicate id {rule_id} (first at {seen[rule_id]})")
    seen[rule_id] = location
    kind_node = fields["kind"][1]
    kind = file.text(kind_node, "kind")
    if kind not in KINDS:
        raise file.error(kind_node, f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    params: Mapping[str, Any] = {}
    if "params" in fields:
        params_node = fields["params"][1]
        raw = file.value(params_node)
        if raw is None:
            raw = {}
        if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
            raise file.error(params_node, "params must be a mapping with string keys")
        params = raw
    notes = file.text(fields["notes"][1], "notes") if "notes" in fields else ""
    unchecked = file.text(fields["unchecked"][1], "unchecked") if "unchecked" in fields else ""
    unobservable = file.text(fields["unobservable"][1], "unobservable") if "unobservable" in fields else ""
    return Rule(
        id=rule_id,
        area=area,
        statement=file.text(fields["statement"][1], "statement"),
        kind=kind,
        source=file.text(fields["source"][1], "source"),
        profiles=_profiles(file, fields["profiles"][1]),
        params=params,
        notes=notes,
        unchecked=unchecked,
        unobservable=unobservable,
        evidenced_by=_checks(file, fields["evidenced_by"][1]) if "evidenced_by" in fields else (),
        location=location,
    )


def _load_file(path: Path, seen: dict[str, str]) -> list[Rule]:
    file = _File(path, path.name)
    try:
        root = compose(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SpecError(malformed(file.name, exc)) from None
    try:
        if root is None:
            raise SpecError(f"{file.name}:1: empty file (expected keys {', '.join(_TOP_REQUIRED)})")
        top = file.mapping(root, _TOP_REQUIRED, _TOP_REQUIRED, "file")
        area_node = top["area"][1]
        area = file.text(area_node, "area")
        if area not in AREAS:
            raise file.error(area_node, f"unknown area {area!r} (known: {', '.join(AREAS)})")
        file.text(top["title"][1], "title")
        rules_node = top["rules"][1]
        if not isinstance(rules_node, SequenceNode) or not rules_node.value:
            raise file.error(rules_node, "rules must be a non-empty list of rules")
        return [_rule(file, item, area, seen) for item in rules_node.value]
    finally:
        file.constructor.constructed_objects.clear()


def _order(path: Path) -> tuple[int, str]:
    names = list(AREAS)
    return (names.index(path.stem) if path.stem in names else len(names), path.name)


def load_catalogue(directory: Path | None = None) -> Catalogue:
    """Load and check every ``*.yaml`` rule file in `directory` (default: this package's folder, read
    once per process: a run asks for it from several layers)."""
    if directory is None:
        return _shipped_catalogue()
    return _load_folder(Path(directory))


@functools.cache
def _shipped_catalogue() -> Catalogue:
    return _load_folder(Path(__file__).resolve().parent)


def _load_folder(folder: Path) -> Catalogue:
    paths = sorted(folder.glob("*.yaml"), key=_order)
    if not paths:
        raise SpecError(f"{folder}:1: no *.yaml rule files")
    seen: dict[str, str] = {}
    rules: dict[str, Rule] = {}
    for path in paths:
        for rule in _load_file(path, seen):
            rules[rule.id] = rule
    return Catalogue(rules)
