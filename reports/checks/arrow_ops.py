"""Arrow helpers the python engine's checks share: a named group-by and a boolean mask as int8."""

from __future__ import annotations

from typing import Any


def agg(table: Any, keys: list[str], specs: dict[str, tuple[str, str]]) -> Any:
    """group_by(keys).aggregate, with output columns named by `specs` (name -> (column, function))."""
    # single-threaded: faster than Arrow's threaded merge on small machines (measured on 2 cores)
    grouped = table.group_by(keys, use_threads=False).aggregate(
        [(col, fn) if col else ([], fn) for col, fn in specs.values()])
    out = {k: grouped[k] for k in keys}
    for name, (col, fn) in specs.items():
        out[name] = grouped[f"{col}_{fn}" if col else fn]
    import pyarrow as pa

    return pa.table(out)


def i8(mask: Any) -> Any:
    import pyarrow.compute as pc

    return pc.cast(pc.fill_null(mask, False), "int8")
