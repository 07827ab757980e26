"""`mqconform soak`: a concurrent Jepsen-style workload with a final drain, checked by the pipeline.

See :mod:`mqconform.soak` for the workload. The history is checked twice over the same records: the
report pipeline (total-queue, lost, delivery-after-ack: DELIVERY-2, DELIVERY-6, DELIVERY-7,
DELIVERY-15) and the soak's own accounting, which says where acknowledged messages were lost.
The default engine is python: a soak is one run, and its checks are linear folds that need no JVM
(``--engine spark`` gives the same figures).

Exit codes (as `mqconform run`): 0 no violation, 1 acknowledged messages lost (where the broker
promises durability) or another violation, 2 usage, 3 broker unreachable or the drain did not
finish (the verdict is unknown).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from mqconform.adapters.contract import AdapterError
from mqconform.adapters.registry import AdapterLoadError, load_adapter
from mqconform.commands._common import adapter_options, add_adapter_arguments, fail
from mqconform.history import RunDirectory, new_run_id, write_json_atomic
from mqconform.text import one_line

DEFAULT_ADAPTER = "nats"
FAULTS = ("restart",)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min)?\s*$")


def duration(text: str) -> float:
    """'60s', '2m', '500ms' or '3' (seconds) to seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"bad duration {text!r} (e.g. 60s, 2m, 500ms)")
    scale = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "min": 60.0}[match.group(2)]
    return float(match.group(1)) * scale


def faults(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in FAULTS]
    if unknown or not names:
        bad = (unknown or [text])[0]
        raise argparse.ArgumentTypeError(f"unknown fault {bad!r} (known: {', '.join(FAULTS)})")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_adapter_arguments(parser, DEFAULT_ADAPTER)
    parser.add_argument("--duration", type=duration, default=10.0, metavar="TIME",
                        help="how long producers send, e.g. 60s, 2m (default: 10s)")
    parser.add_argument("--producers", type=int, default=2, help="producer threads (default: 2)")
    parser.add_argument("--consumers", type=int, default=2, help="consumer threads (default: 2)")
    parser.add_argument("--faults", type=faults, default=(), metavar="LIST",
                        help="faults to inject: restart (the broker the command started: embedded nats)")
    parser.add_argument("--fault-interval", type=duration, default=None, metavar="TIME",
                        help="time between restarts (default: duration / 4, at least 1s)")
    parser.add_argument("--fault-down", type=duration, default=0.3, metavar="TIME",
                        help="how long the broker stays down per restart (default: 0.3s)")
    parser.add_argument("--quiesce", type=duration, default=0.5, metavar="TIME",
                        help="pause between stopping the clients and the drain (default: 0.5s)")
    parser.add_argument("--drain-timeout", type=duration, default=30.0, metavar="TIME",
                        help="bound on the final drain (default: 30s)")
    parser.add_argument("--size", type=int, default=100, help="message size in bytes (default: 100)")
    parser.add_argument("--out", type=Path, help="run directory (default: mqconform-runs/<run id>)")
    parser.add_argument("--engine", choices=("python", "spark"), default="python",
                        help="history check engine (default: python: one run, linear checks, no JVM)")
    parser.add_argument("--master", help="Spark master URL (default: local[*])")
    parser.add_argument("--no-report", action="store_true", help="skip the HTML/JUnit/JSON report")


def _usage_problem(args: argparse.Namespace) -> str | None:
    if args.producers < 1 or args.consumers < 1:
        return "--producers and --consumers must be at least 1"
    if args.duration <= 0:
        return "--duration must be positive"
    if args.size < 0:
        return "--size must be >= 0"
    return None


def run(args: argparse.Namespace) -> int:
    from mqconform import soak

    problem = _usage_problem(args)
    if problem:
        return fail(f"soak: {problem}")
    try:
        given = adapter_options(args)
    except argparse.ArgumentTypeError as exc:
        return fail(f"soak: {exc}")
    managed = soak.managed_broker_for(args.adapter, given)
    if args.faults and not managed:
        return fail("soak: --faults restart needs a broker the command starts itself "
                    "(the nats adapter without --url or MQCONFORM_NATS_URL)")
    options = soak.default_options(args.adapter, given)
    run_id = new_run_id()
    out = args.out if args.out is not None else Path("mqconform-runs") / run_id

    broker = None
    controller = None
    try:
        try:
            if managed:
                broker = soak.ManagedNats(options.get("server_bin"))
                broker.start()
                options["url"] = broker.url
            controller = load_adapter(args.adapter, **options)
        except AdapterLoadError as exc:
            if "shared_namespace" in str(exc):
                return fail(f"soak: adapter {args.adapter!r} cannot share one queue between instances "
                            "(it has no shared_namespace option)")
            return fail(f"soak: {exc}")
        except AdapterError as exc:
            return fail(f"soak: {exc}", 3)
        namespace = f"mqc-soak-{run_id}"
        try:
            controller.open(namespace)
        except AdapterError as exc:
            return fail(f"soak: cannot reach the broker: {exc}", 3)
        declared = controller.declare_queue(_queue_config())
        if not declared.is_ok:
            code = 3 if declared.type == "info" else 2
            return fail(f"soak: {args.adapter}: declaring the soak queue failed: {declared.error}", code)
        interval = args.fault_interval or max(1.0, args.duration / 4)
        config = soak.SoakConfig(
            adapter=args.adapter, options=options, namespace=namespace, duration_s=args.duration,
            producers=args.producers, consumers=args.consumers, faults=tuple(args.faults),
            fault_interval_s=interval, fault_down_s=args.fault_down, quiesce_s=args.quiesce,
            drain_timeout_s=args.drain_timeout, message_size=args.size)
        settings = _recorded_settings(args, interval, given, managed)
        try:
            run_dir = RunDirectory(out, controller.name, controller.profile, {"soak": settings},
                                   run_id=run_id)
        except OSError as exc:
            return fail(f"soak: cannot write the run directory {out}: {exc.strerror or exc}")
        history = run_dir.history(soak.MACHINE, threadsafe=True)
        print(f"mqconform soak {run_id}: adapter {controller.name} ({controller.profile}), "
              f"{args.producers} producers, {args.consumers} consumers, {args.duration:g} s"
              f"{', faults: ' + ','.join(args.faults) + f' every {interval:g} s' if args.faults else ''}",
              flush=True)
        try:
            result = soak.run_workload(config, history, broker)
        finally:
            history.close()
        return _judge(args, out, run_dir, result, options)
    except KeyboardInterrupt:
        print("\nmqconform: interrupted; the run directory is marked incomplete", file=sys.stderr)
        return 130
    finally:
        if controller is not None:
            _dispose(controller)
        if broker is not None:
            broker.close()


def _recorded_settings(args: argparse.Namespace, interval: float, given: dict[str, Any],
                       managed: bool) -> dict[str, Any]:
    """The soak's settings as run.json records them."""
    return {"duration_s": args.duration, "producers": args.producers, "consumers": args.consumers,
            "faults": list(args.faults), "fault_interval_s": interval,
            "fault_down_s": args.fault_down,
            "drain_timeout_s": args.drain_timeout, "adapter_options": sorted(given),
            "managed_broker": managed}


def _judge(args: argparse.Namespace, out: Path, run_dir: RunDirectory, result: Any,
           options: dict[str, Any]) -> int:
    """Analyse the finished workload's history, finish the run directory, print the summary and the
    verdict (the pipeline's checks included) and the report; the exit code."""
    from mqconform import soak

    report = soak.analyse(out / "history" / f"{soak.MACHINE}.jsonl", result.run_window_ns)
    durable = soak.promises_durability(args.adapter, options)
    code = _exit_code(report, result, durable)
    run_dir.finish(code, soak=report.figures(), lost_ids=report.lost[:1000], problems=result.problems)
    _print_summary(report, result, durable)
    checks_code = _pipeline_checks(out, args, durable)  # reads the finished run directory
    if checks_code is not None and code == 0:
        code = checks_code
        run_dir.meta["exit_code"] = code
        write_json_atomic(out / "run.json", run_dir.meta)
    verdict = {0: "PASS", 1: "FAIL", 3: "UNKNOWN"}.get(code, "ERROR")
    print(f"verdict: {verdict}")
    print(f"run directory: {out}")
    if not args.no_report:
        _report(out, args)
    return code


def _queue_config() -> Any:
    from mqconform.reference_model.config import QueueConfig
    from mqconform.soak import QUEUE

    return QueueConfig(name=QUEUE)


def _dispose(adapter: Any) -> None:
    try:
        shutdown = getattr(adapter, "shutdown", None)
        (shutdown if callable(shutdown) else adapter.close)()
    except Exception:
        pass


def _exit_code(report: Any, result: Any, durable: bool) -> int:
    """1 for a violation; 3 when the drain did not finish (lost ids may still be queued) or a thread
    could not do its job; 0 otherwise."""
    if report.unexpected or report.refused_delivered:
        return 1
    if result.problems or not result.drain_empty:
        return 3
    return 1 if report.lost and durable else 0


def _print_summary(report: Any, result: Any, durable: bool) -> None:
    completed = sum(report.ops.get(f, {}).get(t, 0) for f in ("send", "receive", "ack")
                    for t in ("ok", "fail", "info"))
    seconds = max(result.run_s, 1e-9)
    print(f"  ops: {completed} client operations; during the {result.run_s:.1f} s run "
          f"{report.run_ops / seconds:,.0f} ops/s, {report.run_sends_ok / seconds:,.0f} sends accepted/s")
    for f in ("send", "receive", "ack"):
        counts = report.ops.get(f, {})
        print(f"    {f:<8} ok {counts.get('ok', 0):>7}  fail {counts.get('fail', 0):>5}  "
              f"info {counts.get('info', 0):>5}")
    if result.restarts:
        print(f"  nemesis: {result.restarts} broker restart(s)")
    state = "queue empty" if result.drain_empty else "NOT empty when the drain ran out of time"
    print(f"  drain: {result.drained} message(s) in {result.drain_s:.1f} s, {state}")
    print(f"  attempted {report.attempted}, acknowledged {report.acknowledged}, failed {report.failed}, "
          f"indeterminate {report.indeterminate}; delivered {report.delivered} "
          f"({report.distinct_delivered} distinct), lost {len(report.lost)}, duplicated {report.duplicated}, "
          f"recovered {report.recovered}, unexpected {report.unexpected}")
    if report.lost:
        label = "LOST" if result.drain_empty else "NOT DRAINED (lost or still queued)"
        note = "" if durable else " (the broker does not promise durability here: not a violation)"
        print(f"  {label} {len(report.lost)} acknowledged message(s){note}: {', '.join(report.lost[:10])}"
              f"{' ...' if len(report.lost) > 10 else ''}")
        for producer, where in sorted(report.lost_by_producer.items()):
            print(f"    producer {producer}: prefix {where['prefix']}, middle {where['middle']}, "
                  f"postfix {where['postfix']}")
        phases = sorted(report.lost_by_phase.items())
        print("    when sent: " + ", ".join(f"{n} {phase}" for phase, n in phases))
    for problem in result.problems:
        print(f"  problem: {problem}")


def _pipeline_checks(out: Path, args: argparse.Namespace, durable: bool) -> int | None:
    """Print the pipeline's verdicts; 1 when a check fails, None otherwise (or when it cannot run).

    After the soak's drain the pipeline's ``lost`` check is Jepsen's total-queue lost (acknowledged
    sends never delivered), and an ack answered ``info`` counts as possibly consumed, so every failing
    check fails the soak; ``lost`` only where the broker promises durability (a restart of an
    in-memory broker loses messages by design).
    """
    try:
        from mqconform.reports.pipeline import check_runs

        result = check_runs([out], engine=args.engine, master=args.master)
    except Exception as exc:  # the pipeline is another stage: report, do not hide the soak's figures
        print(f"mqconform: soak: the history checks could not run: {one_line(exc, 200)}",
              file=sys.stderr)
        return None
    failed = False
    print(f"  checks ({result.engine} engine):")
    for check in result.checks:
        excused = check.check == "lost" and not durable
        failed = failed or (check.verdict == "fail" and not excused)
        note = " (no durability promised: not a violation)" if excused and check.verdict == "fail" else ""
        print(f"    {check.check:<19} {check.verdict:<15} [{', '.join(check.rules)}] {check.detail}{note}")
    return 1 if failed else None


def _report(out: Path, args: argparse.Namespace) -> None:
    from mqconform.commands.report import build_report

    if build_report([out], engine=args.engine, master=args.master, out=out / "report") not in (0, 1):
        print("mqconform: the report could not be built (see above); the run directory is complete",
              file=sys.stderr)
