"""Known deviations for the report's history checks: a failing result becomes ``deviation`` only when
every example that fails it is explained by a registered entry that names the check (``history:`` in
mqconform/conformance/judging/deviations.yaml).

The engines compute one result per (run, machine, queue, check). To know which examples fail it, the
python engine checks the failing runs' rows once more with each example as a run of its own (every
statistic is a sum over examples, so the split is exact); this is the same on both engines, as the
witnesses of the sequence checks are (:mod:`.pipeline`). An example's operations, as recorded (the
``invoke`` records of every process but the observer, in history order), are replayed on the model of
the run's profile, and the entry's shape is asked of that replay
(:meth:`mqconform.conformance.judging.deviations.Deviation.excuses`). One example that no entry explains keeps
the result failing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mqconform.conformance.judging.deviation_shapes import scenario_trace
from mqconform.conformance.judging.deviations import Deviation, Registry, claimed_profile
from mqconform.reports.api import CheckResult, RunInfo
from mqconform.reports.checks import definitions
from mqconform.reports.checks import python_engine as engine

#: joins a run id and an example number into the run key of the per-example pass
_SEP = "\u001f"
Key = tuple[str, str, str | None, str]  # run, machine, queue, check


def excuse(checks: Sequence[CheckResult], runs: Mapping[str, RunInfo], registry: Registry | None,
           rows_of: Callable[[set[str]], Any]) -> list[CheckResult]:
    """`checks` with each failing result that registered entries explain turned into ``deviation``
    (its detail names the entries). `rows_of(runs)`: an Arrow table of those runs' normalised rows
    (columns :data:`definitions.NEEDED`)."""
    if registry is None or not len(registry):
        return list(checks)
    candidates: dict[Key, tuple[Deviation, ...]] = {}
    for check in checks:
        info = runs.get(check.run)
        if check.verdict != "fail" or info is None:
            continue
        entries = registry.for_history(check.check, info.adapter, info.versions.get("implementation", ""),
                                       info.profile, claimed_profile(info.adapter) or info.profile)
        if entries:
            candidates[(check.run, check.machine, check.queue, check.check)] = entries
    if not candidates:
        return list(checks)
    table = rows_of({run for run, _, _, _ in candidates})
    if table is None:
        return list(checks)
    # only the areas of the candidates: whole examples, so the per-example split stays exact
    table = _plain(table)
    table = _in_areas(table, {machine for _, machine, _, _ in candidates})
    failing = _failing_examples(table, set(candidates))
    steps = _operations(table, {(run, machine, example) for (run, machine, _, _), examples in failing.items()
                                for example in examples})
    out = []
    for check in checks:
        key = (check.run, check.machine, check.queue, check.check)
        examples = failing.get(key)
        if key not in candidates or not examples:
            out.append(check)
            continue
        profile = runs[check.run].profile
        used: list[Deviation] = []
        for example in examples:
            trace = scenario_trace(steps.get((check.run, check.machine, example), []), profile)
            entry = next((d for d in candidates[key] if d.excuses(check.check, check.machine, trace)), None)
            if entry is None:
                break
            if entry not in used:
                used.append(entry)
        else:
            why = "; ".join(f"{d.describe()} [{d.location}]" for d in used)
            out.append(attrs.evolve(check, verdict="deviation",
                                    detail=f"{check.detail} (examples {_numbers(examples)}); "
                                           f"known deviation: {why}"))
            continue
        out.append(check)
    return out


def _failing_examples(table: Any, keys: set[Key]) -> dict[Key, list[int]]:
    """For each result key, the examples whose own statistics fail the check, in order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    split = pc.binary_join_element_wise(table["run"], pc.cast(table["example"], pa.string()), _SEP)
    stats = engine.compute_stats(table.set_column(table.column_names.index("run"), "run", split))
    found: dict[Key, list[int]] = {}
    for (run_example, machine, queue, check), figures in stats.items():
        run, _, example = run_example.rpartition(_SEP)
        key = (run, machine, queue, check)
        if key not in keys:
            continue
        full = {name: int(figures.get(name, 0)) for name in definitions.STATS[check]}
        if definitions.verdict(check, full)[0] == "fail":
            found.setdefault(key, []).append(int(example))
    return {key: sorted(examples) for key, examples in found.items()}


Example = tuple[str, str, int]  # run, machine, example


def _operations(table: Any, wanted: set[Example]) -> dict[Example, list[dict[str, Any]]]:
    """The scenario steps of each wanted (run, machine, example): its recorded operations (invoke
    records of every process but the observer), in history order."""
    import pyarrow.compute as pc

    if not wanted:
        return {}
    import pyarrow as pa

    mask = pc.and_(pc.equal(table["type"], "invoke"), pc.not_equal(table["process"], "observer"))
    for column, values in (("run", {r for r, _, _ in wanted}), ("machine", {m for _, m, _ in wanted})):
        mask = pc.and_(mask, pc.is_in(table[column], pa.array(sorted(values))))
    mask = pc.and_(mask, pc.is_in(table["example"], pa.array(sorted({e for _, _, e in wanted}), pa.int64())))
    rows = table.select(["run", "machine", "example", "index", "f", "value"]).filter(mask).to_pylist()
    steps: dict[Example, list[tuple[int, dict[str, Any]]]] = {}
    for row in rows:
        key = (str(row["run"]), str(row["machine"]), int(row["example"]))
        if key in wanted:
            value = json.loads(row["value"]) if row["value"] is not None else None
            steps.setdefault(key, []).append((int(row["index"]), {str(row["f"]): value}))
    return {key: [step for _, step in sorted(found, key=lambda item: item[0])]
            for key, found in steps.items()}


def _in_areas(table: Any, machines: set[str]) -> Any:
    """The rows of `table` whose machine (area) is one of `machines`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return table.filter(pc.is_in(table["machine"], pa.array(sorted(machines))))


def _plain(table: Any) -> Any:
    """`table` with its dictionary-encoded string columns (as the store is read) decoded."""
    import pyarrow as pa

    return pa.table({name: column.cast(column.type.value_type) if pa.types.is_dictionary(column.type)
                     else column for name, column in zip(table.column_names, table.columns, strict=True)})


def _numbers(examples: Sequence[int]) -> str:
    shown = ", ".join(map(str, examples[:5]))
    return shown + (f" and {len(examples) - 5} more" if len(examples) > 5 else "")
