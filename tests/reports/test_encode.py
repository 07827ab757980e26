"""The python engine's integer coding (reports/checks/encode.py): exact keys, any string form, honest
refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mqconform.reports.checks import definitions, encode
from mqconform.reports.checks import python_engine as checks_python
from mqconform.reports.read import store
from tests.reports import histories

RULES = ("DELIVERY-1", "DELIVERY-2", "DELIVERY-6", "DELIVERY-7", "RING-17")


def _records(tmp_path: Path, faults: set[str], run: str = "gen-run") -> Any:
    run_dir = histories.write_run_dir(tmp_path / "run", run=run, examples=6, seed=5, faults=faults)
    return checks_python.rows_table(store.read_run(run_dir).rows).select(list(definitions.NEEDED))


@pytest.mark.rules(*RULES)
@pytest.mark.parametrize("faults", [set(), {"unexpected", "after-ack"}, {"address", "drain"}])
def test_plain_and_dictionary_strings_give_the_same_statistics(tmp_path: Path, faults: set[str]) -> None:
    plain = _records(tmp_path, faults)
    coded = pa.table({n: c.dictionary_encode() if pa.types.is_string(c.type) else c
                      for n, c in zip(plain.column_names, plain.columns, strict=True)})
    # several chunks with different dictionaries, as several store files give
    half = plain.num_rows // 2
    chunked = pa.concat_tables([coded.slice(0, half).combine_chunks().unify_dictionaries(),
                                pa.table({n: c.dictionary_encode() if pa.types.is_string(c.type) else c
                                          for n, c in zip(plain.column_names, plain.slice(half).columns,
                                                          strict=True)})])
    expected = checks_python.compute_stats(plain)
    assert expected and checks_python.compute_stats(coded) == expected
    assert checks_python.compute_stats(chunked) == expected


def test_keys_decode_to_what_they_code(tmp_path: Path) -> None:
    table = _records(tmp_path, set())
    codes = encode.Codes(table, definitions.FS, definitions.TYPES)
    row = table.slice(7, 1).to_pylist()[0]
    gk = codes.gk_for(row["run"], row["machine"], row["example"], row["queue"])
    assert gk is not None
    assert codes.example_queue(gk) == (row["run"], row["machine"], row["example"], row["queue"])
    assert codes.gk_for(row["run"], row["machine"], 10**9, row["queue"]) is None
    codes.add_queues(["declared-but-unused"])
    assert codes.queues[codes.queue_code["declared-but-unused"]] == "declared-but-unused"
    assert codes.queues[codes.null_queue] is None


def test_sparse_example_numbers_are_coded_densely() -> None:
    rows = pa.table({"run": ["r", "r"], "machine": ["m", "m"], "example": [1, 10**15], "queue": ["q", "q"],
                     "msg": ["a", "b"], "f": ["send", "send"], "type": ["invoke", "invoke"],
                     "result": pa.nulls(2, pa.string())})
    codes = encode.Codes(rows, definitions.FS, definitions.TYPES)
    assert codes.n_examples == 2
    assert codes.ek_for("r", "m", 10**15) == 1


def test_a_key_space_beyond_62_bits_is_refused() -> None:
    n = 2**21
    ids = pa.array([f"m{i}" for i in range(n)])
    rows = pa.table({"run": pa.repeat(pa.scalar("r"), n), "machine": pa.repeat(pa.scalar("m"), n),
                     "example": pa.array(range(n), pa.int64()), "queue": pa.repeat(pa.scalar("q"), n),
                     "msg": ids, "f": pa.repeat(pa.scalar("send"), n), "type": pa.repeat(pa.scalar("ok"), n),
                     "result": pa.nulls(n, pa.string())})
    codes = encode.Codes(rows, definitions.FS, definitions.TYPES)  # 2^21 x 2 x 2^21 fits
    with pytest.raises(encode.TooLarge, match="use --engine spark"):
        codes.add_queues([f"q{i}" for i in range(2**20)])


@pytest.mark.rules(*RULES, "DELIVERY-4", "REDELIVERY-1")
def test_chunks_of_whole_examples_add_up_to_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    faults = {"unexpected", "after-ack", "lost", "reorder", "count-decrease", "drain", "address"}
    tables = [_records(tmp_path / f, {f}, run=f) for f in sorted(faults)]
    table = pa.concat_tables(tables)
    whole_witnesses: definitions.Witnesses = {}
    whole = checks_python.compute_stats(table, whole_witnesses)
    monkeypatch.setattr(checks_python, "CHUNK_ROWS", 40)
    codes = encode.Codes(table.select(list(definitions.NEEDED)), definitions.FS, definitions.TYPES)
    assert len(checks_python._example_chunks(codes.table)) > 10
    witnesses: definitions.Witnesses = {}
    assert checks_python.compute_stats(table, witnesses) == whole
    assert witnesses == whole_witnesses and len(witnesses) == 2
    # one example's rows in two blocks (the same run twice): one pass keeps every example whole
    twice = encode.Codes(pa.concat_tables([table, tables[0]]), definitions.FS, definitions.TYPES)
    assert len(checks_python._example_chunks(twice.table)) == 1
    # rows of one example out of their block: the table is checked in one pass, still exactly
    shuffled = table.take(pa.array([*range(1, table.num_rows), 0]))
    codes = encode.Codes(shuffled.select(list(definitions.NEEDED)), definitions.FS, definitions.TYPES)
    assert len(checks_python._example_chunks(codes.table)) == 1
    assert checks_python.compute_stats(shuffled) == whole
