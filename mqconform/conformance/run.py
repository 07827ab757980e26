"""The run protocol: one :class:`Run` of a plan opens the adapter, the claimed profile, the judge and
the run directory once, yields each area's outcome as an event and finishes with the verdict.

`mqconform run`, `mqconform matrix` (one run per release, its areas' outcomes coming from the
campaign's tasks), the pytest plugin and :func:`mqconform.testing.check_adapter` parse their own
options into a plan, open a run and listen: they print (or report) the events and the verdict.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs

from mqconform.history import RunDirectory
from mqconform.reference_model.options import ModelOptions

from .execution import AreaJob, Watch, _unwatched, record_outcomes, run_area_job, run_areas, shutdown
from .exploring.counterexamples import write_counterexample
from .exploring.runner import MachineResult
from .judging.deviations import Registry
from .judging.verdict import Judge, Verdict
from .plan import RunPlan


@attrs.frozen
class AreaOutcome:
    """An event of a run: one area done, its result (counterexamples already written), the fault
    that stopped it (the implementation stopped answering) and its seconds as the run saw them."""

    area: str
    result: MachineResult
    fault: str | None
    seconds: float


class Run:
    """One run of `plan` against the adapter `adapter_factory` builds (default: the plan's, by name).

    :meth:`open` builds and probes the adapter, loads the claimed profile, the judge (with
    `registry`; none: findings are not judged against known bugs) and, with `out`, the run
    directory. :meth:`areas` explores the plan's areas (in `workers` processes when more than one)
    and yields an :class:`AreaOutcome` per area; :meth:`finish` records the outcomes through the one
    verdict and returns (exit code, outcome counts). A run is a context manager: leaving it shuts
    the adapters it built down."""

    def __init__(self, plan: RunPlan, adapter_factory: Callable[[], Any] | None = None, *,
                 registry: Registry | None = None, strict: bool = False, workers: int = 1,
                 out: Path | None = None, run_id: str | None = None, probe: bool = True,
                 settings: Mapping[str, Any] | None = None, watch: Watch = _unwatched,
                 say: Callable[[str], None] = print) -> None:
        self.plan = plan
        self.factory: Callable[[], Any] = adapter_factory or plan.open_adapter
        self.registry = registry
        self.strict = strict
        self.workers = workers
        self.out = out
        self.run_id = run_id
        self.probe = probe
        #: the run directory's settings (default: the plan's, as `mqconform run` records them)
        self.settings = settings
        self.watch = watch
        self.say = say
        self.adapter: Any = None
        self.claimed: ModelOptions | None = None
        self.server_version = ""
        self.judge: Judge | None = None
        self.run_dir: RunDirectory | None = None
        self.results: list[MachineResult] = []
        self.faults: list[str] = []
        #: the fault that stopped the run (the implementation stopped answering), if any
        self.aborted: str | None = None
        self._replayers: list[Any] = []
        self.name = ""
        self.adapter_profile = ""
        self._owned = False

    def open(self) -> Run:
        """Build the adapter, load the claimed profile, check that the run directory can be written
        (ValueError), probe the implementation (AdapterError when it cannot be reached), then take
        the judge and the run directory (:meth:`attach`)."""
        self.adapter, self._owned = self.factory(), True
        claimed = self.plan.claimed(self.adapter)
        if self.out is not None:
            _writable(self.out)
        if self.probe:
            self.adapter.open("mqc-probe")
            self.adapter.close()
        self.attach(self.adapter, claimed, str(getattr(self.adapter, "server_version", "") or ""),
                    live=True)
        return self

    def attach(self, adapter: Any, claimed: ModelOptions, server_version: str, *, live: bool = False) -> None:
        """Take the judge and the run directory for `adapter` (its name and profile) checked
        against `claimed`: a run whose areas ran elsewhere (a campaign's tasks) attaches to the
        campaign's probe and :meth:`record` s what the tasks sent back. `live`: `adapter` answers
        (a bug model's replay runs on it while the areas run here, in one process)."""
        self.adapter = adapter
        self.take(str(getattr(adapter, "name", "")), str(getattr(adapter, "profile", "")), claimed,
                  server_version, live=adapter if live else None)

    def take(self, name: str, adapter_profile: str, claimed: ModelOptions, server_version: str, *,
             live: Any = None) -> None:
        """The judge and the run directory of an implementation known by its adapter's `name` and
        the profile it claims (`adapter_profile`), before any adapter is built (the pytest plugin's
        areas each build their own: :meth:`job`)."""
        self.name, self.adapter_profile = name, adapter_profile
        self.claimed, self.server_version = claimed, server_version
        if self.registry is not None:
            from mqconform.commands._common import Replayer

            # a bug model's replay runs on the probe while it answers (one worker); with workers the
            # probe is stopped, and the replays run on one adapter built for them when first needed
            self._replayers.append(Replayer(live if self.workers == 1 else None, self.factory))
            self.judge = Judge(self.registry, name, server_version, claimed.name, adapter_profile,
                               strict=self.strict, adapter_factory=self._replayers[-1])
        if self.out is not None:
            hyp = self.plan.hypothesis()
            settings = self.settings if self.settings is not None else {
                "settings": self.plan.settings_name, "areas": list(self.plan.areas),
                "max_examples": hyp.max_examples, "stateful_step_count": hyp.stateful_step_count,
                "adapter_options": sorted(self.plan.adapter_options), "seed": self.plan.seed,
                "workers": self.workers, **({"shards": self.plan.shards} if self.plan.shards > 1 else {})}
            self.run_dir = RunDirectory(self.out, name, claimed.name, dict(settings), run_id=self.run_id)
            self.run_dir.meta["seed"] = self.plan.seed

    def job(self, area: str) -> AreaOutcome:
        """Explore `area` as a worker process does (execution.run_area_job), here: on an adapter of
        its own, built, explored and shut down; a finding a registered bug model explains is judged
        on it as it is found."""
        assert self.run_dir is not None
        judge = None if self.judge is None else attrs.evolve(self.judge, adapter_factory=None)
        result, fault = run_area_job(AreaJob(self.plan, area, str(self.run_dir.path), self.run_dir.run_id,
                                             self.run_dir.start_ns, judge=judge))
        return self.record(area, result, fault)

    def verdict(self, areas: list[str]) -> Verdict:
        """The one verdict of the areas recorded, judged for the implementation their adapters
        reported (name, server version); a bug model's replay runs on an adapter built for it."""
        from mqconform.commands._common import Replayer

        from .judging.verdict import judge as take_verdict

        assert self.registry is not None and self.claimed is not None
        name = next((r.adapter_name for r in self.results if r.adapter_name), self.name)
        version = next((r.server_version for r in self.results if r.server_version), self.server_version)
        self._replayers.append(Replayer(None, self.factory))
        judge = Judge(self.registry, name, version, self.claimed.name, self.adapter_profile,
                      strict=self.strict, adapter_factory=self._replayers[-1])
        return take_verdict(self.results, self.claimed.name, judge, areas)

    def areas(self) -> Iterator[AreaOutcome]:
        """Explore the plan's areas; one event per area, in order; stops after a fault."""
        assert self.claimed is not None, "open() the run first"
        started = time.perf_counter()
        for area, result, fault in run_areas(self.plan, self.adapter, self.claimed, self.run_dir,
                                             self.workers, self.watch, self.judge):
            seconds = result.seconds if self.workers > 1 else time.perf_counter() - started
            yield self.record(area, result, fault, seconds)
            started = time.perf_counter()
            if fault is not None:
                self.aborted = fault
                return

    def record(self, area: str, result: MachineResult, fault: str | None = None,
               seconds: float | None = None) -> AreaOutcome:
        """Take one area's result into the run: its counterexamples are written into the run
        directory (named as the plan's adapter and options replay them)."""
        assert self.claimed is not None
        self.results.append(result)
        if fault is not None:
            self.faults.append(fault)
        if self.run_dir is not None:
            for index, finding in enumerate(result.findings, start=1):
                write_counterexample(self.run_dir, finding, self.plan.adapter,
                                     dict(self.plan.adapter_options), self.claimed.name, index)
        return AreaOutcome(area, result, fault, result.seconds if seconds is None else seconds)

    def finish(self, *, set_aside: Mapping[str, str] | None = None,
               **extra: Any) -> tuple[int, dict[str, int]]:
        """Record the outcomes through the one verdict, say the known bugs and the `rules:` line and
        finish the run directory (run.json with the exit code and `extra`)."""
        from .judging.verdict import absent_areas

        assert self.run_dir is not None and self.judge is not None and self.claimed is not None
        return record_outcomes(self.run_dir, self.results, list(self.plan.areas), self.claimed.name,
                               self.judge, server_version=self.server_version, aborted=self.aborted,
                               say=self.say,
                               set_aside=absent_areas(self.adapter) if set_aside is None else set_aside,
                               **extra)

    def close(self) -> None:
        """Shut down the adapters this run built (its probe, a replay's adapter)."""
        if self._owned:
            shutdown(self.adapter)
        for replayer in self._replayers:
            replayer.shutdown()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _writable(path: Path) -> None:
    """Create the run directory and check it can be written (ValueError, one line)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"cannot write the run directory {path}: {exc.strerror or exc}") from None
