"""The history stage: run directories or a Parquet store in, :class:`PipelineResult` out.

Two engines compute the same statistics (:mod:`.checks.python_engine` in-process,
:mod:`.checks.spark_engine` on the Parquet store); verdicts come from one shared function, and a check
whose rules do not apply to the run's profile (spec ``profiles``) is reported ``not_applicable``. Bad
input (corrupt or truncated line, unknown schema version, incomplete run) raises :class:`BadHistory` unless
``ignore_bad``; then it is excluded and listed in ``PipelineResult.bad``, never counted as a pass.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import attrs

from mqconform.conformance.judging.deviations import Registry
from mqconform.reports.api import BadInput, CheckResult, PipelineResult, RunInfo
from mqconform.reports.checks import definitions
from mqconform.reports.checks import python_engine as checks_python
from mqconform.reports.excuse import excuse
from mqconform.reports.read import store as hstore
from mqconform.reports.read.store import BadHistory

ENGINES = ("python", "spark")

__all__ = ["ENGINES", "BadHistory", "check_runs"]


def check_runs(inputs: list[Path], engine: str = "python", master: str | None = None,
               ignore_bad: bool = False, store: Path | None = None,
               deviations: Registry | None = None) -> PipelineResult:
    """Check run directories and/or history stores with `engine`; optionally ingest into `store`.
    A failing result that entries of `deviations` explain, example by example, is ``deviation``
    (:mod:`.excuse`).

    Implements the history checks of :mod:`.checks.python_engine` (DELIVERY-1, DELIVERY-2, DELIVERY-4,
    DELIVERY-6, DELIVERY-7, DELIVERY-15, RING-17, THROTTLE-7, ADMISSION-3, ADMISSION-7, REDELIVERY-1/2/12/
    19/22). A failing sequence check names its earliest violation, found by the python engine in both
    cases (on Spark, over the failing runs' rows only), so both engines report the same sentence.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    run_data: list[hstore.RunData] = []
    stores: list[Path] = []
    bad: list[BadInput] = []
    for path in inputs:
        path = Path(path)
        if hstore.is_store(path):
            hstore.check_store_version(path)
            stores.append(path)
        else:
            data = hstore.read_run(path)
            run_data.append(data)
            bad.extend(data.bad)
    if bad and not ignore_bad:
        raise BadHistory(bad[0], len(bad) - 1)
    usable = [d for d in run_data if d.usable]
    if store is not None:
        for data in usable:
            hstore.write_run(store, data)
    infos: list[RunInfo] = [d.info for d in run_data]
    for path in stores:
        infos.extend(hstore.store_runs(path))
    runs = {info.run: info for info in infos if info.status == "complete"}
    witnesses: definitions.Witnesses = {}
    if engine == "python":
        stats = _python_stats(usable, stores, witnesses)
    else:
        stats = _spark_stats(usable, stores, store, master)
    checks = gate_by_profile(definitions.results(stats, runs))
    failing = {c.run for c in checks if c.verdict == "fail" and c.check in definitions.WITNESSED}
    if failing and engine != "python":
        _python_stats([d for d in usable if d.info.run in failing], stores, witnesses, failing)
    checks = [attrs.evolve(c, detail=f"{c.detail}; first: {witnesses[key][1]}")
              if c.verdict == "fail" and (key := (c.run, c.machine, c.queue, c.check)) in witnesses else c
              for c in checks]
    checks = excuse(checks, runs, deviations,
                    lambda wanted: _table([d for d in usable if d.info.run in wanted], stores, wanted))
    return PipelineResult(runs=tuple(infos), checks=tuple(checks), bad=tuple(bad), engine=engine)


def _python_stats(usable: list[hstore.RunData], stores: list[Path], witnesses: definitions.Witnesses,
                  runs: set[str] | None = None) -> definitions.Stats:
    """One Arrow table of every input (run directories and stores; only `runs` when given), checked in
    one pass."""
    table = _table(usable, stores, runs)
    return {} if table is None else checks_python.compute_stats(table, witnesses)


def _table(usable: list[hstore.RunData], stores: list[Path], runs: set[str] | None = None) -> Any:
    """The normalised rows of `usable` and of `stores` (only `runs` of the stores when given) as one
    Arrow table of the checks' columns, or None when there are none."""
    import pyarrow as pa

    columns = list(definitions.NEEDED)
    tables = [_as_dictionary(checks_python.rows_table(data.rows).select(columns))
              for data in usable if data.rows]
    tables.extend(hstore.read_store_table(path, columns, dictionary=True, runs=runs) for path in stores)
    return pa.concat_tables(tables) if tables else None


def _as_dictionary(table: Any) -> Any:
    """String columns as dictionaries, the form the store is read in (so the tables concatenate)."""
    import pyarrow as pa

    return pa.table({name: column.dictionary_encode() if pa.types.is_string(column.type) else column
                     for name, column in zip(table.column_names, table.columns, strict=True)})


def _spark_stats(usable: list[hstore.RunData], stores: list[Path], store: Path | None,
                 master: str | None) -> definitions.Stats:
    from mqconform.reports.checks import spark_engine as checks_spark
    from mqconform.reports.spark_session import get_session

    spark = get_session(master)
    total: definitions.Stats = {}
    with tempfile.TemporaryDirectory(prefix="mqconform-store-") as tmp:
        targets = list(stores)
        if usable:
            target = store if store is not None else Path(tmp)
            if store is None:
                for data in usable:
                    hstore.write_run(target, data)
            if target not in targets:
                targets.append(target)
        for path in targets:
            if not hstore.history_files(path):
                continue
            for key, figures in checks_spark.compute_stats(spark, path).items():
                entry = total.setdefault(key, {})
                for name, value in figures.items():
                    entry[name] = entry.get(name, 0) + value
    return total


def gate_by_profile(checks: list[CheckResult]) -> list[CheckResult]:
    """A check evidences only the rules that apply to the run's profile (spec ``profiles``); one whose
    rules all exclude the profile is not applicable (both engines alike)."""
    from mqconform.spec.catalogue import load_catalogue

    catalogue = load_catalogue()
    out = []
    for check in checks:
        applying = tuple(r for r in check.rules
                         if r not in catalogue or catalogue[r].applies_to(check.profile))
        if not applying:
            check = attrs.evolve(check, verdict="not_applicable", count=0,
                                 detail=f"{', '.join(check.rules)} do not apply to profile {check.profile}")
        elif applying != check.rules:
            check = attrs.evolve(check, rules=applying)
        out.append(check)
    return out
