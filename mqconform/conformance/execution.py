"""Carrying out a run plan: areas one after the other or in worker processes, outcomes and the
text a run prints. The run protocol (mqconform.conformance.run.Run) puts these pieces together for
every front end; a worker process runs an area as :func:`run_area_job`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import attrs

from mqconform.history import RunDirectory
from mqconform.progress import AreaProgress

from .exploring.runner import Finding, MachineResult, area_examples, database, fault_reason
from .exploring.shards import WHOLE, Part, parts_for
from .judging.deviations import Deviation
from .judging.verdict import Judge, Verdict
from .plan import RunPlan

#: how a caller watches a block of work: given a `describe()` for its status, a context manager
#: around the work (the commands pass mqconform.progress.Heartbeat; the default shows nothing)
Watch = Callable[[Callable[[], str]], AbstractContextManager[Any]]


def _unwatched(describe: Callable[[], str]) -> AbstractContextManager[Any]:
    return contextlib.nullcontext()


@attrs.frozen
class AreaJob:
    """One area of a plan to run in a process of its own (`mqconform run -n N`, the pytest plugin):
    everything is by name, so the process builds its own adapter, profile and settings."""

    plan: RunPlan
    area: str
    run_path: str | None = None
    run_id: str | None = None
    start_ns: int = 0
    #: the run's judge without its implementation: the process judges the findings a registered bug
    #: model explains on its own adapter and explores on against that model (run_areas)
    judge: Judge | None = None
    #: which of the area's explorations at once this is (mqconform.conformance.exploring.shards)
    part: Part = WHOLE


#: seconds a worker whose run process died lets its area unwind (KeyboardInterrupt) before it stops
#: its adapter itself and exits
PARENT_GONE_GRACE_S = 10.0
#: the adapter the worker process explores on now (its parent-watch stops it when the run died)
_RUNNING: dict[str, Any] = {}


def exit_with_parent(parent: int) -> None:
    """A worker process's initializer: when the run process that started it dies (killed, so it
    could not shut its pool down), the worker interrupts its area, whose adapter then stops its
    embedded server as an area does at its end; after PARENT_GONE_GRACE_S it stops the adapter itself
    and exits. Without it a killed run left its workers exploring and their brokers running."""
    import _thread
    import os
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        _thread.interrupt_main()
        time.sleep(PARENT_GONE_GRACE_S)
        shutdown(_RUNNING.get("adapter"))
        os._exit(1)

    threading.Thread(target=watch, name="mqconform-parent-watch", daemon=True).start()


def run_area_job(job: AreaJob) -> tuple[MachineResult, str | None]:
    """Load the adapter, run `job.area` on it (histories into the run directory another process
    created), shut the adapter down. Returns the result and, when an exception stopped the area (a
    fault), its one-line reason."""
    plan = job.plan
    adapter: Any = None
    try:
        adapter = _RUNNING["adapter"] = plan.open_adapter()
        claimed = plan.claimed(adapter)
        run = None
        db = None
        if job.run_path is not None:
            run = RunDirectory.attach(Path(job.run_path), adapter.name, claimed.name, job.run_id or "",
                                      job.start_ns)
            db = database(Path(job.run_path), job.part)
        # the registry matches the adapter's name and version as this process's adapter reports them
        judge = None if job.judge is None else attrs.evolve(
            job.judge, adapter_factory=lambda: adapter,
            adapter=str(getattr(adapter, "name", "") or job.judge.adapter),
            server_version=str(getattr(adapter, "server_version", "") or job.judge.server_version))
        result = plan.explore(job.area, lambda: adapter, claimed, run, database=db,
                              explain=None if judge is None else judge.bug_model, part=job.part)
        result.adapter_name = str(getattr(adapter, "name", "") or plan.adapter)
        result.server_version = str(getattr(adapter, "server_version", "") or "")
        result.latency = round_trips(adapter)
        return result, None
    except (Exception, BaseExceptionGroup) as exc:  # a fault: never a traceback, never a pass
        reason = f"area {job.area}: {fault_reason(exc)}"
        return MachineResult(job.area, unknown=reason), reason
    finally:
        _RUNNING.pop("adapter", None)
        shutdown(adapter)


def round_trips(adapter: Any) -> dict[str, Any] | None:
    """The adapter's measured round trips (a broker adapter's ``latency``), or None."""
    meter = getattr(adapter, "latency", None)
    summary = getattr(meter, "summary", None)
    return summary() if callable(summary) else None


def shutdown(adapter: Any) -> None:
    """Stop what the adapter started (its embedded server), best effort."""
    with contextlib.suppress(Exception):
        stop = getattr(adapter, "shutdown", None)
        if callable(stop):
            stop()


def run_areas(plan: RunPlan, adapter: Any, claimed: Any, run_dir: RunDirectory | None, workers: int,
              watch: Watch = _unwatched, judge: Judge | None = None,
              ) -> Iterator[tuple[str, MachineResult, str | None]]:
    """Explore the plan's areas on `adapter` (the probe) one after the other, or in `workers`
    spawned processes that each build their own adapter (the probe is then shut down). Yields
    (area, result, fault) in area order; stops after a fault (the implementation stopped answering).
    With `judge`, a finding a registered bug model explains is judged as it is found and the area
    explores on against the model with that bug (runner.run_machine's `explain`); the workers judge
    with the same registry on their own adapter. Without a run directory (check_adapter) the areas
    run here, nothing written."""
    if run_dir is not None and (workers > 1 or plan.shards > 1):
        yield from _parallel(plan, adapter, claimed, run_dir, max(workers, plan.shards), watch, judge)
        return
    explain = judge.bug_model if judge is not None else None
    db = database(run_dir.path) if run_dir is not None else None
    for area in plan.areas:
        progress = AreaProgress(area)
        try:
            with watch(progress.describe):
                result = plan.explore(area, lambda: adapter, claimed, run_dir, database=db, progress=progress,
                                      explain=explain)
            result.latency = round_trips(adapter)
            yield area, result, None
        except (Exception, BaseExceptionGroup) as exc:  # a fault: never a traceback, never a pass
            reason = f"area {area}: {fault_reason(exc)}"
            yield area, MachineResult(area, unknown=reason), reason
            return


def _parallel(plan: RunPlan, adapter: Any, claimed: Any, run_dir: RunDirectory, workers: int,
              watch: Watch, judge: Judge | None) -> Iterator[tuple[str, MachineResult, str | None]]:
    """Spawned, not forked: this process holds the probe adapter's sockets, threads and possibly an
    embedded server. An area that cannot run is known from the probe's capabilities: no worker for
    it. An area of a plan with shards runs as that many jobs at once (its parts), merged when the
    last is done. After a fault the jobs not yet started are cancelled and later results dropped, as
    -n 1 stops at the fault."""
    import multiprocessing
    import os
    from concurrent.futures import Future, ProcessPoolExecutor

    jobs = _area_jobs(plan, adapter, claimed, run_dir, judge)
    shutdown(adapter)  # the workers build their own
    runnable = [job for parts in jobs.values() if isinstance(parts, list) for job in parts]
    if not runnable:
        for area, parts in jobs.items():
            assert isinstance(parts, MachineResult)
            yield area, parts, None
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(runnable)),
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=exit_with_parent, initargs=(os.getpid(),))
    try:
        futures: dict[int, Future[tuple[MachineResult, str | None]]] = {
            id(job): pool.submit(run_area_job, job) for job in runnable}
        started = time.perf_counter()
        unit = "parts of areas" if plan.shards > 1 else "areas"

        def describe() -> str:
            done = sum(future.done() for future in futures.values())
            return (f"{done} of {len(futures)} {unit} done in {workers} workers, "
                    f"{time.perf_counter() - started:.0f} s")

        for area, parts in jobs.items():
            if isinstance(parts, MachineResult):
                yield area, parts, None
                continue
            results: list[MachineResult] = []
            fault: str | None = None
            for job in parts:
                try:
                    with watch(describe):
                        result, part_fault = futures[id(job)].result()
                except Exception as exc:  # the worker process died (BrokenProcessPool) or could not start
                    cause = f"{type(exc).__name__}: {exc}".rstrip(": ")
                    part_fault = f"area {area}: the worker process failed: {cause}"
                    result = MachineResult(area, unknown=part_fault)
                results.append(result)
                fault = fault or part_fault
            yield area, merge_parts(area, results), fault
            if fault is not None:
                break
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _area_jobs(plan: RunPlan, probe: Any, claimed: Any, run_dir: RunDirectory,
               judge: Judge | None) -> dict[str, list[AreaJob] | MachineResult]:
    """Per area of the plan, in order: its jobs (one per part), or the result of an area the probe's
    capabilities rule out."""
    from mqconform.adapters.contract import EXTRA_CAPABILITIES

    from .exploring.registry import MACHINES
    from .exploring.runner import not_run

    profile_caps = frozenset(claimed.features) | EXTRA_CAPABILITIES
    hyp = plan.hypothesis()
    worker_judge = None if judge is None else attrs.evolve(judge, adapter_factory=None)
    jobs: dict[str, list[AreaJob] | MachineResult] = {}
    for area in plan.areas:
        why = not_run(MACHINES[area], profile_caps, frozenset(probe.capabilities))
        if why is not None:
            jobs[area] = MachineResult(area, needs=why)
            continue
        examples = area_examples(MACHINES[area], hyp, probe, plan.max_examples is None)
        jobs[area] = [AreaJob(plan, area, str(run_dir.path), run_dir.run_id, run_dir.start_ns, worker_judge,
                              part) for part in parts_for(plan.shards, examples)]
    return jobs


def merge_parts(area: str, parts: list[MachineResult]) -> MachineResult:
    """One area's result from its parts' (in part order): findings, checks, examples and records add
    up; the wall time is the longest part's; where the time went adds up over the parts
    (``part_seconds`` is their sum, the denominator of its shares); the round trips are the part's
    with the most samples; the first part that had no verdict says why."""
    if len(parts) == 1:
        return parts[0]
    merged = MachineResult(area)
    for part in parts:
        merged.findings.extend(part.findings)
        merged.checked |= part.checked
        merged.restarts.extend(part.restarts)
        merged.examples += part.examples
        merged.steps += part.steps
        merged.seconds = max(merged.seconds, part.seconds)
        merged.part_seconds += part.seconds
        for category, seconds in part.timing.items():
            merged.timing[category] = round(merged.timing.get(category, 0.0) + seconds, 3)
        if merged.unknown is None and part.unknown is not None:
            merged.unknown = part.unknown
        if merged.needs is None and part.needs is not None:
            merged.needs = part.needs
        merged.adapter_name = merged.adapter_name or part.adapter_name
        merged.server_version = merged.server_version or part.server_version
    merged.parts = len(parts)
    sampled = [p.latency for p in parts if p.latency]
    merged.latency = max(sampled, key=lambda s: s.get("samples") or 0) if sampled else None
    return merged


def area_lines(area: str, result: MachineResult, seconds: float, judge: Judge, claimed: str,
               replay: Callable[[Finding], str]) -> list[str]:
    """What a run prints for one area: its state, where a broker's time went, then each finding with
    its replay command."""
    from .exploring.timing import describe
    from .judging.rules import failure_rules

    if result.needs is not None:
        return [f"  {area:<11} {result.needs.describe()}"]
    state = ("UNKNOWN" if result.unknown else
             f"{len(result.findings)} violation(s)" if result.findings else "ok")
    lines = [f"  {area:<11} {state:<15} {result.examples:>5} examples {result.steps:>7} records "
             f"{seconds:6.1f} s"]
    if result.latency and result.latency.get("median_ms") is not None:
        lines[0] += (f"  (round trip median {result.latency['median_ms']:.1f} ms, "
                     f"p90 {result.latency['p90_ms']:.1f} ms)")
    if result.latency is not None and result.timing:  # a broker's adapter: where its time went
        if result.parts > 1:
            lines.append(f"      time ({result.parts} parts at once, {result.part_seconds:.1f} s in all): "
                         f"{describe(result.timing, result.part_seconds)}")
        else:
            lines.append(f"      time: {describe(result.timing, seconds)}")
    for finding in result.findings:
        rules = failure_rules(finding.rules, claimed)
        lines.append(f"      {judge.label(finding)} {finding.check} [{rules}] "
                     f"{len(finding.steps)} steps: {finding.message[:160]}")
        lines.append(f"           replay: {replay(finding)}")
    if result.restarts:
        lines.append(f"      restarted {len(result.restarts)} time(s) from another seed (the examples "
                     f"until then held): {result.restarts[0][:160]}")
    if result.unknown:
        lines.append(f"      UNKNOWN: {result.unknown[:200]}")
    return lines


def record_outcomes(run_dir: RunDirectory, results: list[MachineResult], areas: list[str], claimed: str,
                    judge: Judge, *, server_version: str, aborted: str | None,
                    say: Callable[[str], None] = print, set_aside: Mapping[str, str] | None = None,
                    **extra: Any) -> tuple[int, dict[str, int]]:
    """Turn the areas' MachineResults (their counterexamples already written) into the run's outcome records
    through the one verdict (mqconform.conformance.judging.verdict), `say` the deviations and the `rules:`
    line, and finish the run directory (run.json with the exit code, the implementation's version and
    `extra`). A finding a bug model's replay left unexplained during the areas is replayed once more first
    (Judge.second_look, a line each). Returns (exit code, outcome counts). Shared by `mqconform run` and
    `mqconform matrix` (one run directory per release). `set_aside`: the areas the implementation's
    product does not have (verdict.absent_areas), left out of the coverage figure and named in it."""
    from .judging.verdict import judge as take_verdict

    not_covered = {r.machine: r.needs for r in results if r.needs is not None}
    for line in judge.second_look(f for r in results for f in r.findings):
        say(line)
    verdict = take_verdict(results, claimed, judge, areas)
    outcomes, known = verdict.outcomes, verdict.by_rule
    findings = {r: f for res in results for f in res.findings for r in f.rules}
    na_why = _not_covered_reasons(not_covered, claimed)
    for rule, state in sorted(outcomes.items()):
        finding = findings.get(rule)
        message = (known[rule].describe() if rule in known else
                   verdict.unknown_why.get(rule) if state == "unknown" else finding.message if finding else
                   na_why.get(rule) if state == "not_applicable" else None)
        run_dir.outcome(finding.machine if finding else _area_of(rule), rule, state,  # type: ignore[arg-type]
                        examples=sum(r.examples for r in results),
                        counterexample=finding.scenario_path if finding else None,
                        message=message)
    for line in known_bug_lines(known):
        say(line)
    counts = verdict.counts()
    say(rules_line(verdict, claimed, set_aside))
    exit_code = verdict.exit_code(aborted=aborted is not None)
    # the implementation's version is a column of the compliance matrix (reports/render/matrix.py)
    run_dir.meta["versions"]["implementation"] = server_version
    # aborted: the outcomes are what was recorded; the run did not cover every area
    run_dir.finish(exit_code, complete=aborted is None, outcomes=counts, strict=judge.strict,
                   not_run={area: why.as_json() for area, why in not_covered.items()},
                   server_version=server_version,
                   deviations={rule: d.where for rule, d in sorted(known.items())}, aborted=aborted,
                   set_aside=dict(set_aside or {}),
                   timing={r.machine: {"wall": round(r.seconds, 3), **r.timing,
                                       **({"parts": r.parts, "part_seconds": round(r.part_seconds, 3)}
                                          if r.parts > 1 else {})}
                           for r in results if r.timing},
                   **extra)
    return exit_code, counts


def known_bug_lines(known: Mapping[str, Deviation]) -> list[str]:
    """One ``DEVIATION`` line per known bug, with every rule it touched (a bug registered under
    several entries, one per check or shape, is one bug: the same reason and source) and the
    entries that matched."""
    bugs: dict[str, tuple[list[str], list[str]]] = {}
    for rule, deviation in sorted(known.items()):
        rules, locations = bugs.setdefault(deviation.describe(), ([], []))
        rules.append(rule)
        if deviation.where not in locations:
            locations.append(deviation.where)
    return [f"  DEVIATION {', '.join(rules)}: {described} [{', '.join(locations)}]"
            for described, (rules, locations) in bugs.items()]


def rules_line(verdict: Verdict, claimed: str, set_aside: Mapping[str, str] | None = None,
               label: str = "rules") -> str:
    """The `rules:` line of a verdict: the outcome counts and the coverage, absolute and relative."""
    counts = verdict.counts()
    deviations = f"{counts['deviation']} known deviation(s), " if counts["deviation"] else ""
    covered = verdict.coverage(claimed, set_aside)
    return (f"{label}: {counts['pass']} pass, {counts['fail']} fail, {deviations}"
            f"{counts['unknown']} unknown, {counts['not_applicable']} not applicable; "
            f"rules covered: {covered}")


def _not_covered_reasons(not_covered: dict[str, Any], profile: str) -> dict[str, str]:
    """rule -> why it is not applicable, for the rules of the areas that did not run: the rule is
    not in the claimed profile (spec/ or the profile's capabilities say so), or it applies but the
    adapter lacks a capability the area needs."""
    from mqconform.spec import load_catalogue

    from .judging.rules import rules_for

    applies = {rule.id for rule in load_catalogue().for_profile(profile)}
    why: dict[str, str] = {}
    for area, reason in not_covered.items():
        for rules in rules_for(area).values():
            for rule in rules:
                text = (reason.reason() if rule in applies else
                        f"not in the claimed profile (the rule does not apply to {profile})")
                why.setdefault(rule, f"area {area} not run: {text}")
    return why


def _area_of(rule: str) -> str:
    return rule.split("-", 1)[0].lower()
