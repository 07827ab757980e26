"""The history store: ingest, idempotent re-ingest, bad input by file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from mqconform.reports import generate, pipeline, store

RULES = ("DELIVERY-6", "DELIVERY-2")


@pytest.mark.rules(*RULES)
def test_ingest_is_idempotent(tmp_path: Path) -> None:
    run = generate.write_run_dir(tmp_path / "run", examples=4, seed=3)
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
    run = generate.write_run_dir(tmp_path / "run", faults={"unexpected"})
    direct = pipeline.check_runs([run], store=tmp_path / "store")
    via_store = pipeline.check_runs([tmp_path / "store"])
    assert direct.checks == via_store.checks
    assert any(c.check == "total-queue" and c.verdict == "fail" for c in direct.checks)


@pytest.mark.rules(*RULES)
def test_consumer_ops_get_their_queue_and_completions_their_id(tmp_path: Path) -> None:
    data = store.read_run(generate.write_run_dir(tmp_path / "run", examples=1))
    acks = [r for r in data.rows if r["f"] == "ack" and r["type"] == "ok"]
    assert acks and all(r["queue"] == "q" and r["msg"] and r["result"] == "ok" for r in acks)
    receives = [r for r in data.rows if r["f"] == "receive" and r["type"] == "ok"]
    assert receives and all(r["queue"] == "q" for r in receives)
    counters = [r for r in data.rows if r["f"] == "counters"]
    assert all(r["c_message"] is not None and r["bound"] is not None for r in counters)


@pytest.mark.rules(*RULES)
@pytest.mark.parametrize(("fault", "line"), [("corrupt", True), ("version", True), ("incomplete", False)])
def test_bad_input_is_an_error_without_ignore_bad(tmp_path: Path, fault: str, line: bool) -> None:
    run = generate.write_run_dir(tmp_path / "run", faults={fault})
    with pytest.raises(store.BadHistory) as err:
        pipeline.check_runs([run])
    message = str(err.value)
    assert "\n" not in message and str(run) in message
    assert (":" + str(err.value.bad.line)) in message if line else err.value.bad.line is None


@pytest.mark.rules(*RULES)
def test_ignore_bad_excludes_the_example_and_lists_it(tmp_path: Path) -> None:
    run = generate.write_run_dir(tmp_path / "run", examples=5, faults={"corrupt", "unexpected"})
    clean = pipeline.check_runs([generate.write_run_dir(tmp_path / "clean", examples=5)])
    result = pipeline.check_runs([run], ignore_bad=True)
    lines = [b for b in result.bad if b.line is not None]
    assert len(lines) == 1 and lines[0].path.endswith("delivery.jsonl")
    assert any("excluded" in b.problem for b in result.bad)
    total = {c.check: c for c in result.checks}["total-queue"]
    clean_total = {c.check: c for c in clean.checks}["total-queue"]
    assert total.stats["attempted"] < clean_total.stats["attempted"]


@pytest.mark.rules(*RULES)
def test_incomplete_run_is_excluded_never_passed(tmp_path: Path) -> None:
    run = generate.write_run_dir(tmp_path / "run", faults={"incomplete"})
    result = pipeline.check_runs([run], ignore_bad=True)
    assert result.checks == ()
    assert result.runs[0].status == "incomplete"
    assert result.bad and result.bad[0].line is None


@pytest.mark.rules(*RULES)
def test_unknown_store_version_is_bad_input(tmp_path: Path) -> None:
    st = tmp_path / "store"
    store.ingest([generate.write_run_dir(tmp_path / "run")], st)
    (st / store.SCHEMA_FILE).write_text('{"store_schema": 99}')
    with pytest.raises(store.BadHistory, match="unknown store schema version 99"):
        pipeline.check_runs([st])


@pytest.mark.rules(*RULES)
def test_report_command_bad_history_is_one_line_and_exit_2(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from mqconform.commands import report

    run = generate.write_run_dir(tmp_path / "run", faults={"corrupt"})
    args = argparse.Namespace(inputs=[run], engine="python", master=None, out=tmp_path / "out",
                              ignore_bad=False, store=tmp_path / "store")
    assert report.run(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "delivery.jsonl:" in err and "--ignore-bad" in err
    args.ignore_bad = True
    assert report.run(args) == 0
    assert store.history_files(tmp_path / "store"), "--store is passed through to the pipeline"
