"""Finding an adapter by name: built-in, `module:Class`, or a `mqconform.adapters` entry point."""

from __future__ import annotations

import importlib
import os
import re
import sys
from importlib.metadata import entry_points
from typing import Any

from .contract import Adapter, contract_violation
from .rooms import rooms

#: built-in adapter name -> "module:Class": the model's own adapter, then each broker room's (rooms.py)
BUILTIN = {
    "reference": "mqconform.adapters.reference:ReferenceAdapter",
    **{room.name: room.adapter for room in rooms()},
}
ENTRY_POINT_GROUP = "mqconform.adapters"
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class AdapterLoadError(Exception):
    """An adapter could not be loaded or does not meet the contract (usage error, exit 2)."""


def _entry_point(name: str) -> str | None:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return str(ep.value)
    return None


def resolve(spec: str) -> str:
    """The `module:Class` target for an adapter name or target."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    if ":" in spec:
        if not _TARGET.match(spec):
            raise AdapterLoadError(f"malformed adapter {spec!r}: expected module:Class")
        return spec
    target = _entry_point(spec)
    if target is None:
        known = ", ".join(sorted(BUILTIN))
        raise AdapterLoadError(f"unknown adapter {spec!r} (built-in: {known}; or module:Class)")
    return target


def _import(module_name: str) -> Any:
    """Import an adapter module; like `python -m`, a module in the current directory is found too."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        top = module_name.partition(".")[0]
        if exc.name not in (module_name, top) or cwd in sys.path:
            raise
        sys.path.append(cwd)
        return importlib.import_module(module_name)


def load_class(spec: str) -> type[Any]:
    target = resolve(spec)
    module_name, _, class_name = target.partition(":")
    try:
        module = _import(module_name)
    except ModuleNotFoundError as exc:
        raise AdapterLoadError(f"adapter {spec!r}: cannot import {module_name} ({exc})") from None
    except Exception as exc:  # an adapter module that fails on import is a usage problem
        raise AdapterLoadError(f"adapter {spec!r}: importing {module_name} failed: {exc}") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise AdapterLoadError(f"adapter {spec!r}: {module_name} has no {class_name}")
    return cls  # type: ignore[no-any-return]


def load_adapter(spec: str, **options: Any) -> Adapter:
    """Instantiate adapter `spec` with keyword `options` and check it meets the contract."""
    cls = load_class(spec)
    try:
        adapter = cls(**options)
    except TypeError as exc:
        raise AdapterLoadError(f"adapter {spec!r}: bad options ({exc})") from None
    problem = contract_violation(adapter)
    if problem is not None:
        raise AdapterLoadError(f"adapter {spec!r} does not meet the contract: it {problem}")
    return adapter  # type: ignore[no-any-return]
