"""`mqconform report`: compliance reports from run directories or a history store.

Writes into --out every format of :data:`mqconform.reports.render.RENDERERS`: index.html (+ rules/, cx/),
junit.xml, report.json and summary.md (and, when an implementation was run in several versions, the
version matrix versions.html / versions.md), and prints the verdict. Exit codes: 0 no failing rule,
1 a rule fails (or is flaky), 2 bad input or usage, 3 Spark could not start. Errors are one line on
stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mqconform.commands._common import fail
from mqconform.text import first_line, one_line

DEFAULT_OUT = Path("mqconform-report")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", type=Path, metavar="RUN_DIR_OR_STORE",
                        help="run directories (or folders of them), or a history store")
    parser.add_argument("--engine", choices=("spark", "python"), default="spark",
                        help="history check engine (default: spark, local mode)")
    parser.add_argument("--master", help="Spark master URL (default: local[*])")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"report directory (default: {DEFAULT_OUT})")
    parser.add_argument("--ignore-bad", action="store_true",
                        help="exclude corrupt or incomplete inputs instead of stopping")
    parser.add_argument("--store", type=Path,
                        help="also ingest the run directories into this Parquet history store")
    parser.add_argument("--deviations", type=Path, action="append", metavar="FILE",
                        help="another known-deviation registry file (repeatable; added to the shipped "
                             "mqconform/conformance/judging/deviations.yaml), for the history checks")
    parser.add_argument("--strict", action="store_true",
                        help="registered known deviations do not excuse a failing history check")


def _spark_failure(exc: BaseException) -> bool:
    """True when `exc` says Spark (or its JVM) could not start, rather than that the input is bad."""
    kind = type(exc)
    names = f"{kind.__module__}.{kind.__name__}".lower()
    if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in ("pyspark", "py4j"):
        return True
    return any(word in names for word in ("spark", "py4j", "java"))


def _expand(inputs: list[Path]) -> list[Path]:
    """Inputs with each plain folder of run directories replaced by the run directories in it."""
    expanded: list[Path] = []
    for path in inputs:
        path = Path(path)
        if (path / "run.json").exists() or (path / "_schema.json").exists() or not path.is_dir():
            expanded.append(path)
            continue
        inner = sorted(p for p in path.iterdir() if (p / "run.json").exists())
        expanded.extend(inner or [path])
    return expanded


def _pipeline(inputs: list[Path], **options: Any) -> Any:
    """The PipelineResult of the history stage (the one loader: :func:`reports.pipeline.check_runs`)."""
    from mqconform.reports.pipeline import check_runs

    return check_runs(inputs, **options)


def run(args: argparse.Namespace) -> int:
    from mqconform.conformance.judging.deviations import DeviationError
    from mqconform.conformance.judging.verdict import load_deviations

    registry = None
    if not getattr(args, "strict", False):
        try:
            registry = load_deviations(getattr(args, "deviations", None))
        except DeviationError as exc:
            return fail(f"report: deviation registry: {exc}")
    return build_report(args.inputs, engine=args.engine, master=args.master, out=args.out,
                        ignore_bad=bool(getattr(args, "ignore_bad", False)),
                        store=getattr(args, "store", None), deviations=registry)


def join_verdicts(report_code: int, exit_code: int, what: str) -> int:
    """A run's (or matrix's) exit code once its report's code is known: a report that could not be
    built is said and changes nothing; a report whose history checks fail a rule no step check did
    makes the exit code 1 (one verdict, the report's: a green run never hides a red report)."""
    if report_code not in (0, 1):
        print(f"mqconform: the report could not be built (see above); {what}", file=sys.stderr)
    elif report_code == 1 and exit_code == 0:
        print("mqconform: the report's history checks fail a rule (listed above): exit 1")
        return 1
    return exit_code


def build_report(inputs: list[Path], *, engine: str, master: str | None, out: Path,
                 ignore_bad: bool = False, store: Path | None = None, deviations: Any = None) -> int:
    """Check the run directories (or store) in `inputs` and write the report into `out`; prints the
    verdict and returns the exit code (as `mqconform report`). `mqconform run`, `matrix` and `soak`
    call it for the report at their end. `deviations`: the known-deviation registry that may excuse a
    failing history check (mqconform.reports.excuse); None: none does."""
    from mqconform.reports.render import RENDERERS, write_report
    from mqconform.reports.render.matrix import LABELS, build_matrix
    from mqconform.spec import SpecError, load_catalogue

    for path in inputs:
        if not Path(path).exists():
            return fail(f"report: {path}: no such run directory or store")
    from mqconform.reports.read.store import BadHistory

    try:
        result = _pipeline(_expand(inputs), engine=engine, master=master, ignore_bad=ignore_bad, store=store,
                           deviations=deviations)
    except KeyboardInterrupt:
        raise
    except BadHistory as exc:
        return fail(f"report: {exc}", 2)
    except Exception as exc:
        if _spark_failure(exc):
            from mqconform.reports.spark_session import jvm_log

            return fail(f"report: Spark could not start (master {master or 'local[*]'}): "
                        f"{type(exc).__name__}: {first_line(exc, 200)} (JVM log: {jvm_log()})", 3)
        return fail(f"report: {one_line(exc, 300)}")
    if not any(run.status == "complete" for run in result.runs):
        more = f" ({len(result.bad)} excluded as bad input)" if result.bad else ""
        return fail(f"report: no usable run in {', '.join(str(p) for p in inputs)}{more}")
    try:
        catalogue = load_catalogue()
    except SpecError as exc:
        return fail(f"report: the spec catalogue is broken: {exc}")
    matrix = build_matrix(result, [rule.id for rule in catalogue])
    out = Path(out)
    try:
        written = write_report(matrix, catalogue, out)
    except OSError as exc:
        return fail(f"report: cannot write {exc.filename or out}: {exc.strerror or exc}")
    counts = matrix.counts()
    shown = ", ".join(f"{n} {LABELS[s]}" for s, n in counts.items() if n)
    print(f"report: {len(matrix.rules)} rules x {len(matrix.implementations)} implementation(s) from "
          f"{len(matrix.runs)} run(s), engine {matrix.engine}: {shown}")
    for cell in matrix.failing_cells():
        first = cell.first_failing
        where = f" first failing run {first.run}" if first else ""
        scenario = f" counterexample {first.scenario}" if first and first.scenario else ""
        print(f"  {LABELS[cell.state]:<15} {cell.rule:<14} {cell.implementation.label}{where}{scenario}")
    if result.bad:
        print(f"  {len(result.bad)} input(s) excluded as bad input (listed in the report)", file=sys.stderr)
    index, *others = (name for name, path in written.items() if path is not None)
    also = ", ".join(file for name in others for file in RENDERERS[name].files)
    print(f"report: {written[index]} (also {also})")
    return 1 if matrix.failing else 0


