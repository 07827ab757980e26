"""`mqconform matrix`: the suite over many releases of one implementation (a version campaign).

By default each capability group of releases is explored once, on its newest release, and the
exploration's distilled corpus is replayed on the group's other releases without Hypothesis
(:mod:`mqconform.commands.matrix_replay`); with ``--explore-all``, every release explores.
One task per (release, area) (:mod:`mqconform.conformance.campaign`): on Spark (each task a
one-partition job ``sc.parallelize([task], 1).map(run_task)``; local mode with ``--slots`` task
slots, by default 3 per core for a broker whose tasks sleep on its clock; ``--master URL`` for a
cluster) or in this process one after the other (``--engine python``); each task starts its
own server of its release. The driver writes one ordinary run directory per release
(``<out>/<adapter>-<release>``: the tasks' histories, the counterexamples, the outcomes as
`mqconform run` records them), ingests them into the history store (``<out>/store``) and builds
one report (``<out>/report``) with one implementation column per release and the version matrix
page (:mod:`mqconform.reports.render.versions`).

Exit codes as `mqconform run`: 0 every applicable rule holds on every release, 1 a rule fails on
some release, 2 usage or configuration error (one line, e.g. a release that cannot be had),
3 an implementation could not be reached or stopped answering (or Spark could not start).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from mqconform.commands._common import (
    adapter_options,
    add_adapter_arguments,
    add_shrink_argument,
    fail,
)
from mqconform.conformance.exploring.corpus import DEFAULT_K
from mqconform.progress import Heartbeat
from mqconform.releases import LINES

DEFAULT_ADAPTER = "nats"
#: task slots per core of this machine when the adapter's areas wait on a real clock (most of a
#: task's time is a sleep on the broker's clock, so a core serves several); one per core otherwise
WAITING_SLOTS_PER_CORE = 3
#: releases per task (--group) by default: one for every adapter. Lockstep groups save no CPU (a
#: machine per release beside the leader) and, several at once on 2 loaded cores, overloaded the
#: machine into timeouts and expiry timing findings (docs/matrix.md, *Releases in lockstep*)
GROUP_DEFAULTS: dict[str, int] = {}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_adapter_arguments(parser, DEFAULT_ADAPTER)
    parser.add_argument("--versions", required=True, metavar="V1,V2,...|all",
                        help=f"releases to run ({'; '.join(line.describe() for line in LINES.values())}); "
                             "all: every one the adapter can drive (the others are named and left out)")
    parser.add_argument("--profile", help="profile every release is checked against "
                                          "(default: the one the adapter claims)")
    parser.add_argument("--settings", default=None, choices=("dev", "ci", "thorough"),
                        help="Hypothesis settings profile (default: ci when CI=true, else dev)")
    parser.add_argument("--areas", help="comma-separated areas to run (default: all)")
    parser.add_argument("--max-examples", type=int, help="override the examples per machine")
    add_shrink_argument(parser)
    parser.add_argument("--max-findings", type=int, default=None, metavar="N",
                        help="stop exploring an area after N violations (as mqconform run)")
    parser.add_argument("--out", type=Path, help="campaign directory (default: mqconform-runs/matrix-<id>)")
    parser.add_argument("--engine", choices=("spark", "python"), default="spark",
                        help="spark: one Spark task per (release, area) and the report on Spark; "
                             "python: the same tasks one after the other in this process")
    parser.add_argument("--master", help="Spark master URL (default: local[N] with N --slots)")
    parser.add_argument("--slots", type=int, metavar="N",
                        help="tasks at once in local mode (default: 3 per core for a broker, whose "
                             "tasks mostly sleep on its clock; 1 per core for an in-process adapter)")
    parser.add_argument("--explore-all", action="store_true",
                        help="explore every area on every release with Hypothesis (one task per "
                             "(release, area); deep, for a real cluster). Default: explore once per "
                             "capability group, on its newest release, and replay the exploration's "
                             "distilled corpus on the group's other releases without Hypothesis (a "
                             "divergence is a finding of that release, shrunk there)")
    parser.add_argument("--corpus-k", type=int, default=None, metavar="K",
                        help="replay: distilled examples kept per check the exploration reached (the "
                             f"shortest K; default {DEFAULT_K}), besides every counterexample")
    parser.add_argument("--group", type=int, metavar="N",
                        help="with --explore-all (N > 1 implies it): releases per task: releases of "
                             "one capability set explore each area in "
                             "lockstep (one Hypothesis run drives the model and one server per release, "
                             "each step on all at once; a finding is shrunk once and replayed on the "
                             "others); 1: one task per (release, area) (default 1)")
    parser.add_argument("--seed", type=int, metavar="N", help="Hypothesis seed (as mqconform run)")
    parser.add_argument("--strict", action="store_true",
                        help="registered known deviations count as failures")
    parser.add_argument("--deviations", type=Path, action="append", metavar="FILE",
                        help="another known-deviation registry file (repeatable)")
    parser.add_argument("--no-report", action="store_true", help="skip the report at the end")


def run(args: argparse.Namespace) -> int:
    import attrs

    from mqconform.adapters.registry import AdapterLoadError
    from mqconform.conformance.judging.deviations import DeviationError
    from mqconform.conformance.judging.verdict import load_deviations
    from mqconform.conformance.plan import RunPlan
    from mqconform.history import new_run_id
    from mqconform.reference_model.errors import ModelMisuse
    from mqconform.releases import ReleaseError, binary, left_out, resolve

    usage = _usage_error(args)
    if usage is not None:
        return fail(usage)
    try:
        options = adapter_options(args)
        if "url" in options or "server_bin" in options:
            return fail("matrix: the tasks start each release's own server; drop --url / -o server_bin")
        plan = RunPlan.build(args.adapter, options, profile=args.profile, settings_name=args.settings,
                             areas=args.areas, max_examples=args.max_examples,
                             max_findings=args.max_findings, seed=args.seed,
                             shrink_seconds=args.shrink_seconds)
        releases = resolve(args.adapter, args.versions)
        skipped = left_out(args.adapter) if args.versions.strip() == "all" else []
        # every release on this machine first: a release that cannot be had stops the campaign here
        binaries = {release.version: binary(release) for release in releases}
        # the probe runs the newest release (an adapter may not run the oldest: its tasks say why)
        adapter = plan.open_adapter(server_bin=str(list(binaries.values())[-1]))
        claimed = plan.claimed(adapter)
        try:  # loaded once, before any task: the one every release is judged with
            registry = load_deviations(args.deviations)
        except DeviationError as exc:
            return fail(f"deviation registry: {exc}")
        if not args.strict:  # a task does not shrink what a registered bug explains as found
            plan = attrs.evolve(plan, deviations=registry)
    except ReleaseError as exc:
        return fail(f"matrix: {exc}")
    except (AdapterLoadError, ModelMisuse, ValueError, TypeError) as exc:
        return fail(str(exc))

    settings_name = plan.settings_name
    areas = list(plan.areas)
    campaign = "matrix-" + new_run_id()
    out = args.out if args.out is not None else Path("mqconform-runs") / campaign
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return fail(f"cannot write the campaign directory {out}: {exc.strerror or exc}")
    run_ids = {release.version: new_run_id() for release in releases}
    master = args.master or local_master(args.slots, bool(getattr(adapter, "real_time", False)))
    header = (f"mqconform matrix {campaign}: adapter {adapter.name}, {len(releases)} release(s) x "
              f"{len(areas)} area(s)")
    checked = f"checked against {claimed.name}, settings {settings_name}"
    t0 = time.perf_counter()
    results = _execute(args, plan, releases, areas, run_ids, adapter, master, header, checked, skipped)
    if isinstance(results, int):
        return results
    wall = time.perf_counter() - t0
    _print_task_times(results, wall)
    by_release = _by_release(results)
    codes: list[int] = []
    run_dirs: list[Path] = []
    for release in releases:
        path = out / f"{adapter.name}-{release.version}"
        codes.append(_finish_release(path, release, by_release.get(release.version, []), areas, args,
                                     plan, claimed, str(binaries[release.version]),
                                     run_ids[release.version], campaign, registry, adapter))
        run_dirs.append(path)
    print(f"matrix: {len(results)} tasks in {wall:.1f} s wall ({args.engine}"
          f"{f' {master}' if args.engine == 'spark' else ''}); run directories under {out}")
    return _conclude(codes, run_dirs, out, args, registry)


def _execute(args: argparse.Namespace, plan: Any, releases: list[Any], areas: list[str],
             run_ids: dict[str, str], adapter: Any, master: str, header: str, checked: str,
             skipped: list[str]) -> list[Any] | int:
    """Print the campaign's first line and run its tasks: every release explored (--explore-all, or
    --group N > 1: lockstep groups), else explored once per capability group and replayed on the
    others (matrix_replay). The task results, or the exit code of an interrupted dispatch."""
    size = args.group if args.group is not None else GROUP_DEFAULTS.get(args.adapter, 1)
    where = f"Spark {master}" if args.engine == "spark" else "in this process"
    if args.explore_all or size > 1:
        from mqconform.conformance.campaign import GroupTask

        tasks = _tasks(plan, release_groups(releases, size, _capabilities_of(adapter)), areas, run_ids)
        lockstep = sum(isinstance(task, GroupTask) for task in tasks)
        grouped = f" ({lockstep} of them lockstep groups of 2-{size} releases)" if lockstep else ""
        _print_header(f"{header} = {len(tasks)} tasks{grouped} {where}, {checked}", plan.seed, args.adapter,
                      skipped)
        return _run_tasks(tasks, args.engine, master)
    from mqconform.commands.matrix_replay import capabilities_function, explore_and_replay

    groups = release_groups(releases, max(1, len(releases)), capabilities_function(adapter))
    _print_header(f"{header}, explored on {len(groups)} release(s) and replayed on the others {where}, "
                  f"{checked}", plan.seed, args.adapter, skipped)
    k = args.corpus_k if args.corpus_k is not None else DEFAULT_K
    return explore_and_replay(plan, groups, areas, run_ids, k,
                              lambda tasks: _run_tasks(tasks, args.engine, master))


def _conclude(codes: list[int], run_dirs: list[Path], out: Path, args: argparse.Namespace,
              registry: Any) -> int:
    """The campaign's exit code from its releases' `codes` (1 before 3), joined with the report's."""
    exit_code = 1 if 1 in codes else 3 if 3 in codes else 0
    if not args.no_report:
        from mqconform.commands.report import join_verdicts

        exit_code = join_verdicts(_report(run_dirs, out, args, None if args.strict else registry), exit_code,
                                  "the run directories are complete")
    return exit_code


def _tasks(plan: Any, groups: list[list[Any]], areas: list[str], run_ids: dict[str, str]) -> list[Any]:
    """One task per (release group, area); a release alone in its group runs the one-release task
    (Hypothesis' own shrinking included)."""
    from mqconform.conformance.campaign import CampaignTask, GroupTask

    return [GroupTask(plan, tuple(group), area, tuple(run_ids[r.version] for r in group)) if len(group) > 1
            else CampaignTask(plan, group[0], area, run_ids[group[0].version])
            for group in groups for area in areas]


def _by_release(results: list[Any]) -> dict[str, list[Any]]:
    by_release: dict[str, list[Any]] = {}
    for result in results:
        by_release.setdefault(result.release, []).append(result)
    return by_release


def _print_header(text: str, seed: int | None, adapter: str, skipped: list[str]) -> None:
    """The campaign's first line (`text` and the seed), and the releases left out and why."""
    from mqconform.releases import line

    seed_text = f"seed {seed}" if seed is not None else "seed derandomized"
    print(f"{text}, {seed_text}", flush=True)
    if skipped:
        served = line(adapter)
        print(f"  left out: {', '.join(skipped)} (the adapter needs {served.since} or newer: "
              f"{served.since_why})", flush=True)


def _usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the options that need no adapter, or None."""
    if args.engine == "python" and args.master:
        return "--master needs --engine spark"
    if args.slots is not None and (args.slots < 1 or args.master):
        return "--slots must be at least 1, and applies to local mode only (not with --master)"
    if args.group is not None and args.group < 1:
        return "--group must be at least 1"
    if args.corpus_k is not None and (args.corpus_k < 1 or args.explore_all):
        return "--corpus-k must be at least 1, and applies to a matrix by replay (not with --explore-all)"
    return None


def _run_tasks(tasks: list[Any], engine: str, master: str) -> list[Any] | int:
    """The tasks' results, or the exit code when they were interrupted (130) or Spark could not run
    them (3, said on stderr)."""
    try:
        return _dispatch(tasks, engine, master)
    except KeyboardInterrupt:
        print("\nmqconform: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from mqconform.commands.report import _spark_failure
        from mqconform.text import first_line

        if engine == "spark" and _spark_failure(exc):
            from mqconform.reports.spark_session import jvm_log

            return fail(f"matrix: Spark could not run the tasks (master {master}): {type(exc).__name__}: "
                        f"{first_line(exc, 200)} (JVM log: {jvm_log()})", 3)
        raise


def _print_task_times(results: list[Any], wall: float) -> None:
    """Where the task time went: by area, by release and by lockstep group."""
    spent = sum(float(r.seconds) for r in results)
    print(f"matrix: {spent:.0f} s of task time in {wall:.0f} s wall; by area: "
          + ", ".join(f"{area} {seconds:.0f} s" for area, seconds in time_by(results, "area")))
    print("matrix: by release: " + ", ".join(f"{release} {seconds:.0f} s"
                                             for release, seconds in time_by(results, "release")))
    by_group = {(r.group, r.area): r.group_seconds for r in results if r.group}
    if by_group:
        print("matrix: by group (lockstep task time, a release's share above): " + ", ".join(
            f"{area} [{group}] {seconds:.0f} s" for (group, area), seconds in by_group.items()))


def _dispatch(tasks: list[Any], engine: str, master: str) -> list[Any]:
    """Run the tasks and return their results in task order, printing a line as each one ends.

    Spark: each task is a one-partition job (``sc.parallelize([task], 1).map(run_task)``) submitted
    from its own driver thread, so the scheduler runs as many at once as the master has cores and the
    driver hears of each as it ends; python: one after the other in this process."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from mqconform.conformance.campaign import GroupTask, ReplayTask, run_group, run_replay, run_task

    def execute(task: Any) -> list[Any]:
        if isinstance(task, ReplayTask):
            return [run_replay(task)]
        return run_group(task) if isinstance(task, GroupTask) else [run_task(task)]

    done: dict[int, list[Any]] = {}
    started = time.perf_counter()
    tracker: Any = None  # Spark's status tracker, once there is a session

    def describe() -> str:
        running = f", {_active_tasks(tracker)} running on Spark" if tracker is not None else ""
        elapsed = time.perf_counter() - started
        return f"matrix: {len(done)} of {len(tasks)} tasks done{running}, {elapsed:.0f} s"

    def report(index: int, results: list[Any]) -> None:
        done[index] = results
        for result in results:
            state = ("n/a" if result.result.needs is not None else "UNKNOWN" if result.result.unknown else
                     f"{len(result.result.findings)} violation(s)" if result.result.findings else "ok")
            seconds = (f"{result.group_seconds:.1f} s for its group of {result.group.count(',') + 1}"
                       if result.group else f"{result.seconds:.1f} s")
            left = (f"; left {result.left} example(s) where its state no longer enabled the model's rules"
                    if getattr(result, "left", 0) else "")
            if result.replayed_from:
                left += f"; replayed {result.result.examples} example(s) from {result.replayed_from}"
            elif result.corpus:
                left += f"; corpus of {len(result.corpus)} distilled example(s)"
            heartbeat.say(f"  [{len(done)}/{len(tasks)}] {result.release} {result.area}: {state} "
                          f"({seconds} on {result.host}{left})")

    if engine == "python":
        with Heartbeat(describe) as heartbeat:
            for index, task in enumerate(tasks):
                report(index, execute(task))
        return [r for i in range(len(tasks)) for r in done[i]]
    from mqconform.reports.spark_session import get_session

    sc = get_session(master, app="mqconform-matrix").sparkContext
    tracker = sc.statusTracker()
    with ThreadPoolExecutor(max_workers=min(len(tasks), 64)) as pool, Heartbeat(describe) as heartbeat:
        futures = {pool.submit(lambda t: sc.parallelize([t], 1).map(execute).collect()[0], task): index
                   for index, task in enumerate(tasks)}
        for future in as_completed(futures):
            report(futures[future], future.result())
    return [r for i in range(len(tasks)) for r in done[i]]


def local_master(slots: int | None, waits_on_clock: bool) -> str:
    """Spark local mode with `slots` task slots (default: WAITING_SLOTS_PER_CORE per core for an
    adapter whose tasks sleep on a real clock, one per core otherwise)."""
    import os

    cores = os.cpu_count() or 1
    return f"local[{slots or cores * (WAITING_SLOTS_PER_CORE if waits_on_clock else 1)}]"


def release_groups(releases: list[Any], size: int, capabilities: Any = None) -> list[list[Any]]:
    """The releases in lockstep groups of at most `size`: consecutive releases of one capability set
    (`capabilities(version)`, when the adapter's module says it without a server; else the task
    splits a group by the capabilities its servers show), each run of them cut into as few groups
    as `size` allows, of even sizes."""
    runs: list[list[Any]] = []
    last: Any = object()
    for release in releases:
        try:
            key = capabilities(release.version) if capabilities is not None else None
        except Exception:  # a version the function cannot read: its own group
            key = object()
        if not runs or key != last:
            runs.append([])
        runs[-1].append(release)
        last = key
    groups: list[list[Any]] = []
    for run in runs:
        count = -(-len(run) // size)
        base, extra = divmod(len(run), count)
        start = 0
        for n in range(count):
            width = base + (1 if n < extra else 0)
            groups.append(run[start:start + width])
            start += width
    return groups


def _capabilities_of(adapter: Any) -> Any:
    """The adapter module's ``capabilities_for(version)`` (nats, redis), or None."""
    module = sys.modules.get(type(adapter).__module__)
    found = getattr(module, "capabilities_for", None)
    return found if callable(found) else None


def time_by(results: list[Any], key: str) -> list[tuple[str, float]]:
    """Task seconds summed by `key` ("area" or "release"), largest first."""
    totals: dict[str, float] = {}
    for result in results:
        totals[getattr(result, key)] = totals.get(getattr(result, key), 0.0) + float(result.seconds)
    return sorted(totals.items(), key=lambda item: -item[1])


def _active_tasks(tracker: Any) -> int:
    stages = (tracker.getStageInfo(i) for i in tracker.getActiveStageIds())
    return sum(stage.numActiveTasks for stage in stages if stage is not None)


def _finish_release(path: Path, release: Any, results: list[Any], areas: list[str], args: argparse.Namespace,
                    plan: Any, claimed: Any, server_bin: str, run_id: str, campaign: str, registry: Any,
                    adapter: Any) -> int:
    """Write the release's run directory from its tasks' results, as `mqconform run` would have
    (`adapter`: the campaign's probe, for its name and profile: a task's release may be one the
    adapter cannot run, whose tasks say why)."""
    import attrs

    from mqconform.conformance.campaign import unpack
    from mqconform.conformance.execution import area_lines
    from mqconform.conformance.run import Run

    # the release's run: its adapter (for a bug model's replay, on this release's own server,
    # started when first needed) and its counterexamples name the release's server
    release_plan = attrs.evolve(plan, adapter_options={**plan.adapter_options, "server_bin": server_bin})
    server_version = next((r.server_version for r in results if r.server_version), "") or release.version
    order = {area: n for n, area in enumerate(areas)}

    def replay(finding: Any) -> str:
        return (f"mqconform scenario {path / (finding.scenario_path or '')} --adapter {args.adapter} "
                f"-o server_bin={server_bin}")

    with Run(release_plan, registry=registry, strict=bool(args.strict), out=path, run_id=run_id) as run:
        run.attach(adapter, claimed, server_version)
        assert run.judge is not None
        print(f"{adapter.name} {release.version} ({release.source}, server {server_version}): run {run_id}")
        for task in sorted(results, key=lambda r: order.get(r.area, 0)):
            unpack(task.files, path)
            event = run.record(task.area, task.result, task.fault or None)
            print("\n".join(area_lines(event.area, event.result, event.seconds, run.judge, claimed.name,
                                       replay)))
        code, _counts = run.finish(
            faults=run.faults,
            campaign={"id": campaign, "release": release.version, "source": release.source,
                      "engine": args.engine, "hosts": sorted({r.host for r in results}),
                      **_replayed(results)})
    return code


def _replayed(results: list[Any]) -> dict[str, Any]:
    """A replayed release's campaign fields: the release whose corpus it replayed (matrix_replay)."""
    sources = sorted({r.replayed_from for r in results if getattr(r, "replayed_from", "")})
    if not sources:
        return {}
    return {"replayed_from": sources[0] if len(sources) == 1 else sources}


def _report(run_dirs: list[Path], out: Path, args: argparse.Namespace, registry: Any) -> int:
    from mqconform.commands.report import build_report

    master = (args.master or local_master(None, False)) if args.engine == "spark" else None
    return build_report(run_dirs, engine=args.engine, master=master, out=out / "report", store=out / "store",
                        deviations=registry)
