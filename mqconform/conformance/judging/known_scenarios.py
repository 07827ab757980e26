"""Which registered broker bug a failing scenario replays (``mqconform scenario`` consults the registry).

A scenario that fails on a broker is *explained* by an entry of the known-deviation registry when the
entry is about that adapter, its server version and the profile the scenario is checked against
(:meth:`Deviation.applies`), the model's replay of the scenario has the entry's shape, and:

- for an entry with a bug model (mqconform.reference_model.bugs), the scenario's steps replayed on the
  implementation (`adapter`, still answering) against the model with that bug pass at every step
  under every observation, whichever file it is; without the adapter, only the entry's own regression
  scenario can be explained;
- for an entry without one, the file is the entry's regression scenario.

Another entry of the same adapter whose shape the replay has is only *alike*: the run says so, and the
failure stays a failure (an unrelated bug in a scenario of a known shape is never excused).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .bug_replay import Replay, holds_under
from .deviation_shapes import scenario_trace
from .deviations import Deviation, Registry, together


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


def replay_on(implementation: Any, profile: str) -> Replay:
    """The bug models' replay (bug_replay.holds_under) on a live adapter, checked against `profile`."""
    from mqconform.adapters.contract import model_for
    from mqconform.reference_model.profiles import profile as load_profile

    claimed = model_for(load_profile(profile), frozenset(implementation.capabilities))

    def replay(steps: Sequence[Mapping[str, Any]], model: str | Sequence[str],
               options: Mapping[str, Any] | None = None) -> bool:
        return holds_under(steps, model, claimed, lambda: implementation, options)

    return replay


def known_bugs(registry: Registry, path: Path, steps: Sequence[Mapping[str, Any]], adapter: str, version: str,
               profile: str, claimed: str, implementation: Any = None,
               options: Mapping[str, Any] | None = None) -> ScenarioBugs:
    """The registry's answer for scenario `path` (its `steps` as ``{op: args}`` mappings) that failed on
    `adapter` at server `version`, checked against `profile` (the adapter claims `claimed`);
    `implementation`: the adapter itself, still answering, for the bug models' replay; `options`: the
    file's model options (a counterexample's: the registered bugs its area explored past), kept in
    each bug model's replay, as the run's own judge keeps them."""
    entries = [d for d in registry.deviations if d.applies(adapter, version, profile, claimed)]
    if not entries:
        return ScenarioBugs(None)
    trace = scenario_trace(steps, profile)
    shaped = [d for d in entries if d.has_shape(trace)]
    replay = replay_on(implementation, profile) if implementation is not None else None

    def explains(entry: Deviation) -> bool:
        if entry.model is not None and replay is not None:
            return replay(steps, entry.model, options)
        return is_regression_of(path, entry)

    own = next((d for d in shaped if explains(d)), None) or \
        together(entries, steps, None, trace, replay, options)
    alike: dict[str, Deviation] = {}
    mine = {own.source, own.together.source if own.together is not None else own.source} if own else set()
    for d in shaped:
        if d is not own and d.source not in mine:
            alike.setdefault(d.source, d)
    return ScenarioBugs(own, tuple(alike.values()))


def describe(entry: Deviation) -> str:
    """One line: the bug's upstream source, its release range and what was measured."""
    measured = [f"fails on {', '.join(entry.measured.fails)}" if entry.measured.fails else "",
                f"holds on {', '.join(entry.measured.holds)}" if entry.measured.holds else ""]
    facts = "; ".join(m for m in measured if m)
    return (f"{entry.source} (releases {entry.versions.text}{'; ' + facts if facts else ''}; "
            f"{entry.location})")
