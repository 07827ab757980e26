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


def assert_bug_model_gives_the_brokers_answer(bug: str, path: Path, profile_name: str, shape: str | None,
                                              before_shape: int, *differs: str) -> None:
    """The regression scenario `path` of `bug` passes on the plain model and fails on the model with
    the bug at the broker's difference (`differs`: parts of its verdict line, e.g. the step and what
    differs);
    the bug model explains its steps (holds_under on the bug model itself) and the plain model does
    not; the entry's `shape` (None: the entry has none to check here) holds on the claimed model's
    trace, and not on its first `before_shape` steps."""
    from mqconform.conformance.judging.bug_replay import holds_under
    from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
    from mqconform.scenario import load, run_scenario

    scenario = load(path)
    assert run_scenario(scenario, bug_model(None, profile_name), namespace="t").verdict == "pass"
    outcome = run_scenario(scenario, bug_model(bug, profile_name), namespace="t")
    line = outcome.verdict_line()
    assert outcome.verdict == "fail" and all(part in line for part in differs), line
    steps = scenario_steps(path)
    claimed = profile(profile_name)
    assert holds_under(steps, bug, claimed, lambda: bug_model(bug, profile_name))
    assert not holds_under(steps, bug, claimed, lambda: bug_model(None, profile_name))
    if shape is not None:
        trace = scenario_trace(steps, profile_name)
        assert trace is not None and SHAPES[shape](trace)
        assert not SHAPES[shape](trace[:before_shape])
