"""The known-deviation registry: broker bugs the suite knows, each scoped to the finding it explains.

``deviations.yaml`` (next to this module) lists them, for the adapter, server version range and
profile of each entry. An entry with a **model** names a bug model (:mod:`mqconform.reference_model.bugs`:
the reference model with that one bug): it explains a finding, whatever check found it, only when the
counterexample, replayed on the implementation with the bug model's expectations, holds at every step
under every observation the scenario runner makes (:func:`.bug_replay.holds_under`, the machinery of
:mod:`mqconform.conformance.exploring.minimize`); its **shape** (a step-shape predicate over the claimed
model's replay, :data:`.deviation_shapes.SHAPES`) is only a cheap pre-filter, and anything the bug
model does not reproduce stays a failure. An entry without a model (a bug too intricate to model
exactly, or not moved yet) explains one kind of finding: the failing **check**, the shape and,
optionally, the **observed** relation and the compared **field**. The verdict is taken in
:mod:`mqconform.conformance.judging.verdict`.

An entry may instead name a **history** check of the report (``history: ring-bound``,
:data:`mqconform.reports.checks.definitions.CHECKS`): a failing result of that check is a deviation
when every example that fails it has the entry's shape (the model's replay of the example's operations
as recorded; :mod:`mqconform.reports.excuse`).

The keys and how a version range counts as measured: docs/deviations.md. Loading checks every key
and value; a problem is a :class:`DeviationError` whose message starts ``<file>:<line>:``.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from mqconform.spec.yaml_nodes import compose, malformed

from .bug_replay import Replay
from .deviation_shapes import OBSERVED, SHAPES, TraceStep, model_trace

#: the registry shipped with the suite
DEFAULT_PATH: Final = Path(__file__).resolve().parent / "deviations.yaml"

_REQUIRED: Final = ("adapter", "versions", "measured", "shape", "reason", "source")
#: an entry names the check it explains with `check` and `rules` (and optionally `observed` and
#: `field`), or several checks one bug shows through with `shows`: a list of those four keys each
_ONE_CHECK: Final = ("rules",)
_SHOWN_AS: Final = ("check", "history", "rules", "observed", "field")
_OPTIONAL: Final = ("profiles", "area", "observed", "field", "scenario", "check", "history", "rules", "shows",
                    "model", "unmodelled")
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


def _at(found: tuple[int, ...], width: int) -> tuple[int, ...]:
    """`found` cut or padded to `width` parts (``"<2.12"`` compares major.minor only)."""
    return found[:width] + (0,) * (width - len(found[:width]))


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
        return all(_OPS[op](_at(found, len(bound)), bound) for op, bound in self.clauses)

    def unmeasured_ends(self, fails: Sequence[str], holds: Sequence[str]) -> list[str]:
        """The ends of the range that `fails` / `holds` (releases replayed) do not pin down."""
        def hit(bound: tuple[int, ...], versions: Sequence[str]) -> bool:
            """Is the release the bound names (``2.11`` is 2.11.0) among `versions`?"""
            return any((v := parse_version(text)) is not None and _at(v, 3) == _at(bound, 3)
                       for text in versions)

        lower = [b for op, b in self.clauses if op in (">=", ">", "==")]
        upper = [(op, b) for op, b in self.clauses if op in ("<", "<=", "==")]
        ends: list[str] = []
        if not lower:
            ends.append("lower end (open)")
        elif not any(hit(b, fails) for op, b in self.clauses if op in (">=", "==")):
            ends.append(f"lower end {'.'.join(map(str, lower[0]))}")
        if not upper:
            ends.append("upper end (open)")
        elif not any(hit(b, holds if op == "<" else fails) for op, b in upper):
            ends.append(f"upper end {'.'.join(map(str, upper[0][1]))}")
        return ends


@attrs.frozen
class Measured:
    """How a version range was established (see the module docstring, ``measured``)."""

    fails: tuple[str, ...] = ()
    holds: tuple[str, ...] = ()
    unmeasured: str = ""


# ---------------------------------------------------------------------------------------- entries
@attrs.frozen
class Deviation:
    """One registered broker bug, as one check shows it (see the module docstring)."""

    rules: tuple[str, ...]
    adapter: str
    versions: VersionRange
    check: str
    shape: str
    reason: str
    source: str
    measured: Measured = Measured()
    profiles: frozenset[str] | None = None
    area: str | None = None
    observed: str | None = None
    field: str | None = None
    scenario: str | None = None
    #: ``<file>:<line>`` of the entry
    location: str = attrs.field(default="", eq=False)
    #: `check` names a history check of the report (ring-bound, ...), not a step check
    history: bool = False
    #: the bug model (mqconform.reference_model.bugs) whose replay decides; `check` is then "" (any)
    model: str | None = None
    #: without a bug model: why the bug has none (too intricate to model exactly, or not yet)
    unmodelled: str = ""
    #: the other registered bug (an entry with a bug model) that made the finding's story together
    #: with this one: neither bug model alone holds on replay, both switched on do (Registry.find)
    together: Deviation | None = attrs.field(default=None, eq=False)

    def applies(self, adapter: str, version: str, profile: str, claimed: str) -> bool:
        """Is the entry about `adapter` at server `version`, checked against `profile` (the adapter
        claims `claimed`)?"""
        profiles = self.profiles if self.profiles is not None else frozenset({claimed})
        return self.adapter == adapter and profile in profiles and self.versions.contains(version)

    def explains(self, finding: Any, profile: str, trace: Callable[[], Sequence[TraceStep] | None],
                 replay: Replay | None = None) -> bool:
        """Does the entry explain `finding` (runner.Finding) under `profile`? With a bug model: its
        area, the shape of its counterexample (a pre-filter) and `replay` of the counterexample on the
        implementation against the bug model holds (no replay: never). Without: its check (and
        area), the observed field and relation (of the check's difference or of the one the minimised
        counterexample ends at), its rules, and the shape of its counterexample (`trace`: the model's
        replay of it, computed on demand)."""
        if self.model is not None:
            if self.history or (self.area is not None and finding.machine != self.area):
                return False
            return replay is not None and self.has_shape(trace()) and \
                replay([step.as_scenario() for step in finding.steps], self.model, finding.options)
        if self.history or finding.check != self.check or \
                (self.area is not None and finding.machine != self.area):
            return False
        # the difference the check saw, or the one the minimised counterexample shows at its end
        seen = [(getattr(finding, "field", ""), getattr(finding, "expected", None),
                 getattr(finding, "actual", None))]
        if getattr(finding, "shown", None) is not None:
            seen.append(finding.shown)
        if not any((self.field is None or field == self.field)
                   and (self.observed is None or OBSERVED[self.observed](want, got))
                   for field, want, got in seen):
            return False
        if not set(self.rules) & set(finding.rules):
            return False
        return self.has_shape(trace())

    def has_shape(self, trace: Sequence[TraceStep] | None) -> bool:
        """The model's replay (None: the model rejected the steps) has the entry's shape."""
        return trace is not None and len(trace) > 0 and SHAPES[self.shape](trace)

    def excuses(self, check: str, machine: str, trace: Sequence[TraceStep] | None) -> bool:
        """Does the entry explain one example that fails history check `check` in area `machine`:
        the model's replay of the example's operations (`trace`) has the entry's shape?"""
        if not self.history or check != self.check or (self.area is not None and machine != self.area):
            return False
        return self.has_shape(trace)

    @property
    def where(self) -> str:
        """``<file>:<line>`` of the entry, and of the one it explained a finding together with."""
        return self.location if self.together is None else f"{self.location} with {self.together.location}"

    def describe(self) -> str:
        alone = f"{self.reason} ({self.source})"
        return alone if self.together is None else f"{alone}; together with: {self.together.describe()}"


@attrs.frozen
class Registry:
    """Every registered deviation, in file order."""

    deviations: tuple[Deviation, ...] = ()

    def __len__(self) -> int:
        return len(self.deviations)

    def find(self, finding: Any, adapter: str, version: str, profile: str, claimed: str,
             replay: Replay | None = None) -> Deviation | None:
        """The first entry that explains `finding` for `adapter` at `version` checked against
        `profile` (claimed: `claimed`), else None (see Deviation.applies and .explains; `replay`
        decides for the entries with a bug model)."""
        cache: list[list[TraceStep] | None] = []

        def trace() -> list[TraceStep] | None:
            if not cache:
                cache.append(model_trace(finding.steps, profile))
            return cache[0]

        applying = [d for d in self.deviations if d.applies(adapter, version, profile, claimed)]
        for deviation in applying:
            if deviation.explains(finding, profile, trace, replay):
                return deviation
        if replay is None:
            return None
        return together(applying, [step.as_scenario() for step in finding.steps], finding.machine, trace(),
                        replay, finding.options)

    def for_history(self, check: str, adapter: str, version: str, profile: str,
                    claimed: str) -> tuple[Deviation, ...]:
        """The entries about history check `check` for `adapter` at `version` checked against `profile`."""
        return tuple(d for d in self.deviations if d.history and d.check == check
                     and d.applies(adapter, version, profile, claimed))

    def for_adapter(self, adapter: str) -> tuple[Deviation, ...]:
        return tuple(d for d in self.deviations if d.adapter == adapter)


def together(applying: Sequence[Deviation], steps: Sequence[Mapping[str, Any]], area: str | None,
             trace: Sequence[TraceStep] | None, replay: Replay | None,
             options: Mapping[str, Any] | None = None) -> Deviation | None:
    """Two registered bugs that together explain a counterexample (`steps`, found in `area`; `trace`:
    the model's replay of it) that neither explains alone: of `applying`, entries with bug models of
    that area whose shapes the counterexample has, and whose replay with both switched on holds
    (bug_replay.holds_under: each of them changes what the model expects there). The first such pair
    in file order, as the first entry with the other as its `together`; None without one."""
    if replay is None:
        return None
    models = [d for d in applying if d.model is not None and not d.history
              and (d.area is None or area is None or d.area == area) and d.has_shape(trace)]
    for n, first in enumerate(models):
        for second in models[n + 1:]:
            if first.model != second.model and replay(steps, (str(first.model), str(second.model)), options):
                return attrs.evolve(first, together=second)
    return None


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

    def names(self, node: Node, key: str, allow_empty: bool = False) -> list[tuple[Node, str]]:
        """A list of strings (a YAML sequence), each with its node."""
        if not isinstance(node, SequenceNode) or (not node.value and not allow_empty):
            raise self.error(node, f"{key} must be a {'' if allow_empty else 'non-empty '}list")
        return [(item, self.scalar(item, key)) for item in node.value]

    def root(self) -> Node | None:
        try:
            return compose(self.text)
        except yaml.YAMLError as exc:
            raise DeviationError(malformed(self.name, exc)) from None

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


@attrs.frozen
class _Context:
    """What entries are checked against: the catalogue, the profiles and the check tables."""

    catalogue: Any
    profiles: tuple[str, ...]
    #: check -> area -> the rule ids it can report there
    checks: Mapping[str, Mapping[str, frozenset[str]]]

    @classmethod
    @functools.cache
    def load(cls) -> _Context:
        """Built once per process (the catalogue and the tables do not change while it runs)."""
        from mqconform.conformance.exploring.restart import AFTER_RESTART, FOLLOW_UP_CHECKS
        from mqconform.conformance.judging.rules import TABLES
        from mqconform.spec import PROFILES, load_catalogue

        checks: dict[str, dict[str, frozenset[str]]] = {}
        for area, table in TABLES.items():
            for check, ids in table.items():
                extra = AFTER_RESTART if check in FOLLOW_UP_CHECKS else ()
                checks.setdefault(check, {})[area] = frozenset(ids) | frozenset(extra)
        return cls(load_catalogue(), tuple(PROFILES), checks)


def claimed_profile(adapter: str) -> str | None:
    """The profile the class of adapter `adapter` claims, when it says so at class level."""
    from mqconform.adapters.registry import AdapterLoadError, load_class

    try:
        claimed = getattr(load_class(adapter), "profile", None)
    except AdapterLoadError:
        return None
    return claimed if isinstance(claimed, str) and claimed else None


def _measured(file: _Loader, node: Node, versions: VersionRange) -> Measured:
    fields = file.mapping(node, ("fails", "holds", "unmeasured"), ("fails",), "measured")
    fails = [v for _, v in file.names(fields["fails"], "measured.fails")]
    holds = [v for _, v in file.names(fields["holds"], "measured.holds", allow_empty=True)] \
        if "holds" in fields else []
    for item, text in file.names(fields["fails"], "measured.fails"):
        if parse_version(text) is None or not versions.contains(text):
            raise file.error(item, f"measured.fails: {text} is not in the range {versions.text}")
    if "holds" in fields:
        for item, text in file.names(fields["holds"], "measured.holds", allow_empty=True):
            if parse_version(text) is None or versions.contains(text):
                raise file.error(item, f"measured.holds: {text} is in the range {versions.text}")
    note = file.scalar(fields["unmeasured"], "measured.unmeasured") if "unmeasured" in fields else ""
    ends = versions.unmeasured_ends(fails, holds)
    if ends and not note:
        raise file.error(node, f"versions {versions.text}: {' and '.join(ends)} not measured (replay the "
                               "release there, or say why not in measured.unmeasured)")
    return Measured(tuple(fails), tuple(holds), note)


def _entry(file: _Loader, node: Node, context: _Context,
           seen: dict[tuple[Any, ...], str]) -> list[Deviation]:
    """The deviations of one entry: one per check it shows through (``check`` or ``shows``), or one
    for its bug model."""
    fields = file.mapping(node, _REQUIRED + _OPTIONAL, _REQUIRED, "deviation")
    model = _model(file, fields) if "model" in fields else None
    if model is not None and "unmodelled" in fields:
        raise file.error(fields["unmodelled"], "unmodelled does not apply to an entry with a bug model")
    unmodelled = file.scalar(fields["unmodelled"], "unmodelled") if "unmodelled" in fields else ""
    if model is None and ("shows" in fields) == any(key in fields for key in _SHOWN_AS):
        raise file.error(node, "a deviation names its check with check (or history) and rules (observed, "
                               "field), or several with shows: a list of those; not both, not neither")
    adapter, versions, measured, source, chosen, profiles = _scope(file, node, fields, context)
    area = file.scalar(fields["area"], "area") if "area" in fields else None
    shape = file.scalar(fields["shape"], "shape")
    if shape not in SHAPES:
        raise file.error(fields["shape"], f"unknown shape {shape!r} (known: {', '.join(SHAPES)})")
    scenario = file.scalar(fields["scenario"], "scenario") if "scenario" in fields else None
    reason = file.scalar(fields["reason"], "reason")
    if model is not None:
        return [_modelled(file, node, fields, context, seen, profiles, model,
                          Deviation((), adapter, versions, "", shape, reason, source, measured, chosen,
                                    area, None, None, scenario, "", False, model.name))]
    found: list[Deviation] = []
    for at, view in _views(file, node, fields):
        rule_ids, check, history, observed, field = _shown(file, at, view, fields, context, profiles, area)
        location = f"{file.name}:{at.start_mark.line + 1}"
        key = (rule_ids, adapter, versions.text, check, history, area, shape, observed, field, chosen)
        if key in seen:
            raise file.error(at, f"duplicate deviation {check} [{', '.join(rule_ids)}] for {adapter} "
                                 f"{versions.text} (first at {seen[key]})")
        seen[key] = location
        found.append(Deviation(rule_ids, adapter, versions, check, shape, reason, source, measured, chosen,
                               area, observed, field, scenario, location, history, unmodelled=unmodelled))
    return found


def _scope(file: _Loader, node: Node, fields: dict[str, Node], context: _Context
           ) -> tuple[str, VersionRange, Measured, str, frozenset[str] | None, list[str]]:
    """An entry's adapter, version range, measured releases, source, chosen profiles (None: the
    adapter's claimed one) and the profiles it applies to."""
    adapter = file.scalar(fields["adapter"], "adapter")
    if not _ADAPTER.match(adapter):
        raise file.error(fields["adapter"], f"malformed adapter name {adapter!r}")
    versions_text = file.scalar(fields["versions"], "versions")
    try:
        versions = VersionRange.parse(versions_text)
    except ValueError as exc:
        raise file.error(fields["versions"], str(exc)) from None
    measured = _measured(file, fields["measured"], versions)
    source = file.scalar(fields["source"], "source")
    if not _URL.match(source):
        raise file.error(fields["source"], f"source must be an http(s) link, not {source!r}")
    chosen: frozenset[str] | None = None
    if "profiles" in fields:
        names = file.names(fields["profiles"], "profiles")
        for item, name in names:
            if name not in context.profiles:
                raise file.error(item, f"unknown profile {name!r} (known: {', '.join(context.profiles)})")
        chosen = frozenset(name for _, name in names)
        return adapter, versions, measured, source, chosen, sorted(chosen)
    claimed = claimed_profile(adapter)
    if claimed is None:
        raise file.error(node, f"adapter {adapter!r} does not claim one profile by its class: name the "
                               "profiles the deviation is from (profiles: [...])")
    return adapter, versions, measured, source, chosen, [claimed]


def _views(file: _Loader, node: Node, fields: dict[str, Node]) -> list[tuple[Node, dict[str, Node]]]:
    """(where, keys) of each check an entry without a bug model shows through."""
    if "shows" not in fields:
        return [(node, fields)]
    shows = fields["shows"]
    if not isinstance(shows, SequenceNode) or not shows.value:
        raise file.error(shows, "shows must be a non-empty list of {check or history, rules, observed, "
                                "field}")
    return [(item, file.mapping(item, _SHOWN_AS, _ONE_CHECK, "shows item")) for item in shows.value]


def _check_rules(file: _Loader, rules: list[tuple[Node, str]], profiles: list[str],
                 context: _Context) -> None:
    """Each rule an entry names is in the catalogue and applies to every profile of the entry."""
    for item, rule in rules:
        if rule not in context.catalogue:
            raise file.error(item, f"unknown rule id {rule!r} (not in the spec catalogue)")
        outside = [p for p in profiles if not context.catalogue[rule].applies_to(p)]
        if outside:
            raise file.error(item, f"rule {rule} does not apply to {', '.join(outside)} (spec/: "
                                   f"{', '.join(sorted(context.catalogue[rule].profiles or ()))}), so "
                                   "no run of that profile can fail it")


def _shown(file: _Loader, at: Node, view: dict[str, Node], fields: dict[str, Node], context: _Context,
           profiles: list[str], area: str | None
           ) -> tuple[tuple[str, ...], str, bool, str | None, str | None]:
    """One check a bug shows through: (its rules, the check, whether it is a history check, the observed
    relation, the compared field), each checked against the catalogue and the checks' tables."""
    rules = file.names(view["rules"], "rules")
    _check_rules(file, rules, profiles, context)
    if ("check" in view) == ("history" in view):
        raise file.error(at, "name the check with check (a step check) or history (a history check "
                             "of the report): one of the two")
    history = "history" in view
    areas_of = context.checks
    areas: Mapping[str, frozenset[str]]
    if history:
        check, areas = _history_check(file, view)
    else:
        check = file.scalar(view["check"], "check")
        found_areas = areas_of.get(check)
        if found_areas is None:
            raise file.error(view["check"],
                             f"unknown check {check!r} (not in mqconform.conformance.judging.rules)")
        areas = found_areas
    if history and area is not None:
        known_areas = {name for by_area in areas_of.values() for name in by_area}
        if area not in known_areas:
            raise file.error(fields["area"], f"unknown area {area!r} "
                                             f"(known: {', '.join(sorted(known_areas))})")
    elif area is not None and area not in areas:
        raise file.error(fields["area"], f"check {check} is not made in area {area!r} "
                                         f"(it is in: {', '.join(sorted(areas))})")
    reported = areas[area] if area is not None and not history else frozenset().union(*areas.values())
    for item, rule in rules:
        if rule not in reported:
            where = f" in area {area}" if area else ""
            raise file.error(item, f"check {check} does not report {rule}{where}")
    observed = file.scalar(view["observed"], "observed") if "observed" in view else None
    if observed is not None and observed not in OBSERVED:
        raise file.error(view["observed"], f"unknown observed relation {observed!r} "
                                           f"(known: {', '.join(OBSERVED)})")
    field = file.scalar(view["field"], "field") if "field" in view else None
    return tuple(rule for _, rule in rules), check, history, observed, field


def _model(file: _Loader, fields: dict[str, Node]) -> Any:
    """The entry's bug model (reference_model.bugs.BugModel); the keys that name checks do not apply."""
    from mqconform.reference_model.bugs import BUGS

    name = file.scalar(fields["model"], "model")
    if name not in BUGS:
        raise file.error(fields["model"], f"unknown bug model {name!r} (known: {', '.join(BUGS)}; "
                                          "mqconform/reference_model/bugs/)")
    for key in ("shows", "check", "history", "observed", "field"):
        if key in fields:
            raise file.error(fields[key], f"{key} does not apply to an entry with a bug model (its replay "
                                          "decides, whatever check found the bug)")
    return BUGS[name]


def _modelled(file: _Loader, node: Node, fields: dict[str, Node], context: _Context,
              seen: dict[tuple[Any, ...], str], profiles: list[str], bug: Any, entry: Deviation) -> Deviation:
    """The deviation of an entry with a bug model: the rules are the bug model's unless the entry
    names them (each in the catalogue and applying to the entry's profiles); the area, when given, is
    a known one; one entry per bug model, adapter, range and profiles."""
    rules: list[tuple[Node, str]] = file.names(fields["rules"], "rules") if "rules" in fields else \
        [(node, rule) for rule in bug.rules]
    _check_rules(file, rules, profiles, context)
    if entry.area is not None:
        known_areas = {name for by_area in context.checks.values() for name in by_area}
        if entry.area not in known_areas:
            raise file.error(fields["area"], f"unknown area {entry.area!r} "
                                             f"(known: {', '.join(sorted(known_areas))})")
    location = f"{file.name}:{node.start_mark.line + 1}"
    key = ("model", bug.name, entry.adapter, entry.versions.text, entry.area, entry.profiles)
    if key in seen:
        raise file.error(node, f"duplicate deviation: bug model {bug.name} for {entry.adapter} "
                               f"{entry.versions.text} (first at {seen[key]})")
    seen[key] = location
    return attrs.evolve(entry, rules=tuple(rule for _, rule in rules), location=location)


def _history_check(file: _Loader, view: dict[str, Node]) -> tuple[str, Mapping[str, frozenset[str]]]:
    """A ``history:`` view: the report's history check and the rules it reports (any area); the
    compared-value keys do not apply (a history check compares no two values)."""
    from mqconform.reports.checks.definitions import CHECKS

    check = file.scalar(view["history"], "history")
    if check not in CHECKS:
        raise file.error(view["history"], f"unknown history check {check!r} (known: {', '.join(CHECKS)})")
    for key in ("observed", "field"):
        if key in view:
            raise file.error(view[key], f"{key} does not apply to a history check (it compares no values)")
    return check, {"": frozenset(CHECKS[check])}


def load_registry(paths: Iterable[Path] | None = None) -> Registry:
    """Load and check the registry files (default: the shipped ``deviations.yaml``)."""
    context = _Context.load()
    found: list[Deviation] = []
    seen: dict[tuple[Any, ...], str] = {}
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
        for item in entries.value:
            found.extend(_entry(file, item, context, seen))
    return Registry(tuple(found))
