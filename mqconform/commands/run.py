"""`mqconform run`: the conformance suite against one adapter, a run directory and a report.

Exit codes: 0 every applicable rule holds, 1 violations, 2 usage or configuration error,
3 infrastructure (the implementation could not be reached, or answered `info`).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqconform.adapters.contract import AdapterError
from mqconform.adapters.registry import AdapterLoadError, load_adapter
from mqconform.commands._common import adapter_options, add_adapter_arguments, fail
from mqconform.conformance.deviations import DeviationError, Registry
from mqconform.conformance.rules import failure_rules
from mqconform.conformance.runner import MAX_RERUNS
from mqconform.history import RunDirectory, new_run_id

if TYPE_CHECKING:
    from mqconform.conformance.verdict import Judge

DEFAULT_ADAPTER = "nats"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_adapter_arguments(parser, DEFAULT_ADAPTER)
    parser.add_argument("--profile", help="profile the implementation is checked against "
                                          "(default: the one the adapter claims)")
    parser.add_argument("--settings", default=None, choices=("dev", "ci", "thorough"),
                        help="Hypothesis settings profile (default: ci when CI=true, else dev)")
    parser.add_argument("--areas", help="comma-separated areas to run (default: all)")
    parser.add_argument("--max-examples", type=int, help="override the examples per machine")
    parser.add_argument("--max-findings", type=int, default=MAX_RERUNS + 1, metavar="N",
                        help="stop exploring an area after N violations (each is shrunk to a "
                             f"counterexample; default {MAX_RERUNS + 1})")
    parser.add_argument("--out", type=Path, help="run directory (default: mqconform-runs/<run id>)")
    parser.add_argument("--engine", choices=("spark", "python"), default="spark",
                        help="report engine (default: spark, local mode)")
    parser.add_argument("--master", help="Spark master URL for the report (default: local[*])")
    parser.add_argument("--no-report", action="store_true", help="skip the report at the end")
    parser.add_argument("--strict", action="store_true",
                        help="registered known deviations count as failures")
    parser.add_argument("-n", "--workers", default="1", metavar="N|auto",
                        help="run the areas in N worker processes (auto: one per CPU, at most one per "
                             "area); each builds its own adapter; same outcomes as -n 1 (default 1)")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="Hypothesis seed: the same seed and settings explore the same examples "
                             "(default: a random seed, printed and recorded in run.json; none under the "
                             "derandomized `ci` settings)")
    parser.add_argument("--deviations", type=Path, action="append", metavar="FILE",
                        help="another known-deviation registry file (repeatable; added to the shipped "
                             "mqconform/conformance/deviations.yaml)")


def _prepare_out(out: Path | None, run_id: str) -> Path:
    path = out if out is not None else Path("mqconform-runs") / run_id
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"cannot write the run directory {path}: {exc.strerror or exc}") from None
    return path


def run(args: argparse.Namespace) -> int:
    from mqconform.conformance import settings as suite_settings
    from mqconform.conformance.registry import MACHINES
    from mqconform.conformance.runner import (
        AreaJob,
        MachineResult,
        database,
        fault_reason,
        run_machine,
        write_counterexample,
    )
    from mqconform.conformance.runner import not_run as cannot_run
    from mqconform.reference_model.errors import ModelMisuse
    from mqconform.reference_model.profiles import profile as load_profile

    settings_name = args.settings or suite_settings.default_profile()
    try:
        options = adapter_options(args)
        adapter = load_adapter(args.adapter, **options)
        claimed = load_profile(args.profile or adapter.profile)
        areas = list(MACHINES) if not args.areas else [a.strip() for a in args.areas.split(",") if a.strip()]
        unknown = [a for a in areas if a not in MACHINES]
        if unknown:
            return fail(f"unknown area {unknown[0]!r} (known: {', '.join(MACHINES)})")
        if settings_name not in suite_settings.PROFILES:
            return fail(f"unknown settings profile {settings_name!r}")
        workers = _workers(args.workers, len(areas))
        run_id = new_run_id()
        out = _prepare_out(args.out, run_id)
    except (AdapterLoadError, ModelMisuse, ValueError) as exc:
        return fail(str(exc))
    try:
        registry = _load_deviations(args.deviations)
    except DeviationError as exc:
        return fail(f"deviation registry: {exc}")

    overrides: dict[str, Any] = {"database": database(out)}
    if args.max_examples:
        overrides["max_examples"] = args.max_examples
    if args.max_findings < 1:
        return fail("--max-findings must be at least 1")
    hyp = suite_settings.get(settings_name, **overrides)
    # the seed: given, else drawn (so any run can be replayed), except under derandomized settings,
    # whose examples are already fixed by the settings and the code
    seed = args.seed if args.seed is not None else (None if hyp.derandomize else random.getrandbits(32))
    try:
        adapter.open("mqc-probe")
        adapter.close()
    except AdapterError as exc:
        return fail(f"{args.adapter}: cannot reach the implementation: {exc}", 3)
    server_version = str(getattr(adapter, "server_version", "") or "")
    from mqconform.conformance.verdict import Judge

    judge = Judge(registry, adapter.name, server_version, claimed.name, adapter.profile,
                  strict=bool(args.strict))
    run_dir = RunDirectory(out, adapter.name, claimed.name,
                           {"settings": settings_name, "areas": areas, "max_examples": hyp.max_examples,
                            "stateful_step_count": hyp.stateful_step_count, "adapter_options":
                            sorted(options), "seed": seed, "workers": workers}, run_id=run_id)
    run_dir.meta["seed"] = seed
    seed_text = f"seed {seed}" if seed is not None else "seed derandomized"
    print(f"mqconform run {run_id}: adapter {adapter.name} ({adapter.profile}), checked against "
          f"{claimed.name}, settings {settings_name}, {seed_text}"
          f"{f', {workers} workers' if workers > 1 else ''}", flush=True)
    results = []
    aborted: str | None = None  # set when the implementation stopped answering (a fault)

    def sequential() -> Iterator[tuple[str, MachineResult, str | None]]:
        for area in areas:
            print(f"  {area:<11} ", end="", flush=True)
            try:
                yield area, run_machine(MACHINES[area], lambda: adapter, claimed, hyp, run_dir,
                                        max_reruns=args.max_findings - 1, seed_value=seed,
                                        cap_real_time=not args.max_examples), None
            except (Exception, BaseExceptionGroup) as exc:  # a fault: never a traceback, never a pass
                reason = f"area {area}: {fault_reason(exc)}"
                yield area, MachineResult(area, unknown=reason), reason

    def parallel() -> Iterator[tuple[str, MachineResult, str | None]]:
        # an area that cannot run is known here (the probe's capabilities): no worker for it
        from mqconform.adapters.contract import EXTRA_CAPABILITIES

        profile_caps = frozenset(claimed.features) | EXTRA_CAPABILITIES
        jobs: list[Any] = []
        for area in areas:
            why = cannot_run(MACHINES[area], profile_caps, frozenset(adapter.capabilities))
            jobs.append(MachineResult(area, needs=why) if why is not None else
                        AreaJob(area, args.adapter, options, claimed.name, settings_name,
                                {k: v for k, v in overrides.items() if k != "database"}, str(out), run_id,
                                run_dir.start_ns, args.max_findings - 1, seed))
        _shutdown(adapter)  # the workers build their own; this one (the probe) is not needed any more
        yield from _parallel(jobs, workers)

    t0 = time.perf_counter()
    try:
        for _area, result, fault in (parallel() if workers > 1 else sequential()):
            if fault is not None:
                aborted = fault
            results.append(result)
            for index, finding in enumerate(result.findings, start=1):
                write_counterexample(run_dir, finding, args.adapter, options, claimed.name, index)
            state = ("UNKNOWN" if result.unknown else
                     f"{len(result.findings)} violation(s)" if result.findings else "ok")
            elapsed = result.seconds if workers > 1 else time.perf_counter() - t0
            if result.needs is not None:
                print(f"{result.needs.describe()}", flush=True)
            else:
                print(f"{state:<15} {result.examples:>5} examples {result.steps:>7} records "
                      f"{elapsed:6.1f} s", flush=True)
            t0 = time.perf_counter()
            for finding in result.findings:
                label = judge.label(finding)
                print(f"      {label} {finding.check} [{failure_rules(finding.rules, claimed.name)}] "
                      f"{len(finding.steps)} "
                      f"steps: {finding.message[:160]}")
                print(f"           replay: mqconform scenario {out / (finding.scenario_path or '')} "
                      f"--adapter {args.adapter}")
            if result.unknown:
                print(f"      UNKNOWN: {result.unknown[:200]}")
            if aborted is not None:
                break
    except KeyboardInterrupt:
        print("\nmqconform: interrupted; the run directory is marked incomplete", file=sys.stderr)
        return 130
    finally:
        _shutdown(adapter)

    exit_code, counts = record_outcomes(run_dir, results, areas, claimed.name, judge,
                                        server_version=server_version, aborted=aborted)
    if exit_code == 3:
        reason = aborted or next((r.unknown for r in results if r.unknown), "")
        print(f"mqconform: {args.adapter}: the implementation did not answer ({reason[:300]}); "
              f"{counts['unknown']} rule(s) unknown", file=sys.stderr)
    print(f"run directory: {out}")
    if not args.no_report:
        code = _report(out, args)
        if code not in (0, 1):
            print("mqconform: the report could not be built (see above); the run directory is complete",
                  file=sys.stderr)
    return exit_code


def record_outcomes(run_dir: RunDirectory, results: list[Any], areas: list[str], claimed: str,
                    judge: Judge, *, server_version: str, aborted: str | None,
                    **extra: Any) -> tuple[int, dict[str, int]]:
    """Turn the areas' MachineResults (their counterexamples already written) into the run's outcome
    records through the one verdict (mqconform.conformance.verdict), print the deviations and the
    `rules:` line, and finish the run directory (run.json with the exit code, the implementation's
    version and `extra`). Returns (exit code, outcome counts). Shared by `mqconform run` and
    `mqconform matrix` (one run directory per release)."""
    from mqconform.conformance.verdict import judge as take_verdict

    not_covered = {r.machine: r.needs for r in results if r.needs is not None}
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
    for rule, deviation in sorted(known.items()):
        print(f"  DEVIATION {rule}: {deviation.describe()} [{deviation.location}]")
    counts = verdict.counts()
    deviations = f"{counts['deviation']} known deviation(s), " if counts["deviation"] else ""
    print(f"rules: {counts['pass']} pass, {counts['fail']} fail, {deviations}{counts['unknown']} unknown, "
          f"{counts['not_applicable']} not applicable; rules covered: {verdict.coverage(claimed)}")
    exit_code = verdict.exit_code(aborted=aborted is not None)
    # the implementation's version is a column of the compliance matrix (reports/matrix.py)
    run_dir.meta["versions"]["implementation"] = server_version
    # aborted: the outcomes are what was recorded; the run did not cover every area
    run_dir.finish(exit_code, complete=aborted is None, outcomes=counts, strict=judge.strict,
                   not_run={area: why.as_json() for area, why in not_covered.items()},
                   server_version=server_version,
                   deviations={rule: d.location for rule, d in sorted(known.items())}, aborted=aborted,
                   **extra)
    return exit_code, counts


def _load_deviations(extra: list[Path] | None) -> Registry:
    """The shipped registry plus any --deviations files (DeviationError with file:line)."""
    from mqconform.conformance.verdict import load_deviations

    return load_deviations(extra)


def _shutdown(adapter: Any) -> None:
    try:
        shutdown = getattr(adapter, "shutdown", None)
        if callable(shutdown):
            shutdown()
    except Exception:
        pass


def _workers(value: str, areas: int) -> int:
    """-n N|auto: the number of worker processes (auto: one per CPU); never more than the areas."""
    if value == "auto":
        count = os.cpu_count() or 1
    else:
        try:
            count = int(value)
        except ValueError:
            raise ValueError(f"-n expects a number or auto, got {value!r}") from None
        if count < 1:
            raise ValueError("-n must be at least 1")
    return max(1, min(count, areas))


def _parallel(jobs: list[Any], workers: int) -> Iterator[tuple[str, Any, str | None]]:
    """Run the jobs (AreaJob, or an already known MachineResult) in `workers` spawned processes and
    yield their results in job order (the order of the summary); each prints its area name when its
    turn comes. Spawned, not forked: this
    process holds the probe adapter's sockets, threads and possibly an embedded server, and each
    worker builds its own adapter. After a fault the jobs not yet started are cancelled and later
    results are dropped, as -n 1 stops at the fault."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from mqconform.conformance.runner import AreaJob, MachineResult, run_area_job

    runnable = [job for job in jobs if isinstance(job, AreaJob)]
    if not runnable:
        for job in jobs:
            print(f"  {job.machine:<11} ", end="", flush=True)
            yield job.machine, job, None
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(runnable)),
                               mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {id(job): pool.submit(run_area_job, job) for job in runnable}
        for job in jobs:
            area = job.area if isinstance(job, AreaJob) else job.machine
            print(f"  {area:<11} ", end="", flush=True)
            if not isinstance(job, AreaJob):
                yield area, job, None
                continue
            try:
                result, fault = futures[id(job)].result()
            except Exception as exc:  # the worker process died (BrokenProcessPool) or could not start
                fault = f"area {area}: the worker process failed: {type(exc).__name__}: {exc}".rstrip(": ")
                result = MachineResult(area, unknown=fault)
            yield area, result, fault
            if fault is not None:
                break
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _not_covered_reasons(not_covered: dict[str, Any], profile: str) -> dict[str, str]:
    """rule -> why it is not applicable, for the rules of the areas that did not run: the rule is
    not in the claimed profile (spec/ or the profile's capabilities say so), or it applies but the
    adapter lacks a capability the area needs."""
    from mqconform.conformance.rules import rules_for
    from mqconform.spec import load_catalogue

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


def _report(out: Path, args: argparse.Namespace) -> int:
    try:
        from mqconform.commands import report
    except ImportError:
        return 0
    report_args = argparse.Namespace(inputs=[out], engine=args.engine, master=args.master,
                                     out=out / "report", ignore_bad=False)
    return int(report.run(report_args))


