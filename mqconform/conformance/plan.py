"""The run plan: every choice that decides what a run explores, validated once, then carried out.

`mqconform run`, `mqconform matrix`, the pytest plugin and :func:`mqconform.testing.check_adapter`
only parse their own options into :meth:`RunPlan.build` (one set of checks, one error text for bad
input) and print; the plan is frozen and picklable, so the same object goes to a worker process
(``-n N``) or a Spark task and each area is explored by :meth:`RunPlan.explore` everywhere.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from hypothesis import settings

from mqconform.adapters.contract import Adapter
from mqconform.history import RunDirectory
from mqconform.progress import AreaProgress
from mqconform.reference_model.bugs.model import BugModel
from mqconform.reference_model.options import ModelOptions

from .exploring import settings as suite_settings
from .exploring.runner import MAX_RERUNS, Finding, MachineResult, run_machine
from .exploring.shards import WHOLE, Part


class PlanError(ValueError):
    """Bad run options (an unknown area or settings profile, a count below one): one line."""


def _areas(value: str | Iterable[str] | None) -> tuple[str, ...]:
    from .exploring.registry import MACHINES

    if value is None:
        return tuple(MACHINES)
    names = [a.strip() for a in value.split(",")] if isinstance(value, str) else [str(a) for a in value]
    chosen = tuple(a for a in names if a)
    if not chosen:
        return tuple(MACHINES)
    unknown = [a for a in chosen if a not in MACHINES]
    if unknown:
        raise PlanError(f"unknown area {unknown[0]!r} (known: {', '.join(MACHINES)})")
    return chosen


@attrs.frozen
class RunPlan:
    """What to explore: which adapter (by name and options, so any process can build it), against
    which profile (None: the one the adapter claims), which areas, with which Hypothesis settings
    profile, examples, seed and bounds."""

    adapter: str
    adapter_options: Mapping[str, Any]
    profile: str | None
    settings_name: str
    areas: tuple[str, ...]
    max_examples: int | None = None
    max_reruns: int = MAX_RERUNS
    seed: int | None = None
    shrink_seconds: float | None = None
    #: explorations of each area at once, in worker processes (mqconform.conformance.exploring.shards)
    shards: int = 1
    #: the known-deviation registry (judging.deviations.Registry) a version campaign's task judges a
    #: violation by as it is found: one a registered bug explains on that release is not shrunk by
    #: Hypothesis (campaign.run_task). None: every failure is shrunk (`mqconform run` asks its judge)
    deviations: Any = None

    @classmethod
    def build(cls, adapter: str, adapter_options: Mapping[str, Any] | None = None, *,
              profile: str | None = None, settings_name: str | None = None,
              areas: str | Iterable[str] | None = None, max_examples: int | None = None,
              max_findings: int | None = None, seed: int | None = None, draw_seed: bool = True,
              shrink_seconds: float | None = None, shards: int = 1) -> RunPlan:
        """Validate the options (PlanError, one line) and fix the seed: the given one, else one
        drawn here (so any run can be replayed) unless `draw_seed` is false or the settings are
        derandomized (their examples are already fixed by the settings and the code)."""
        name = settings_name or suite_settings.default_profile()
        if name not in suite_settings.PROFILES:
            known = ", ".join(suite_settings.PROFILES)
            raise PlanError(f"unknown settings profile {name!r} (known: {known})")
        if max_findings is not None and max_findings < 1:
            raise PlanError("--max-findings must be at least 1")
        if max_examples is not None and max_examples < 1:
            raise PlanError("--max-examples must be at least 1")
        if shards < 1:
            raise PlanError("--shards must be at least 1")
        derandomized = bool(suite_settings.PROFILES[name].get("derandomize"))
        if seed is None and draw_seed and not derandomized:
            seed = random.getrandbits(32)
        return cls(adapter, dict(adapter_options or {}), profile, name, _areas(areas), max_examples or None,
                   (max_findings - 1) if max_findings is not None else MAX_RERUNS, seed, shrink_seconds,
                   shards)

    def open_adapter(self, **extra: Any) -> Any:
        """The plan's adapter, built by name with its options (`extra`: more, such as a release's
        ``server_bin``): every process of a run builds its adapter here."""
        from mqconform.adapters.registry import load_adapter

        return load_adapter(self.adapter, **self.adapter_options, **extra)

    def claimed(self, adapter: Any) -> ModelOptions:
        """The profile the run checks against: the plan's, else the one `adapter` claims."""
        from mqconform.reference_model.profiles import profile as load_profile

        return load_profile(self.profile or str(getattr(adapter, "profile", "")))

    @property
    def max_findings(self) -> int:
        return self.max_reruns + 1

    def hypothesis(self, **extra: Any) -> settings:
        """The Hypothesis settings of every area (the profile, the example budget, `extra` such as
        the run directory's example database)."""
        overrides = dict(extra)
        if self.max_examples:
            overrides["max_examples"] = self.max_examples
        return suite_settings.get(self.settings_name, **overrides)

    def explore(self, area: str, adapter_factory: Callable[[], Adapter], claimed: ModelOptions,
                run: RunDirectory | None, *, database: Any = None,
                progress: AreaProgress | None = None,
                explain: Callable[[Finding], BugModel | None] | None = None,
                part: Part = WHOLE, known: Callable[[Finding], bool] | None = None) -> MachineResult:
        """Explore one area (see :func:`mqconform.conformance.exploring.runner.run_machine`; `explain`: a
        known bug's model to explore on against; `part`: one of the area's explorations at once;
        `known`: does a registered deviation explain a finding, not to be shrunk by Hypothesis then).
        A real-clock adapter runs its share of the examples unless the user set them
        (`max_examples`)."""
        from .exploring.registry import MACHINES

        hyp = self.hypothesis(database=database)
        return run_machine(MACHINES[area], adapter_factory, claimed, hyp, run, max_reruns=self.max_reruns,
                           seed_value=self.seed, cap_real_time=self.max_examples is None,
                           shrink_seconds=self.shrink_seconds, progress=progress, explain=explain,
                           part=part, known=known)
