"""The known-deviation registry: rules an implementation is known to break, as data.

An adapter passes the suite under the profile it claims, or each rule it breaks is listed in
``deviations.yaml`` (next to this module) with the broker's version range, the reason and a source
link. ``mqconform run`` reports a failing rule that matches an entry as ``deviation`` (not a
failure) unless ``--strict``. The file is checked like the spec catalogue: unknown keys, rule ids
missing from :func:`mqconform.spec.load_catalogue`, unknown profiles and malformed version ranges
are a :class:`DeviationError` whose message starts ``<file>:<line>:``.

Entry keys: ``rule`` (a spec rule id), ``adapter`` (the adapter's ``name``), ``versions`` (``"*"``,
or comma-separated clauses such as ``">=2.9, <2.12"`` on the server version the adapter reports as
``server_version``), ``reason``, ``source`` (an http(s) link), and optionally ``profiles`` (the
profiles the deviation is from; default: the one the adapter claims, so checking an adapter against
another profile still shows every difference as a failure).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

#: the registry shipped with the suite
DEFAULT_PATH: Final = Path(__file__).resolve().parent / "deviations.yaml"

_REQUIRED: Final = ("rule", "adapter", "versions", "reason", "source")
_OPTIONAL: Final = ("profiles",)
_OPS: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
    "<": operator.lt}
_CLAUSE: Final = re.compile(r"^(>=|<=|==|!=|>|<)?\s*(\d+(?:\.\d+){0,2})$")
_ADAPTER: Final = re.compile(r"^[A-Za-z0-9_.:-]+$")
_URL: Final = re.compile(r"^https?://\S+$")


class DeviationError(ValueError):
    """The registry file is malformed; the message is ``<file>:<line>: <problem>``."""


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"2.9.10"`` -> (2, 9, 10); leading digits of each part only (``"7.0.15-rc1"`` works);
    None when `text` has no version number."""
    parts: list[int] = []
    for part in text.strip().lstrip("v").split(".")[:3]:
        match = re.match(r"\d+", part)
        if match is None:
            break
        parts.append(int(match.group()))
    return tuple(parts) if parts else None


@attrs.frozen
class VersionRange:
    """``*`` (any version, also an unknown one) or clauses that must all hold."""

    text: str
    clauses: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        """ValueError naming the bad clause."""
        text = text.strip()
        if text == "*":
            return cls(text, ())
        clauses = []
        for raw in text.split(","):
            match = _CLAUSE.match(raw.strip())
            if match is None:
                raise ValueError(f"bad version clause {raw.strip()!r} (expected e.g. '>=2.9', '<2.12', "
                                 "'==7.0.15' or '*')")
            clauses.append((match.group(1) or "==", tuple(int(p) for p in match.group(2).split("."))))
        return cls(text, tuple(clauses))

    def contains(self, version: str) -> bool:
        """Does the server `version` fall in the range? An unknown version only matches ``*``."""
        if not self.clauses:
            return True
        found = parse_version(version)
        if found is None:
            return False
        for op, bound in self.clauses:
            width = len(bound)  # "<2.12" compares major.minor only
            if not _OPS[op](found[:width] + (0,) * (width - len(found[:width])), bound):
                return False
        return True


@attrs.frozen
class Deviation:
    """One registered deviation of one adapter from one rule."""

    rule: str
    adapter: str
    versions: VersionRange
    reason: str
    source: str
    profiles: frozenset[str] | None = None
    #: ``<file>:<line>`` of the entry
    location: str = attrs.field(default="", eq=False)

    def matches(self, rule: str, adapter: str, version: str, profile: str, claimed: str) -> bool:
        """Does this entry cover `rule` failing for `adapter` at server `version`, checked against
        `profile` (the adapter claims `claimed`)?"""
        profiles = self.profiles if self.profiles is not None else frozenset({claimed})
        return (self.rule == rule and self.adapter == adapter and profile in profiles
                and self.versions.contains(version))

    def describe(self) -> str:
        return f"{self.reason} ({self.source})"


@attrs.frozen
class Registry:
    """Every registered deviation, in file order."""

    deviations: tuple[Deviation, ...] = ()

    def __len__(self) -> int:
        return len(self.deviations)

    def find(self, rule: str, adapter: str, version: str, profile: str, claimed: str) -> Deviation | None:
        """The first entry covering `rule` (see :meth:`Deviation.matches`), else None."""
        for deviation in self.deviations:
            if deviation.matches(rule, adapter, version, profile, claimed):
                return deviation
        return None

    def for_adapter(self, adapter: str) -> tuple[Deviation, ...]:
        return tuple(d for d in self.deviations if d.adapter == adapter)


class _Loader:
    """One YAML file being checked, with line numbers from its nodes."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self.text = path.read_text(encoding="utf-8")

    def error(self, node: Node | None, problem: str) -> DeviationError:
        line = node.start_mark.line + 1 if node is not None else 1
        return DeviationError(f"{self.name}:{line}: {problem}")

    def scalar(self, node: Node, key: str) -> str:
        if not isinstance(node, ScalarNode) or not str(node.value).strip():
            raise self.error(node, f"{key} must be a non-empty string")
        return str(node.value).strip()

    def root(self) -> Node | None:
        try:
            return yaml.compose(self.text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else 1
            problem = exc.problem or exc.context
            raise DeviationError(f"{self.name}:{line}: malformed YAML: {problem}") from None
        except yaml.YAMLError as exc:
            raise DeviationError(f"{self.name}:1: malformed YAML: {exc}") from None

    def mapping(self, node: Node, allowed: tuple[str, ...], required: tuple[str, ...],
                what: str) -> dict[str, Node]:
        if not isinstance(node, MappingNode):
            raise self.error(node, f"{what} must be a mapping with keys {', '.join(required)}")
        found: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if key in found:
                raise self.error(key_node, f"duplicate key {key!r} in {what}")
            if key not in allowed:
                raise self.error(key_node, f"unknown key {key!r} in {what} (allowed: {', '.join(allowed)})")
            found[key] = value_node
        for key in required:
            if key not in found:
                raise self.error(node, f"missing key {key!r} in {what}")
        return found


def _entry(file: _Loader, node: Node, rule_ids: frozenset[str], profiles: tuple[str, ...],
           seen: dict[tuple[str, str, str], str]) -> Deviation:
    fields = file.mapping(node, _REQUIRED + _OPTIONAL, _REQUIRED, "deviation")
    rule = file.scalar(fields["rule"], "rule")
    if rule not in rule_ids:
        raise file.error(fields["rule"], f"unknown rule id {rule!r} (not in the spec catalogue)")
    adapter = file.scalar(fields["adapter"], "adapter")
    if not _ADAPTER.match(adapter):
        raise file.error(fields["adapter"], f"malformed adapter name {adapter!r}")
    versions_text = file.scalar(fields["versions"], "versions")
    try:
        versions = VersionRange.parse(versions_text)
    except ValueError as exc:
        raise file.error(fields["versions"], str(exc)) from None
    source = file.scalar(fields["source"], "source")
    if not _URL.match(source):
        raise file.error(fields["source"], f"source must be an http(s) link, not {source!r}")
    chosen: frozenset[str] | None = None
    if "profiles" in fields:
        seq = fields["profiles"]
        if not isinstance(seq, SequenceNode) or not seq.value:
            raise file.error(seq, "profiles must be a non-empty list of profile names")
        names = [file.scalar(item, "profile") for item in seq.value]
        for item, name in zip(seq.value, names, strict=True):
            if name not in profiles:
                raise file.error(item, f"unknown profile {name!r} (known: {', '.join(profiles)})")
        chosen = frozenset(names)
    location = f"{file.name}:{node.start_mark.line + 1}"
    key = (rule, adapter, versions.text)
    if key in seen:
        raise file.error(node, f"duplicate deviation {rule} for {adapter} {versions.text} "
                               f"(first at {seen[key]})")
    seen[key] = location
    return Deviation(rule, adapter, versions, file.scalar(fields["reason"], "reason"), source, chosen,
                     location)


def load_registry(paths: Iterable[Path] | None = None) -> Registry:
    """Load and check the registry files (default: the shipped ``deviations.yaml``)."""
    from mqconform.spec import PROFILES, load_catalogue

    rule_ids = frozenset(rule.id for rule in load_catalogue())
    found: list[Deviation] = []
    seen: dict[tuple[str, str, str], str] = {}
    for path in (DEFAULT_PATH,) if paths is None else tuple(paths):
        try:
            file = _Loader(Path(path))
        except OSError as exc:
            raise DeviationError(f"{path}:1: cannot read: {exc.strerror or exc}") from None
        root = file.root()
        if root is None:
            continue  # an empty file registers nothing
        top = file.mapping(root, ("deviations",), ("deviations",), "file")
        entries = top["deviations"]
        if isinstance(entries, ScalarNode) and entries.tag.endswith(":null"):
            continue
        if not isinstance(entries, SequenceNode):
            raise file.error(entries, "deviations must be a list of entries")
        found.extend(_entry(file, item, rule_ids, PROFILES, seen) for item in entries.value)
    return Registry(tuple(found))
