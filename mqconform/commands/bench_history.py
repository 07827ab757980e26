"""The pipeline benchmark's history (`mqconform bench pipeline`): rows built column-wise, no simulation.

:func:`bench_table` builds `rows` normalised rows as an Arrow table with the store schema (whole
messages of 7 rows: send, receive and ack invocations and completions, a counters observation), and
:func:`write_bench_store` writes it as one run of a Parquet history store. The tests' histories with
injected faults are not shipped (tests/reports/histories.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mqconform.history import SCHEMA_VERSION
from mqconform.reference_model.config import DEFAULT_PRIORITY

#: one message = 7 rows: send invoke/ok, receive invoke/ok, ack invoke/ok, a counters observation
#: (the send invocation has the default priority; no schedule, no delivery_count observation)
PATTERN_F = ("send", "send", "receive", "receive", "ack", "ack", "counters")
PATTERN_TYPE = ("invoke", "ok", "invoke", "ok", "invoke", "ok", "ok")
PATTERN_MSG = (True, True, False, True, True, True, False)
PATTERN_RESULT = (None, "accepted", None, None, None, "ok", None)
PATTERN_PROCESS = ("producer", "producer", "c-q", "c-q", "c-q", "c-q", "observer")
PER_EXAMPLE = 100  # messages per example


def bench_table(rows: int, run: str = "bench-run") -> Any:
    """`rows` normalised rows (whole messages of 7 rows) as an Arrow table with the store schema."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from mqconform.reports.read.store import arrow_schema

    n = max(7, rows - rows % 7)
    index = np.arange(n, dtype=np.int64)
    slot = index % 7
    message = index // 7
    example = message // PER_EXAMPLE + 1

    def pattern(values: tuple[Any, ...], kind: Any) -> Any:
        return pc.take(pa.array(values, kind), pa.array(slot))

    msg_ids = pc.binary_join_element_wise("m", pc.cast(pa.array(message % PER_EXAMPLE), pa.string()), "")
    has_msg = pa.array(np.array(PATTERN_MSG)[slot])
    msg = pc.if_else(has_msg, msg_ids, pa.scalar(None, pa.string()))
    is_counters = pa.array(slot == 6)
    zero = pa.scalar(0, pa.int64())
    null_int = pa.scalar(None, pa.int64())
    done = (message % PER_EXAMPLE) + 1
    columns = {
        "run": pa.repeat(pa.scalar(run, pa.string()), n), "profile": pa.repeat(pa.scalar("artemis"), n),
        "machine": pa.repeat(pa.scalar("delivery"), n), "example": pa.array(example),
        "index": pa.array(index), "time": pa.array(index * 1000),
        "process": pattern(PATTERN_PROCESS, pa.string()),
        "type": pattern(PATTERN_TYPE, pa.string()), "f": pattern(PATTERN_F, pa.string()),
        "queue": pa.repeat(pa.scalar("q"), n), "msg": msg,
        "result": pattern(PATTERN_RESULT, pa.string()),
        "tx": pattern((None, None, None, None, False, False, None), pa.bool_()),
        "bound": pa.repeat(pa.scalar(PER_EXAMPLE, pa.int64()), n),
    }
    for name in ("c_message", "c_pending", "c_delivering", "c_scheduled", "c_paged", "c_replaced",
                 "c_killed", "c_expired"):
        columns[name] = pc.if_else(is_counters, zero, null_int)
    columns["c_added"] = pc.if_else(is_counters, pa.array(done), null_int)
    columns["c_acknowledged"] = columns["c_added"]
    columns["in_flight"] = pa.nulls(n, pa.int64())
    columns["priority"] = pc.if_else(pa.array(slot == 0), pa.scalar(DEFAULT_PRIORITY, pa.int64()), null_int)
    columns["scheduled_at"] = columns["delivery_count"] = columns["in_flight"]
    columns["value"] = pa.nulls(n, pa.string())
    schema = arrow_schema()
    return pa.Table.from_arrays([columns[name] for name in schema.names], schema=schema)


def write_bench_store(store: Path, table: Any, run: str = "bench-run", adapter: str = "bench") -> None:
    """Write a bench table as one run of a store (with its runs/<run>.json)."""
    import pyarrow.parquet as pq

    from mqconform.reports.read import store as hstore

    hstore.init_store(store)
    target = hstore.partition_dir(store, adapter, "2026-01-01")
    target.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, target / f"{run}.parquet", row_group_size=1 << 20)
    write_run_meta(store, run, adapter)


def write_run_meta(store: Path, run: str, adapter: str) -> None:
    (store / "runs").mkdir(parents=True, exist_ok=True)
    (store / "runs" / f"{run}.json").write_text(json.dumps({
        "v": SCHEMA_VERSION, "run": run, "adapter": adapter, "profile": "artemis", "status": "complete",
        "started": "2026-01-01T00:00:00Z", "exit_code": 0, "versions": {}, "outcomes": []}))
