"""Registered broker bugs as executable variants of the reference model.

Each module here is one upstream bug, named by its upstream key (``artemis_4985`` is ARTEMIS-4985):
a :class:`BugModel` that documents it (the rules it breaks, its source, the releases it was measured
on) and switches on the one named model option (:class:`~mqconform.reference_model.options.ModelOptions`)
that changes exactly what the bug changes, hooked at the one place in the model where the broker
differs. No profile sets such an option: the model with a bug is what a broker with that bug answers.

The known-deviation registry (mqconform/conformance/judging/deviations.yaml, ``model:``) names a bug model per
entry, and a finding is explained by the bug only when its counterexample, replayed on the
implementation with the bug model's expectations, holds at every step under every observation
(mqconform.conformance.judging.deviations).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Final

from .model import BugModel


def _load() -> dict[str, BugModel]:
    """Every module of this package but :mod:`.model` is one bug (its ``BUG``), found by name order:
    adding a bug adds a module here and nothing else."""
    found: dict[str, BugModel] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "model":
            continue
        bug = importlib.import_module(f"{__name__}.{info.name}").BUG
        if not isinstance(bug, BugModel):
            raise TypeError(f"{__name__}.{info.name}.BUG is not a BugModel")
        found[bug.name] = bug
    return found


#: bug model name -> the bug
BUGS: Final[Mapping[str, BugModel]] = _load()


def bug_model(name: str) -> BugModel:
    """The bug model `name`; KeyError naming the known ones."""
    try:
        return BUGS[name]
    except KeyError:
        raise KeyError(f"unknown bug model {name!r} (known: {', '.join(BUGS)})") from None
