"""What the bug models' tests (test_bug_models*.py) share: a scenario file's steps without their
expectations, and the model of a profile with or without one registered bug."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import profile


def scenario_steps(path: Path) -> list[dict[str, Any]]:
    """The steps of scenario file `path` as written, each without its ``expect``."""
    return [{k: v for k, v in step.items() if k != "expect"}
            for step in yaml.safe_load(path.read_text())["steps"]]


def loaded_steps(path: Path) -> list[dict[str, Any]]:
    """The steps of scenario file `path` as the scenario loader reads them (``{op: args}``), without
    its expectations and comment-only steps."""
    from mqconform.scenario.loader import load

    return [{s.op: s.args} for s in load(path).steps if s.op is not None]


def bug_model(bug: str | None, profile_name: str) -> ReferenceAdapter:
    """The model of `profile_name`, with registered bug `bug` switched on (None: the plain model)."""
    options = profile(profile_name)
    return ReferenceAdapter(options=BUGS[bug].enable(options) if bug else options)
