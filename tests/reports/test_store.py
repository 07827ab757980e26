"""The history store: ingest, idempotent re-ingest, bad input by file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

from mqconform.reports import pipeline
from mqconform.reports.read import store
from tests.reports import histories

RULES = ("DELIVERY-6", "DELIVERY-2")


@pytest.mark.rules(*RULES)
def test_ingest_is_idempotent(tmp_path: Path) -> None:
    run = histories.write_run_dir(tmp_path / "run", examples=4, seed=3)
    st = tmp_path / "store"
    assert store.ingest([run], st) == []
    first = store.read_store_table(st)
    files = store.history_files(st)
    assert store.ingest([run], st) == []
    assert store.history_files(st) == files
    again = store.read_store_table(st)
    assert again.num_rows == first.num_rows > 0
    assert again.equals(first)
    assert [r.run for r in store.store_runs(st)] == ["gen-run"]
    assert files[0].parent.name == "run_date=2026-01-02"
    assert files[0].parent.parent.name == "adapter=generated"


@pytest.mark.rules(*RULES)
def test_store_and_run_dir_give_the_same_checks(tmp_path: Path) -> None:
    run = histories.write_run_dir(tmp_path / "run", faults={"unexpected"})
    direct = pipeline.check_runs([run], store=tmp_path / "store")
    via_store = pipeline.check_runs([tmp_path / "store"])
    assert direct.checks == via_store.checks
    assert any(c.check == "total-queue" and c.verdict == "fail" for c in direct.checks)


@pytest.mark.rules(*RULES)
def test_consumer_ops_get_their_queue_and_completions_their_id(tmp_path: Path) -> None:
    data = store.read_run(histories.write_run_dir(tmp_path / "run", examples=1))
    acks = [r for r in data.rows if r["f"] == "ack" and r["type"] == "ok"]
    assert acks and all(r["queue"] == "q" and r["msg"] and r["result"] == "ok" for r in acks)
    receives = [r for r in data.rows if r["f"] == "receive" and r["type"] == "ok"]
    assert receives and all(r["queue"] == "q" for r in receives)
    counters = [r for r in data.rows if r["f"] == "counters"]
    assert all(r["c_message"] is not None and r["bound"] is not None for r in counters)


@pytest.mark.rules(*RULES)
@pytest.mark.parametrize(("fault", "line"), [("corrupt", True), ("version", True), ("incomplete", False)])
def test_bad_input_is_an_error_without_ignore_bad(tmp_path: Path, fault: str, line: bool) -> None:
    run = histories.write_run_dir(tmp_path / "run", faults={fault})
    with pytest.raises(store.BadHistory) as err:
        pipeline.check_runs([run])
    message = str(err.value)
    assert "\n" not in message and str(run) in message
    assert (":" + str(err.value.bad.line)) in message if line else err.value.bad.line is None


@pytest.mark.rules(*RULES)
def test_ignore_bad_excludes_the_example_and_lists_it(tmp_path: Path) -> None:
    run = histories.write_run_dir(tmp_path / "run", examples=5, faults={"corrupt", "unexpected"})
    clean = pipeline.check_runs([histories.write_run_dir(tmp_path / "clean", examples=5)])
    result = pipeline.check_runs([run], ignore_bad=True)
    lines = [b for b in result.bad if b.line is not None]
    assert len(lines) == 1 and lines[0].path.endswith("delivery.jsonl")
    assert any("excluded" in b.problem for b in result.bad)
    total = {c.check: c for c in result.checks}["total-queue"]
    clean_total = {c.check: c for c in clean.checks}["total-queue"]
    assert total.stats["attempted"] < clean_total.stats["attempted"]


@pytest.mark.rules(*RULES)
def test_incomplete_run_is_excluded_never_passed(tmp_path: Path) -> None:
    run = histories.write_run_dir(tmp_path / "run", faults={"incomplete"})
    result = pipeline.check_runs([run], ignore_bad=True)
    assert result.checks == ()
    assert result.runs[0].status == "incomplete"
    assert result.bad and result.bad[0].line is None


@pytest.mark.rules(*RULES)
def test_unknown_store_version_is_bad_input(tmp_path: Path) -> None:
    st = tmp_path / "store"
    store.ingest([histories.write_run_dir(tmp_path / "run")], st)
    (st / store.SCHEMA_FILE).write_text('{"store_schema": 99}')
    with pytest.raises(store.BadHistory, match="unknown store schema version 99"):
        pipeline.check_runs([st])


@pytest.mark.rules(*RULES)
def test_report_command_bad_history_is_one_line_and_exit_2(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from mqconform.commands import report

    run = histories.write_run_dir(tmp_path / "run", faults={"corrupt"})
    args = argparse.Namespace(inputs=[run], engine="python", master=None, out=tmp_path / "out",
                              ignore_bad=False, store=tmp_path / "store")
    assert report.run(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "delivery.jsonl:" in err and "--ignore-bad" in err
    args.ignore_bad = True
    assert report.run(args) == 0
    assert store.history_files(tmp_path / "store"), "--store is passed through to the pipeline"


RULES_V2 = ("DELIVERY-3", "DELIVERY-4", "REDELIVERY-1")
#: the columns version 1 lacked (version 2 added the first three, version 3 c_expired)
NEW_COLUMNS = ["priority", "scheduled_at", "delivery_count", "c_expired"]


def _record(index: int, process: str, type_: str, f: str, queue: str | None,
            value: object) -> dict[str, object]:
    return {"v": 1, "run": "r", "adapter": "a", "profile": "artemis", "machine": "m", "example": 1,
            "index": index, "time": index, "process": process, "type": type_, "f": f, "queue": queue,
            "value": value}


@pytest.mark.rules(*RULES_V2)
def test_send_priority_schedule_and_delivery_count_columns() -> None:
    records = [
        _record(0, "producer", "invoke", "send", "q",
                {"to": "q", "id": "m1", "priority": 9, "scheduled_at_ms": 50}),
        _record(1, "producer", "ok", "send", "q", "accepted"),
        _record(2, "producer", "invoke", "send", "q", {"to": "q", "id": "m2"}),
        _record(3, "observer", "ok", "delivery_count", "q", {"id": "m1", "count": 3}),
        _record(4, "observer", "ok", "delivery_count", "q", {"id": "m2", "count": None}),
        _record(5, "observer", "ok", "counters", "q", {"message_count": 1, "count": 7}),
    ]
    rows = list(store.normalise(records))
    got = [(r["msg"], r["priority"], r["scheduled_at"], r["delivery_count"]) for r in rows]
    assert got == [("m1", 9, 50, None), ("m1", None, None, None), ("m2", 4, None, None),  # default 4
                   ("m1", None, None, 3), ("m2", None, None, None), (None, None, None, None)]
    assert rows[3]["queue"] == "q" and rows[5]["c_message"] == 1
    assert store.rows_to_table(rows).schema == store.arrow_schema()


def _downgrade_to_version_1(st: Path) -> None:
    """Rewrite a store as version 1 wrote it: files without the version-2 columns, version 1."""
    import pyarrow.parquet as pq

    for file in store.history_files(st):
        table = pq.read_table(file)
        pq.write_table(table.drop_columns(NEW_COLUMNS), file)
    (st / store.SCHEMA_FILE).write_text('{"store_schema": 1}')


@pytest.mark.rules(*RULES)
@pytest.mark.parametrize("dictionary", [False, True])
def test_version_1_store_stays_readable_and_is_upgraded(tmp_path: Path, dictionary: bool) -> None:
    st = tmp_path / "store"
    store.ingest([histories.write_run_dir(tmp_path / "old", run="old", examples=2)], st)
    v2 = store.read_store_table(st, dictionary=dictionary)
    _downgrade_to_version_1(st)
    v1 = store.read_store_table(st, dictionary=dictionary)
    assert v1.schema == v2.schema and v1.num_rows == v2.num_rows
    assert v1.column("delivery_count").null_count == v1.num_rows
    assert v1.drop_columns(NEW_COLUMNS).equals(v2.drop_columns(NEW_COLUMNS))
    # the same verdicts, except for the two checks whose facts a version-1 store never kept: no delivery
    # counts (no result at all), no schedule (no message can be ordered): absent, never a pass
    sequence = {"order", "delivery-count"}
    from_v1 = pipeline.check_runs([st]).checks
    direct = pipeline.check_runs([tmp_path / "old"]).checks
    assert [c for c in from_v1 if c.check not in sequence] == [c for c in direct if c.check not in sequence]
    assert not [c for c in from_v1 if c.check in sequence]
    assert {c.check for c in direct} >= sequence
    # re-ingesting another run upgrades the store; the version-1 file is read next to the new one
    store.ingest([histories.write_run_dir(tmp_path / "new", run="new", examples=2)], st)
    assert store.check_store_version(st) == store.STORE_SCHEMA_VERSION == 3
    both = store.read_store_table(st, ["run", "f", "delivery_count"], dictionary=dictionary)
    counts = both.filter(pc.equal(both["f"], "delivery_count")).to_pydict()
    assert set(counts["run"]) == {"old", "new"}
    counted = {r for r, c in zip(counts["run"], counts["delivery_count"], strict=True) if c is not None}
    assert counted == {"new"}


# ------------------------------------------------------------------ the generated order and count cases
Key = tuple[int, str]


def _facts(rows: list[dict[str, Any]]) -> tuple[dict[Key, dict[str, Any]], dict[Key, list[int]], int]:
    """Per (example, msg): send invoke/ok index, priority, schedule; receive indexes; count drops."""
    sends: dict[Key, dict[str, Any]] = {}
    receives: dict[Key, list[int]] = {}
    last: dict[tuple[int, str, str], int] = {}
    drops = 0
    for r in rows:
        key = (r["example"], r["msg"])
        if r["f"] == "send":
            sends.setdefault(key, {}).update(
                {"invoke": r["index"], "priority": r["priority"], "scheduled": r["scheduled_at"]}
                if r["type"] == "invoke" else {"ok": r["index"]})
        elif r["f"] == "receive" and r["type"] == "ok" and r["msg"] is not None:
            receives.setdefault(key, []).append(r["index"])
        elif r["f"] == "delivery_count":
            drops += r["delivery_count"] < last.get((*key, r["queue"]), 0)
            last[(*key, r["queue"])] = r["delivery_count"]
    return sends, receives, drops


def _overtakes(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Why a message b sent after a (by invocation) is delivered before a: the one consumer's first
    deliveries (reorder, priority, scheduled, concurrent) or a redelivery of a (redelivered)."""
    sends, receives, drops = _facts(rows)
    why = {"reorder": 0, "priority": 0, "scheduled": 0, "concurrent": 0, "redelivered": 0, "restarted": 0,
           "drops": drops}
    # a restart step ends the first-delivery order, as a broker stop/start does
    restarts = {}
    for r in rows:
        if r["f"] == "restart":
            restarts.setdefault(r["example"], r["index"])
    for (ex, a), sa in sends.items():
        for (ex_b, b), sb in sends.items():
            ra, rb = receives.get((ex, a)), receives.get((ex_b, b))
            if ex_b != ex or not ra or not rb or not sa["invoke"] < sb["invoke"]:
                continue
            why["redelivered"] += any(ra[0] < rb[0] < later for later in ra[1:])
            if rb[0] < ra[0] and restarts.get(ex, rb[0] + 1) < rb[0]:
                why["restarted"] += 1
            elif rb[0] < ra[0]:
                reason = ("priority" if sb["priority"] != sa["priority"] else "scheduled" if sa["scheduled"]
                          else "concurrent" if sb["invoke"] < sa["ok"] else "reorder")
                why[reason] += 1
    return why


@pytest.mark.rules(*RULES_V2)
@pytest.mark.parametrize("case", sorted(histories.ORDER_CASES))
def test_generated_order_and_count_cases(tmp_path: Path, case: str) -> None:
    run = histories.write_run_dir(tmp_path / case, examples=3, seed=5, faults={case})
    why = _overtakes(store.read_run(run).rows)
    assert (why["reorder"] > 0) == (case == "reorder")
    assert why["drops"] == (case == "count-decrease")  # one reset, in example 2 only
    if case not in ("reorder", "count-decrease"):
        assert why[case] > 0, why
    existing = ("total-queue", "lost", "delivery-after-ack", "counter-identity", "ring-bound")
    verdicts = {c.check: c.verdict for c in pipeline.check_runs([run]).checks if c.check in existing}
    assert set(verdicts) == set(existing) and set(verdicts.values()) <= {"pass", "not_applicable"}, verdicts
