"""YAML documents as node trees with line numbers (the spec's rule files, the deviation registry).

Parsed by libyaml when PyYAML has it (some 20-30 times faster than the pure-Python parser, and the
files are read in every process a run starts); a document it cannot parse is parsed again by the
pure-Python parser, whose error message and line are the ones reported.
"""

from __future__ import annotations

import contextlib

import yaml
from yaml.nodes import Node

_FAST = getattr(yaml, "CSafeLoader", None)


def compose(text: str) -> Node | None:
    """The document's root node (None for an empty one); yaml.YAMLError as the pure parser raises it."""
    if _FAST is not None:
        with contextlib.suppress(yaml.YAMLError):
            return yaml.compose(text, Loader=_FAST)
    return yaml.compose(text, Loader=yaml.SafeLoader)


def malformed(name: str, exc: yaml.YAMLError) -> str:
    """``<name>:<line>: malformed YAML: <problem>`` for a parse error of file `name`."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        return f"{name}:{line}: malformed YAML: {exc.problem or exc.context or 'cannot parse'}"
    return f"{name}:1: malformed YAML: {exc}"
