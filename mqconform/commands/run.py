"""`mqconform run`: the conformance suite against one adapter, a run directory and a report.

Exit codes: 0 every applicable rule holds, 1 violations, 2 usage or configuration error,
3 infrastructure (the implementation could not be reached, or answered `info`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from mqconform.adapters.contract import AdapterError
from mqconform.adapters.registry import AdapterLoadError
from mqconform.commands._common import (
    adapter_options,
    add_adapter_arguments,
    add_shrink_argument,
    fail,
)
from mqconform.conformance.exploring.runner import MAX_RERUNS
from mqconform.conformance.judging.deviations import DeviationError
from mqconform.history import new_run_id
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


def run(args: argparse.Namespace) -> int:
    from mqconform.conformance.execution import area_lines
    from mqconform.conformance.judging.verdict import absent_areas, load_deviations
    from mqconform.conformance.plan import RunPlan
    from mqconform.conformance.run import Run
    from mqconform.reference_model.errors import ModelMisuse

    try:
        options = adapter_options(args)
        plan = RunPlan.build(args.adapter, options, profile=args.profile, settings_name=args.settings,
                             areas=args.areas, max_examples=args.max_examples,
                             max_findings=args.max_findings, seed=args.seed,
                             shrink_seconds=args.shrink_seconds, shards=args.shards)
        workers = _workers(args.workers, len(plan.areas) * plan.shards, plan.shards)
        run_id = new_run_id()
        out = args.out if args.out is not None else Path("mqconform-runs") / run_id
        registry = load_deviations(args.deviations)
    except DeviationError as exc:
        return fail(f"deviation registry: {exc}")
    except (ModelMisuse, ValueError) as exc:
        return fail(str(exc))
    with Run(plan, registry=registry, strict=bool(args.strict), workers=workers, out=out, run_id=run_id,
             watch=Heartbeat) as run:
        try:
            run.open()
        except (AdapterLoadError, ModelMisuse, ValueError) as exc:
            return fail(str(exc))
        except AdapterError as exc:
            return fail(f"{args.adapter}: cannot reach the implementation: {exc}", 3)
        judge, claimed = run.judge, run.claimed
        assert judge is not None and claimed is not None
        _say_start(run)

        def replay(finding: Any) -> str:
            return f"mqconform scenario {out / (finding.scenario_path or '')} --adapter {args.adapter}"

        try:
            for event in run.areas():
                print("\n".join(area_lines(event.area, event.result, event.seconds, judge, claimed.name,
                                           replay)), flush=True)
        except KeyboardInterrupt:
            print("\nmqconform: interrupted; the run directory is marked incomplete", file=sys.stderr)
            return 130
    exit_code, counts = run.finish()
    if exit_code == 3:
        reason = run.aborted or next((r.unknown for r in run.results if r.unknown), "")
        print(f"mqconform: {args.adapter}: the implementation did not answer ({reason[:300]}); "
              f"{counts['unknown']} rule(s) unknown", file=sys.stderr)
    print(f"run directory: {out}")
    if not args.no_report:
        from mqconform.commands.report import join_verdicts

        exit_code = join_verdicts(_report(out, args, None if args.strict else registry), exit_code,
                                  "the run directory is complete")
        _say_history_verdicts(out, run_id, claimed.name, absent_areas(run.adapter))
    return exit_code


def _say_start(run: Any) -> None:
    """The run's first line."""
    plan, adapter, workers = run.plan, run.adapter, run.workers
    seed_text = f"seed {plan.seed}" if plan.seed is not None else "seed derandomized"
    print(f"mqconform run {run.run_id}: adapter {adapter.name} ({adapter.profile}), checked against "
          f"{run.claimed.name}, settings {plan.settings_name}, {seed_text}"
          f"{f', {workers} workers' if workers > 1 else ''}"
          f"{f', each area in {plan.shards} parts at once' if plan.shards > 1 else ''}", flush=True)


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
