"""Load and check a scenario file (YAML or JSON); every error names the file and line.

A scenario is ``{profile?, options?, clock_lead_limit_ms?, steps: [...]}``. Each step is a mapping
with one operation key (see :data:`.schema.OPS`) and an optional ``expect``, or an ``expect`` alone.
Names in ``expect`` entries are resolved here: a ``queue``/``throttle``/``store`` entry (or
``delivery_count``) may omit the name when exactly one such thing has been declared before that
step. Line numbers come from the YAML nodes (``yaml.compose``), as in spec/catalogue.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from mqconform.reference_model.errors import ModelMisuse
from mqconform.reference_model.options import ModelOptions
from mqconform.reference_model.profiles import PROFILES
from mqconform.reference_model.profiles import profile as load_profile

from .schema import EXPECT_ENTRIES, EXPECT_KEYS, NAME_FIELD, OPS, REFERENCES, Field, Kind

TOP_KEYS = ("profile", "options", "clock_lead_limit_ms", "steps")


class ScenarioError(ValueError):
    """An invalid scenario; the message is ``<file>:<line>: <problem>``."""


@attrs.frozen
class ScenarioStep:
    """One checked step: its number (1-based), line, operation (None for a lone expect), expect."""

    number: int
    line: int
    op: str | None
    args: Any
    expect: Mapping[str, Any]


@attrs.frozen
class Scenario:
    name: str
    profile: str | None
    options: Mapping[str, Any]
    steps: tuple[ScenarioStep, ...]
    #: queue name -> its address name
    addresses: Mapping[str, str]
    #: a timed scenario's margin (ms): a mismatch on a real-clock implementation whose clock ran
    #: further ahead of the scenario's logical time is not judged (verdict ``unknown``)
    clock_lead_limit_ms: float | None = None

    def model_options(self, override_profile: str | None = None) -> ModelOptions:
        """The profile (``--profile`` wins over the file's) with the file's ``options`` applied."""
        base = load_profile(override_profile or self.profile or "artemis")
        return base.evolve(**self.options) if self.options else base


class _Checker:
    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.loader = yaml.SafeLoader(text)
        kinds = ("address", "queue", "consumer", "throttle", "admission", "store")
        self.declared: dict[str, list[str]] = {k: [] for k in kinds}
        self.addresses: dict[str, str] = {}

    # ------------------------------------------------------------------ helpers
    def error(self, node: Node | None, problem: str) -> ScenarioError:
        line = node.start_mark.line + 1 if node is not None else 1
        return ScenarioError(f"{self.name}:{line}: {problem}")

    def value(self, node: Node) -> Any:
        return self.loader.construct_object(node, deep=True)

    def pairs(self, node: Node, what: str) -> list[tuple[str, Node, Node]]:
        if not isinstance(node, MappingNode):
            raise self.error(node, f"{what} must be a mapping")
        seen: set[str] = set()
        out = []
        for key_node, value_node in node.value:
            key = self.value(key_node)
            if not isinstance(key, str):
                raise self.error(key_node, f"{what}: key {key!r} must be a string")
            if key in seen:
                raise self.error(key_node, f"duplicate key {key!r} in {what}")
            seen.add(key)
            out.append((key, key_node, value_node))
        return out

    def typed(self, node: Node, kind: Kind, what: str) -> Any:
        value = self.value(node)
        if isinstance(kind, tuple):
            if value not in kind:
                allowed = ", ".join("null" if k is None else str(k) for k in kind)
                raise self.error(node, f"{what} must be one of {allowed}, not {value!r}")
            return value
        nullable = kind.endswith("?")
        base = kind.rstrip("?")
        if value is None:
            if nullable or base == "any":
                return None
            raise self.error(node, f"{what} must not be null")
        ok = {
            "str": isinstance(value, str),
            "id": isinstance(value, str | int) and not isinstance(value, bool),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "num": isinstance(value, int | float) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
            "map": isinstance(value, dict),
            "list": isinstance(value, list),
            "any": True,
        }[base]
        if not ok:
            noun = {"id": "a string or an integer", "int": "an integer", "num": "a number",
                    "bool": "true or false", "map": "a mapping", "list": "a list", "str": "a string"}[base]
            raise self.error(node, f"{what} must be {noun}, not {value!r}")
        return str(value) if base == "id" else value

    def fields(self, node: Node, fields: Mapping[str, Field], what: str) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for key, key_node, value_node in self.pairs(node, what):
            if key not in fields:
                raise self.error(key_node, f"unknown key {key!r} in {what} (allowed: {', '.join(fields)})")
            args[key] = self.typed(value_node, fields[key].kind, f"{what} {key}")
        missing = [k for k, f in fields.items() if f.required and k not in args]
        if missing:
            raise self.error(node, f"missing key {missing[0]!r} in {what}")
        return args

    def refer(self, node: Node, kind: str, name: Any) -> None:
        names = self.declared[kind]
        if kind == "address" and name in self.declared["queue"]:
            return  # sending to a queue's implicit address of the same name
        if name not in names:
            known = ", ".join(names) or "none"
            raise self.error(node, f"unknown {kind} {name!r} (declared so far: {known})")

    # ------------------------------------------------------------------ steps
    def operation(self, op: str, node: Node) -> Any:
        spec = OPS[op]
        if spec.scalar is not None:
            if not isinstance(node, ScalarNode):
                raise self.error(node, f"{op} takes a single value, not a {type(self.value(node)).__name__}")
            args: Any = self.typed(node, spec.scalar, op)
            if op == "advance" and args < 0:
                raise self.error(node, "advance: time only moves forward (ms >= 0)")
        else:
            args = self.fields(node, spec.fields, op)
        for field, kind in REFERENCES.get(op, ()):
            name = args if not field else args.get(field)
            if name is not None:
                self.refer(node, kind, name)
        if op in ("close", "close_session"):
            self.declared["consumer"].remove(args)  # a closed consumer's name may be opened again
        if spec.declares is not None:
            name_field = spec.fields["name"]
            if "name" not in args and name_field.default is not None:
                args["name"] = name_field.default
            name = args["name"]
            if name in self.declared[spec.declares]:
                raise self.error(node, f"{spec.declares} {name!r} is declared twice")
            self.declared[spec.declares].append(name)
            if op in ("queue", "join"):
                address = args.get("address") or name
                self.addresses[name] = address
                if address not in self.declared["address"]:
                    self.declared["address"].append(address)
            if op == "admission":
                self.check_admission_queues(node, args.get("queues"))
        return args

    def check_admission_queues(self, node: Node, queues: Any) -> None:
        if queues is None:
            return
        for name, limit in queues.items():
            if not isinstance(limit, dict) or not set(limit) <= {"wait_ms", "capacity"}:
                raise self.error(node, f"admission queues {name!r} must be a mapping with wait_ms, capacity")
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in limit.values()):
                raise self.error(node, f"admission queues {name!r}: wait_ms and capacity must be integers")

    def expect(self, node: Node, has_op: bool) -> dict[str, Any]:
        expect: dict[str, Any] = {}
        for key, key_node, value_node in self.pairs(node, "expect"):
            if key not in EXPECT_KEYS:
                raise self.error(key_node, f"unknown expect key {key!r} (allowed: {', '.join(EXPECT_KEYS)})")
            if key == "result":
                if not has_op:
                    raise self.error(key_node, "expect result needs an operation in the same step")
                expect[key] = _normal(self.value(value_node))
                continue
            items = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            if not items:
                raise self.error(value_node, f"empty expect {key}")
            expect[key] = [self.entry(key, item) for item in items]
        return expect

    def entry(self, key: str, node: Node) -> dict[str, Any]:
        fields, kind = EXPECT_ENTRIES[key]
        entry = self.fields(node, fields, f"expect {key}")
        if "pending" in entry:
            entry["pending"] = [str(i) for i in entry["pending"]]
        if kind is not None:
            name_field = NAME_FIELD[key]
            names = self.declared[kind]
            if name_field not in entry:
                if len(names) != 1:
                    raise self.error(node, f"expect {key}: name the {kind} with {name_field!r} "
                                           f"({len(names)} declared so far)")
                entry[name_field] = names[0]
            else:
                self.refer(node, kind, entry[name_field])
        if key == "request" and "admission" in entry:
            self.refer(node, "admission", entry["admission"])
        checked = set(entry) - {"name", "queue", "id", "admission"}
        if not checked and key != "delivery_count":
            raise self.error(node, f"expect {key} checks nothing (give at least one value)")
        return entry

    def step(self, number: int, node: Node) -> ScenarioStep:
        pairs = self.pairs(node, f"step {number}")
        ops = [(k, kn, vn) for k, kn, vn in pairs if k != "expect"]
        expect_node = next((vn for k, _, vn in pairs if k == "expect"), None)
        if len(ops) > 1:
            raise self.error(ops[1][1], f"step {number} has more than one operation "
                                         f"({ops[0][0]}, {ops[1][0]})")
        op = args = None
        if ops:
            op, key_node, value_node = ops[0]
            if op not in OPS:
                raise self.error(key_node, f"unknown operation {op!r} (known: {', '.join(OPS)})")
            args = self.operation(op, value_node)
        elif expect_node is None:
            raise self.error(node, f"step {number} is empty")
        expect = self.expect(expect_node, op is not None) if expect_node is not None else {}
        return ScenarioStep(number, node.start_mark.line + 1, op, args, expect)

    def scenario(self) -> Scenario:
        try:
            root = self.loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise ScenarioError(f"{self.name}:{mark.line + 1 if mark else 1}: malformed YAML: "
                                f"{exc.problem or exc.context or 'cannot parse'}") from None
        except yaml.YAMLError as exc:
            raise ScenarioError(f"{self.name}:1: malformed YAML: {exc}") from None
        if root is None:
            raise ScenarioError(f"{self.name}:1: empty file (expected a mapping with steps)")
        top = {k: (kn, vn) for k, kn, vn in self.pairs(root, "scenario")}
        for key, (key_node, _) in top.items():
            if key not in TOP_KEYS:
                raise self.error(key_node, f"unknown key {key!r} in scenario "
                                           f"(allowed: {', '.join(TOP_KEYS)})")
        if "steps" not in top:
            raise self.error(root, "missing key 'steps' in scenario")
        profile = None
        if "profile" in top:
            node = top["profile"][1]
            profile = self.value(node)
            if profile not in PROFILES:
                raise self.error(node, f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
        options = self.options(top["options"][1]) if "options" in top else {}
        limit = self.clock_lead_limit(top["clock_lead_limit_ms"][1]) if "clock_lead_limit_ms" in top else None
        steps_node = top["steps"][1]
        if not isinstance(steps_node, SequenceNode) or not steps_node.value:
            raise self.error(steps_node, "steps must be a non-empty list")
        steps = tuple(self.step(n, item) for n, item in enumerate(steps_node.value, start=1))
        return Scenario(self.name, profile, options, steps, dict(self.addresses), limit)

    def clock_lead_limit(self, node: Node) -> float:
        value = self.value(node)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise self.error(node, f"clock_lead_limit_ms must be a positive number of milliseconds, "
                                   f"not {value!r}")
        return float(value)

    def options(self, node: Node) -> dict[str, Any]:
        known = attrs.fields_dict(ModelOptions)
        options: dict[str, Any] = {}
        for key, key_node, value_node in self.pairs(node, "options"):
            if key not in known or key == "name":
                raise self.error(key_node, f"unknown model option {key!r} (see reference_model/options.py)")
            value = self.value(value_node)
            options[key] = frozenset(value) if key == "features" and isinstance(value, list) else value
        try:
            ModelOptions().evolve(**options)
        except (TypeError, ValueError, ModelMisuse) as exc:
            raise self.error(node, f"bad options: {exc}") from None
        return options


def _normal(value: Any) -> Any:
    """Scalars as written, ints standing for ids kept; tuples become lists for comparison."""
    if isinstance(value, tuple | list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return value


def _json_precheck(name: str, text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{name}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    return text.replace("\t", " ")  # YAML refuses tabs; JSON allows them as whitespace


def parse(text: str, name: str, json_text: bool = False) -> Scenario:
    """Check scenario `text` (called `name` in messages) and return it."""
    if json_text:
        text = _json_precheck(name, text)
    checker = _Checker(name, text)
    try:
        return checker.scenario()
    finally:
        checker.loader.dispose()


def load(path: str | Path) -> Scenario:
    """Read and check the scenario file at `path`; ScenarioError (file:line: problem) otherwise."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{p}:1: cannot read the file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{p}:1: not a UTF-8 text file") from None
    return parse(text, str(p), json_text=p.suffix.lower() == ".json")


def from_data(data: Mapping[str, Any], name: str) -> Scenario:
    """Check an in-memory scenario (e.g. counterexample steps) through the same validation."""
    return parse(yaml.safe_dump(_plain(data), sort_keys=False), name)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        return [_plain(v) for v in value]
    return value
