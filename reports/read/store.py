"""History store: run directories (JSON Lines) in, normalised rows and a Parquet store out.

Reading a run directory (:func:`read_run`) turns each history record into one *normalised row*
(:data:`COLUMNS`). Normalisation only resolves context a single record cannot carry, in one pass in
record order, so that every check is a group-by or a key join afterwards:

- ``queue``: the queue of a consumer operation (receive, ack, nack, rollback, commit, close, close_session
  carry ``queue: null``; the consumer's queue comes from its ``consumer`` declaration);
- ``msg``: the message id of the operation (send/ack/nack invocations carry it in ``value.id``; the
  completion row gets its invocation's id; a receive completion carries the delivered id; a
  ``delivery_count`` observation carries it in ``value.id``);
- ``result``: the completion value when it is a string (``accepted``, ``paged``, ``dropped``, ``ok``...)
  or the error of a ``fail``/``info`` completion; ``deleted`` for a ``delete`` or ``move`` by id
  answered true;
- ``tx``: whether an ack was made inside a transaction;
- ``bound``: the ring size in effect for the row's queue (``queue`` declaration ``ring_size``,
  ``set_ring_size``; -1 = not a ring) or the throttle's high threshold (``throttle`` max_sessions);
- ``c_*``: the fields of a ``counters`` observation; ``in_flight``: of a ``throttle_state`` one;
- ``priority``, ``scheduled_at``: of a ``send`` invocation, its message's priority (``value.priority``,
  else the suite's default :data:`DEFAULT_PRIORITY`) and ``value.scheduled_at_ms`` (null when not
  scheduled), for the order checks (DELIVERY-3, DELIVERY-4); null on every other row;
- ``delivery_count``: ``value.count`` of a ``delivery_count`` observation (the implementation's count
  right after a delivery, REDELIVERY-1, REDELIVERY-12, REDELIVERY-19, REDELIVERY-22).

The Parquet store (:func:`ingest`) is a directory::

    _schema.json                                       store schema version + columns
    runs/<run>.json                                    run.json, outcomes and source of each run
    history/adapter=<a>/run_date=<yyyy-mm-dd>/<run>.parquet

One file per run, written to a temporary name and renamed, so re-ingesting a run replaces it
(idempotent). Store schema versions: 1 (without ``priority``, ``scheduled_at``, ``delivery_count``), 2
(without ``c_expired``) and 3. An older store stays readable (its files read the newer columns as
nulls, also next to newer files of re-ingested runs) and :func:`init_store` upgrades its
``_schema.json``; any other version is refused. Bad input (corrupt or truncated line, unknown schema
version, incomplete run) is returned as :class:`BadInput` by file and line; every example touched by
a bad line is excluded, so it can never count as a pass.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from mqconform.history import HISTORY_FIELDS, SCHEMA_VERSION
from mqconform.reference_model.config import DEFAULT_PRIORITY
from mqconform.reports.api import BadInput, RunInfo

#: Version of the Parquet store layout and columns (independent of the JSONL schema version).
STORE_SCHEMA_VERSION = 3
#: Store versions this code reads: a newer one only adds columns, read as nulls from older files.
READABLE_STORE_VERSIONS = (1, 2, STORE_SCHEMA_VERSION)
SCHEMA_FILE = "_schema.json"

COUNTER_FIELDS = {
    "c_message": "message_count", "c_pending": "pending_count", "c_delivering": "delivering_count",
    "c_scheduled": "scheduled_count", "c_paged": "paged_count", "c_added": "added",
    "c_acknowledged": "acknowledged", "c_replaced": "replaced", "c_killed": "killed",
    "c_expired": "expired",
}

#: The columns of a normalised row, with their Arrow types (``adapter`` and ``run_date`` are the
#: partition columns of the store and are stored in the directory names, not in the files).
COLUMNS: dict[str, str] = {
    "run": "string", "adapter": "string", "profile": "string", "machine": "string",
    "example": "int64", "index": "int64", "time": "int64", "process": "string", "type": "string",
    "f": "string", "queue": "string", "msg": "string", "result": "string", "tx": "bool",
    "bound": "int64", **{name: "int64" for name in COUNTER_FIELDS}, "in_flight": "int64",
    "priority": "int64", "scheduled_at": "int64", "delivery_count": "int64", "value": "string",
}
PARTITIONS = ("adapter", "run_date")
CONSUMER_OPS = frozenset({"receive", "ack", "nack", "rollback", "commit", "close", "close_session"})

Row = dict[str, Any]


class BadHistory(Exception):
    """Bad input without --ignore-bad: the message is one line naming file, line and problem."""

    def __init__(self, bad: BadInput, more: int = 0) -> None:
        where = f"{bad.path}:{bad.line}" if bad.line is not None else bad.path
        extra = f" (and {more} more bad input{'s' if more != 1 else ''}; --ignore-bad excludes them)" \
            if more else " (--ignore-bad excludes it)"
        super().__init__(f"{where}: {bad.problem}{extra}")
        self.bad = bad


@attrs.define
class RunData:
    """One run directory read into memory: its info, normalised rows and what was bad."""

    info: RunInfo
    rows: list[Row]
    bad: list[BadInput]
    meta: dict[str, Any]

    @property
    def usable(self) -> bool:
        """Complete and readable (bad lines only exclude their examples)."""
        return self.info.status == "complete"


# ---------------------------------------------------------------------------------------- reading
def read_run(path: Path) -> RunData:
    """Read and normalise one run directory (see the module docstring)."""
    bad: list[BadInput] = []
    meta = _read_meta(path, bad)
    info = RunInfo(
        run=str(meta.get("run", path.name)), adapter=str(meta.get("adapter", "unknown")),
        profile=str(meta.get("profile", "unknown")), path=str(path),
        status="complete" if meta.get("status") == "complete" and not bad else "incomplete",
        started=meta.get("started"), exit_code=meta.get("exit_code"),
        versions={str(k): str(v) for k, v in (meta.get("versions") or {}).items()},
        outcomes=tuple(_read_outcomes(path / "outcomes.jsonl", bad)),
    )
    if bad or meta.get("status") != "complete":
        if not bad:
            bad.append(BadInput(str(path / "run.json"), None,
                                f"incomplete run (status {meta.get('status')!r}): excluded"))
        return RunData(info, [], bad, meta)
    rows: list[Row] = []
    history = path / "history"
    for file in sorted(history.glob("*.jsonl")) if history.is_dir() else []:
        rows.extend(_read_history(file, info, bad))
    return RunData(info, rows, bad, meta)


def _read_meta(path: Path, bad: list[BadInput]) -> dict[str, Any]:
    file = path / "run.json"
    if not path.is_dir():
        bad.append(BadInput(str(path), None, "not a run directory or history store"))
        return {}
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        bad.append(BadInput(str(file), None, "missing run.json: not a run directory"))
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        bad.append(BadInput(str(file), None, f"corrupt run.json ({exc})"))
        return {}
    if not isinstance(meta, dict):
        bad.append(BadInput(str(file), None, "corrupt run.json (not an object)"))
        return {}
    if meta.get("v") != SCHEMA_VERSION:
        bad.append(BadInput(str(file), None, f"unknown schema version {meta.get('v')!r}"))
    return meta


def _read_outcomes(file: Path, bad: list[BadInput]) -> Iterator[dict[str, object]]:
    if not file.exists():
        return
    with file.open(encoding="utf-8", errors="replace") as stream:
        for number, line in enumerate(stream, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                bad.append(BadInput(str(file), number, "corrupt or truncated JSON line"))
                continue
            if isinstance(rec, dict) and rec.get("v") == SCHEMA_VERSION:
                yield rec
            else:
                bad.append(BadInput(str(file), number, f"unknown schema version {_version(rec)!r}"))


def _version(rec: object) -> object:
    return rec.get("v") if isinstance(rec, dict) else None


def _parse(line: str) -> tuple[dict[str, Any] | None, str]:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError:
        return None, "corrupt or truncated JSON line"
    if not isinstance(rec, dict):
        return None, "corrupt record (not an object)"
    if rec.get("v") != SCHEMA_VERSION:
        return None, f"unknown schema version {rec.get('v')!r}"
    missing = [k for k in HISTORY_FIELDS if k not in rec]
    if missing:
        return None, f"record without {', '.join(missing)}"
    if not isinstance(rec["example"], int) or not isinstance(rec["index"], int):
        return None, "record with a non-integer example or index"
    return rec, ""


def _read_history(file: Path, info: RunInfo, bad: list[BadInput]) -> list[Row]:
    """Parse one history file; examples next to a bad line are excluded (reported once each)."""
    records: list[dict[str, Any] | None] = []
    bad_lines: list[int] = []
    with file.open(encoding="utf-8", errors="replace") as stream:
        for number, line in enumerate(stream, 1):
            rec, problem = _parse(line)
            records.append(rec)
            if rec is None:
                bad.append(BadInput(str(file), number, problem))
                bad_lines.append(number - 1)
    tainted: set[int] = set()
    for pos in bad_lines:  # the examples of the nearest good records on both sides
        for step in (-1, 1):
            i = pos + step
            while 0 <= i < len(records) and records[i] is None:
                i += step
            if 0 <= i < len(records):
                tainted.add(int(records[i]["example"]))  # type: ignore[index]
    for example in sorted(tainted):
        bad.append(BadInput(str(file), None, f"example {example} excluded: it holds a bad line"))
    good = (r for r in records if r is not None and r["example"] not in tainted)
    return list(normalise(good, info.adapter))


# ---------------------------------------------------------------------------------- normalising
def normalise(records: Iterable[dict[str, Any]], adapter: str | None = None) -> Iterator[Row]:
    """Resolve per-record context (consumer queue, message id, bound) in record order."""
    state: dict[tuple[str, str, int], _ExampleState] = {}
    for rec in records:
        key = (str(rec["run"]), str(rec["machine"]), int(rec["example"]))
        st = state.get(key)
        if st is None:
            state.clear()  # examples are written one after another
            st = state[key] = _ExampleState()
        yield st.row(rec, adapter)


class _ExampleState:
    def __init__(self) -> None:
        self.consumer_queue: dict[str, str] = {}
        self.bound: dict[str, int] = {}
        self.pending: dict[str, tuple[str | None, bool | None]] = {}  # process -> invoke's msg, tx

    def row(self, rec: dict[str, Any], adapter: str | None) -> Row:
        f, type_, value = rec["f"], rec["type"], rec["value"]
        process = str(rec["process"])
        queue = rec["queue"]
        msg: str | None = None
        tx: bool | None = None
        result: str | None = None
        if f in CONSUMER_OPS and process in self.consumer_queue:
            queue = self.consumer_queue[process]
        if type_ == "invoke":
            if isinstance(value, dict):
                msg = _str(value.get("id"))
                tx = bool(value.get("tx")) if f in ("ack", "nack") else None
                self._declare(f, value)
            self.pending[process] = (msg, tx)
        else:
            msg, tx = self.pending.pop(process, (None, None))
            if isinstance(value, str):
                result = value
            elif f in ("delete", "move") and type_ == "ok" and value is True:
                # the message left its queue (a delete by id, DELIVERY-31; a move to another queue,
                # DELIVERY-48, acknowledged at its source): a way out for `lost`
                result = "deleted"
            if f == "receive" and type_ == "ok":
                msg = _str(value)
            elif f == "delivery_count" and isinstance(value, dict):
                msg = _str(value.get("id"))
        row: Row = {
            "run": rec["run"], "adapter": adapter if adapter is not None else rec["adapter"],
            "profile": rec["profile"], "machine": rec["machine"], "example": rec["example"],
            "index": rec["index"], "time": rec["time"], "process": process, "type": type_, "f": f,
            "queue": queue, "msg": msg, "result": result, "tx": tx,
            "bound": self.bound.get(queue) if isinstance(queue, str) else None,
            "value": json.dumps(value, separators=(",", ":"), default=str),
        }
        row.update(_value_columns(f, type_, value))
        return row

    def _declare(self, f: str, value: dict[str, Any]) -> None:
        if f == "consumer" and isinstance(value.get("name"), str) and isinstance(value.get("queue"), str):
            self.consumer_queue[value["name"]] = value["queue"]
        elif f == "queue" and isinstance(value.get("name"), str):
            size = _int(value.get("ring_size"))
            self.bound[value["name"]] = size if size is not None else -1
        elif f == "set_ring_size" and isinstance(value.get("queue"), str):
            size = _int(value.get("size"))
            self.bound[value["queue"]] = size if size is not None else -1
        elif f == "throttle" and isinstance(value.get("name"), str):
            high = _int(value.get("max_sessions"))
            if high is not None:
                self.bound[value["name"]] = high


#: the columns read from a record's value, all null unless the record is of their kind
VALUE_COLUMNS: Row = dict.fromkeys(
    (*COUNTER_FIELDS, "in_flight", "priority", "scheduled_at", "delivery_count"))


def _value_columns(f: str, type_: str, value: Any) -> Row:
    """The integer columns read from a record's value (see the module docstring)."""
    out = dict(VALUE_COLUMNS)
    if not isinstance(value, dict):
        return out
    if f == "counters":
        out.update({column: _int(value.get(field)) for column, field in COUNTER_FIELDS.items()})
    elif f == "throttle_state":
        out["in_flight"] = _int(value.get("in_flight"))
    elif f == "send" and type_ == "invoke":
        out["priority"] = _int(value.get("priority", DEFAULT_PRIORITY))
        out["scheduled_at"] = _int(value.get("scheduled_at_ms"))
    elif f == "delivery_count":
        out["delivery_count"] = _int(value.get("count"))
    return out


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ------------------------------------------------------------------------------------ the store
def arrow_schema() -> Any:
    """The Arrow schema of a store file (partition columns excluded), with the schema version."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "bool": pa.bool_()}
    fields = [pa.field(name, types[kind]) for name, kind in COLUMNS.items() if name not in PARTITIONS]
    return pa.schema(fields, metadata={b"mqconform.store_schema": str(STORE_SCHEMA_VERSION).encode()})


def rows_to_table(rows: list[Row]) -> Any:
    import pyarrow as pa

    schema = arrow_schema()
    return pa.Table.from_pydict({name: [r[name] for r in rows] for name in schema.names}, schema=schema)


def is_store(path: Path) -> bool:
    return (path / SCHEMA_FILE).is_file()


def init_store(store: Path) -> None:
    """Create the store directory, or check the version of an existing one and upgrade an older
    readable one to :data:`STORE_SCHEMA_VERSION` (its files stay as they are: new columns read as nulls)."""
    store.mkdir(parents=True, exist_ok=True)
    if is_store(store) and check_store_version(store) == STORE_SCHEMA_VERSION:
        return
    _write_atomic(store / SCHEMA_FILE, json.dumps(
        {"store_schema": STORE_SCHEMA_VERSION, "columns": COLUMNS, "partitions": list(PARTITIONS)},
        indent=2).encode())


def check_store_version(store: Path) -> int:
    """The store's schema version; BadHistory unless it is one of :data:`READABLE_STORE_VERSIONS`."""
    try:
        version = json.loads((store / SCHEMA_FILE).read_text()).get("store_schema")
    except (OSError, ValueError, AttributeError) as exc:
        raise BadHistory(BadInput(str(store / SCHEMA_FILE), None, f"corrupt store schema file ({exc})")) \
            from None
    if _int(version) not in READABLE_STORE_VERSIONS:
        raise BadHistory(BadInput(str(store / SCHEMA_FILE), None,
                                  f"unknown store schema version {version!r}"))
    return int(version)


def partition_dir(store: Path, adapter: str, run_date: str) -> Path:
    quoted = urllib.parse.quote(adapter, safe="")
    return store / "history" / f"adapter={quoted}" / f"run_date={run_date}"


def run_date(info: RunInfo) -> str:
    return (info.started or "1970-01-01")[:10]


def write_run(store: Path, data: RunData) -> Path:
    """Write one usable run into the store, replacing any earlier copy (idempotent)."""
    import pyarrow.parquet as pq

    init_store(store)
    target = partition_dir(store, data.info.adapter, run_date(data.info))
    target.mkdir(parents=True, exist_ok=True)
    file = target / f"{urllib.parse.quote(data.info.run, safe='')}.parquet"
    tmp = file.with_name("." + file.name + ".tmp")
    pq.write_table(rows_to_table(data.rows), tmp, compression="snappy")
    os.replace(tmp, file)
    (store / "runs").mkdir(exist_ok=True)
    meta = dict(data.meta, outcomes=list(data.info.outcomes), source=data.info.path)
    _write_atomic(store / "runs" / f"{urllib.parse.quote(data.info.run, safe='')}.json",
                  json.dumps(meta, sort_keys=True, default=str).encode())
    return file


def ingest(run_dirs: Iterable[Path], store: Path) -> list[BadInput]:
    """Ingest run directories into the store; unusable runs are not written (returned as bad)."""
    bad: list[BadInput] = []
    for path in run_dirs:
        data = read_run(path)
        bad.extend(data.bad)
        if data.usable:
            write_run(store, data)
    return bad


def store_runs(store: Path) -> list[RunInfo]:
    """The runs recorded in a store."""
    check_store_version(store)
    infos = []
    for file in sorted((store / "runs").glob("*.json")):
        meta = json.loads(file.read_text())
        infos.append(RunInfo(
            run=str(meta["run"]), adapter=str(meta["adapter"]), profile=str(meta["profile"]),
            path=str(meta.get("source", store)), status=str(meta.get("status", "complete")),
            started=meta.get("started"), exit_code=meta.get("exit_code"),
            versions={str(k): str(v) for k, v in (meta.get("versions") or {}).items()},
            outcomes=tuple(meta.get("outcomes") or ())))
    return infos


def history_files(store: Path) -> list[Path]:
    return sorted((store / "history").glob("adapter=*/run_date=*/*.parquet"))


def read_store_table(store: Path, columns: Iterable[str] | None = None, dictionary: bool = False,
                     runs: Iterable[str] | None = None) -> Any:
    """The store as one Arrow table (python engine input): every column, partition column ``adapter``
    included, or only `columns` (Parquet column pruning; a partition column is added when named).
    A file of an older store version reads the columns it lacks as nulls.

    With `dictionary`, string columns come as Arrow dictionary arrays straight from Parquet's own
    dictionary pages (several times faster to read than plain strings, and the python engine groups
    by their integer codes); each file keeps its own dictionaries. With `runs`, only those runs' rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_store_version(store)
    schema = arrow_schema()
    wanted = list(columns) if columns is not None else [*schema.names, "adapter"]
    stored = [c for c in wanted if c in schema.names]
    strings = [c for c in stored if pa.types.is_string(schema.field(c).type)]
    if dictionary:
        schema = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in strings else f
                            for f in schema], metadata=schema.metadata)
    tables = []
    for file in history_files(store):
        table = pq.read_table(file, columns=stored, schema=schema,
                              read_dictionary=strings if dictionary else None,
                              filters=[("run", "in", sorted(runs))] if runs is not None else None)
        if "adapter" in wanted:
            adapter = urllib.parse.unquote(file.parent.parent.name.split("=", 1)[1])
            column = pa.repeat(pa.scalar(adapter, pa.string()), table.num_rows)
            table = table.append_column("adapter", column.dictionary_encode() if dictionary else column)
        tables.append(table)
    if not tables:
        full = schema.append(pa.field("adapter", pa.string()))
        return pa.schema([full.field(c) for c in wanted if c in full.names]).empty_table()
    return pa.concat_tables(tables)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
