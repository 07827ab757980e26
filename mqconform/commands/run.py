"""`mqconform run`: the conformance suite against one adapter, a run directory and a report.

Exit codes: 0 every applicable rule holds, 1 violations, 2 usage or configuration error,
3 infrastructure (the implementation could not be reached, or answered `info`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mqconform.adapters.contract import AdapterError
from mqconform.adapters.registry import AdapterLoadError, load_adapter
from mqconform.commands._common import (
    Replayer,
    adapter_options,
    add_adapter_arguments,
    add_shrink_argument,
    fail,
)
from mqconform.conformance.exploring.runner import MAX_RERUNS
from mqconform.conformance.judging.deviations import DeviationError
from mqconform.history import RunDirectory, new_run_id
from mqconform.progress import Heartbeat

DEFAULT_ADAPTER = "nats"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_adapter_arguments(parser, DEFAULT_ADAPTER)
    parser.add_argument("--profile", help="profile the implementation is checked against "
                                          "(default: the one the adapter claims)")
    parser.add_argument("--settings", default=None, choices=("dev", "ci", "thorough"),
                        help="Hypothesis settings profile (default: ci when CI=true, else dev)")
    parser.add_argument("--areas", help="comma-separated areas to run (default: all)")
    parser.add_argument("--max-examples", type=int, help="override the examples per machine")
    add_shrink_argument(parser)
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
    parser.add_argument("--shards", type=int, default=1, metavar="K",
                        help="explore each area as K parts at once (its examples split between them), "
                             "each in a worker process with its own adapter, seed and history, merged "
                             "into the area's result: for a broker whose time is waiting (its clock, "
                             "restarts); -n then defaults to K (default 1)")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="Hypothesis seed: the same seed and settings explore the same examples "
                             "(default: a random seed, printed and recorded in run.json; none under the "
                             "derandomized `ci` settings)")
    parser.add_argument("--deviations", type=Path, action="append", metavar="FILE",
                        help="another known-deviation registry file (repeatable; added to the shipped "
                             "mqconform/conformance/judging/deviations.yaml)")


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
    from mqconform.conformance.execution import area_lines, record_outcomes, run_areas, shutdown
    from mqconform.conformance.exploring.runner import write_counterexample
    from mqconform.conformance.judging.verdict import Judge, absent_areas, load_deviations
    from mqconform.conformance.plan import RunPlan
    from mqconform.reference_model.errors import ModelMisuse
    from mqconform.reference_model.profiles import profile as load_profile

    try:
        options = adapter_options(args)
        plan = RunPlan.build(args.adapter, options, profile=args.profile, settings_name=args.settings,
                             areas=args.areas, max_examples=args.max_examples,
                             max_findings=args.max_findings, seed=args.seed,
                             shrink_seconds=args.shrink_seconds, shards=args.shards)
        adapter = load_adapter(args.adapter, **options)
        claimed = load_profile(args.profile or adapter.profile)
        workers = _workers(args.workers, len(plan.areas) * plan.shards, plan.shards)
        run_id = new_run_id()
        out = _prepare_out(args.out, run_id)
    except (AdapterLoadError, ModelMisuse, ValueError) as exc:
        return fail(str(exc))
    try:
        registry = load_deviations(args.deviations)
    except DeviationError as exc:
        return fail(f"deviation registry: {exc}")
    try:
        adapter.open("mqc-probe")
        adapter.close()
    except AdapterError as exc:
        return fail(f"{args.adapter}: cannot reach the implementation: {exc}", 3)
    server_version = str(getattr(adapter, "server_version", "") or "")
    # a bug model's replay runs on the probe while it answers (one worker); with workers the probe is
    # stopped, and the replays run on one adapter built for them when the first is needed
    replayer = Replayer(adapter if workers == 1 else None, lambda: load_adapter(args.adapter, **options))
    judge = Judge(registry, adapter.name, server_version, claimed.name, adapter.profile,
                  strict=bool(args.strict), adapter_factory=replayer)
    run_dir = _start_run(out, run_id, plan, adapter, claimed.name, options, workers)
    results = []
    aborted: str | None = None  # set when the implementation stopped answering (a fault)

    def replay(finding: Any) -> str:
        return f"mqconform scenario {out / (finding.scenario_path or '')} --adapter {args.adapter}"

    t0 = time.perf_counter()
    try:
        for area, result, fault in run_areas(plan, adapter, claimed, run_dir, workers, Heartbeat, judge):
            if fault is not None:
                aborted = fault
            results.append(result)
            for index, finding in enumerate(result.findings, start=1):
                write_counterexample(run_dir, finding, args.adapter, options, claimed.name, index)
            elapsed = result.seconds if workers > 1 else time.perf_counter() - t0
            print("\n".join(area_lines(area, result, elapsed, judge, claimed.name, replay)), flush=True)
            t0 = time.perf_counter()
            if aborted is not None:
                break
    except KeyboardInterrupt:
        print("\nmqconform: interrupted; the run directory is marked incomplete", file=sys.stderr)
        return 130
    finally:
        shutdown(adapter)
        replayer.shutdown()

    exit_code, counts = record_outcomes(run_dir, results, list(plan.areas), claimed.name, judge,
                                        server_version=server_version, aborted=aborted,
                                        set_aside=absent_areas(adapter))
    if exit_code == 3:
        reason = aborted or next((r.unknown for r in results if r.unknown), "")
        print(f"mqconform: {args.adapter}: the implementation did not answer ({reason[:300]}); "
              f"{counts['unknown']} rule(s) unknown", file=sys.stderr)
    print(f"run directory: {out}")
    if not args.no_report:
        from mqconform.commands.report import join_verdicts

        exit_code = join_verdicts(_report(out, args, None if args.strict else registry), exit_code,
                                  "the run directory is complete")
        _say_history_verdicts(out, run_id, claimed.name, absent_areas(adapter))
    return exit_code


def _start_run(out: Path, run_id: str, plan: Any, adapter: Any, claimed: str, options: dict[str, Any],
               workers: int) -> RunDirectory:
    """The run directory with the run's settings, and the run's first line."""
    hyp = plan.hypothesis()
    run_dir = RunDirectory(out, adapter.name, claimed,
                           {"settings": plan.settings_name, "areas": list(plan.areas),
                            "max_examples": hyp.max_examples, "stateful_step_count": hyp.stateful_step_count,
                            "adapter_options": sorted(options), "seed": plan.seed, "workers": workers,
                            **({"shards": plan.shards} if plan.shards > 1 else {})},
                           run_id=run_id)
    run_dir.meta["seed"] = plan.seed
    seed_text = f"seed {plan.seed}" if plan.seed is not None else "seed derandomized"
    print(f"mqconform run {run_id}: adapter {adapter.name} ({adapter.profile}), checked against "
          f"{claimed}, settings {plan.settings_name}, {seed_text}"
          f"{f', {workers} workers' if workers > 1 else ''}"
          f"{f', each area in {plan.shards} parts at once' if plan.shards > 1 else ''}", flush=True)
    return run_dir


def _say_history_verdicts(out: Path, run_id: str, claimed: str, set_aside: dict[str, str]) -> None:
    """The report's history checks may add a verdict on a rule the step checks passed (a known
    deviation or a failure only the whole history shows): then say which rules changed and print the
    `rules:` line again with the report's states, so the run's last figures are the report's."""
    from mqconform.conformance.execution import rules_line
    from mqconform.conformance.judging.verdict import Verdict

    try:
        report = json.loads((out / "report" / "report.json").read_text(encoding="utf-8"))
        lines = (out / "outcomes.jsonl").read_text(encoding="utf-8").splitlines()
        outcomes = {o["rule"]: o["outcome"] for o in map(json.loads, lines)}
    except (OSError, ValueError, KeyError):
        return  # no report was built: join_verdicts said so
    final = dict(outcomes)
    changed = []
    for cell in report.get("cells", []):
        rule = cell["rule"]
        for entry in cell.get("runs", []):
            if entry.get("run") == run_id and rule in final and entry.get("state") != final[rule]:
                changed.append(f"{rule} {final[rule]} -> {entry['state']} ({entry.get('source', 'report')})")
                final[rule] = entry["state"]
    if changed:
        print(f"the report's history checks changed {len(changed)} rule(s): {'; '.join(changed)}")
        print(rules_line(Verdict(final, {}, {}), claimed, set_aside, label="rules with the history checks"))


def _workers(value: str, jobs: int, shards: int = 1) -> int:
    """-n N|auto: the number of worker processes (auto: one per CPU; unset with shards: as many as
    the shards); never more than the jobs (areas times shards)."""
    if value == "1" and shards > 1:
        value = str(shards)
    if value == "auto":
        count = os.cpu_count() or 1
    else:
        try:
            count = int(value)
        except ValueError:
            raise ValueError(f"-n expects a number or auto, got {value!r}") from None
        if count < 1:
            raise ValueError("-n must be at least 1")
    return max(1, min(count, jobs))


def _report(out: Path, args: argparse.Namespace, registry: Any) -> int:
    from mqconform.commands.report import build_report

    return build_report([out], engine=args.engine, master=args.master, out=out / "report",
                        deviations=registry)
