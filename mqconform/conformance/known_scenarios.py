"""Which registered broker bug a failing scenario replays (``mqconform scenario`` consults the registry).

A scenario that fails on a broker is *explained* by an entry of the known-deviation registry when the
entry is about that adapter, its server version and the profile the scenario is checked against
(:meth:`Deviation.applies`), names this file as its regression scenario, and the model's replay of the
scenario has the entry's shape. Another entry of the same adapter whose shape the replay has is only
*alike*: the run says so, and the failure stays a failure (an unrelated bug in a scenario of a known
shape is never excused).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .deviations import Deviation, Registry, scenario_trace


@attrs.frozen
class ScenarioBugs:
    """The entry that explains a scenario's failure (None: none does) and the entries it only looks like."""

    explained_by: Deviation | None
    alike: tuple[Deviation, ...] = ()


def is_regression_of(path: Path, entry: Deviation) -> bool:
    """Is `path` the entry's regression scenario (a path from the repository root, compared as a
    suffix so that it holds from any working directory)?"""
    if not entry.scenario:
        return False
    return ("/" + path.resolve().as_posix()).endswith("/" + Path(entry.scenario).as_posix())


def known_bugs(registry: Registry, path: Path, steps: Sequence[Mapping[str, Any]], adapter: str, version: str,
               profile: str, claimed: str) -> ScenarioBugs:
    """The registry's answer for scenario `path` (its `steps` as ``{op: args}`` mappings) that failed on
    `adapter` at server `version`, checked against `profile` (the adapter claims `claimed`)."""
    entries = [d for d in registry.deviations if d.applies(adapter, version, profile, claimed)]
    if not entries:
        return ScenarioBugs(None)
    trace = scenario_trace(steps, profile)
    shaped = [d for d in entries if d.has_shape(trace)]
    own = next((d for d in shaped if is_regression_of(path, d)), None)
    alike: dict[str, Deviation] = {}
    for d in shaped:
        if d is not own and (own is None or d.source != own.source):
            alike.setdefault(d.source, d)
    return ScenarioBugs(own, tuple(alike.values()))


def describe(entry: Deviation) -> str:
    """One line: the bug's upstream source, its release range and what was measured."""
    measured = [f"fails on {', '.join(entry.measured.fails)}" if entry.measured.fails else "",
                f"holds on {', '.join(entry.measured.holds)}" if entry.measured.holds else ""]
    facts = "; ".join(m for m in measured if m)
    return (f"{entry.source} (releases {entry.versions.text}{'; ' + facts if facts else ''}; "
            f"{entry.location})")
