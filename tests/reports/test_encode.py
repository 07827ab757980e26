"""The python engine's integer coding (reports/encode.py): exact keys, any string form, honest refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from mqconform.reports import checks_python, encode, generate, store

RULES = ("DELIVERY-1", "DELIVERY-2", "DELIVERY-6", "DELIVERY-7", "RING-17")


def _records(tmp_path: Path, faults: set[str]) -> Any:
    run = generate.write_run_dir(tmp_path / "run", examples=6, seed=5, faults=faults)
    return checks_python.rows_table(store.read_run(run).rows).select(list(checks_python.NEEDED))


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
    codes = encode.Codes(table, checks_python.FS, checks_python.TYPES)
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
    codes = encode.Codes(rows, checks_python.FS, checks_python.TYPES)
    assert codes.n_examples == 2
    assert codes.ek_for("r", "m", 10**15) == 1


def test_a_key_space_beyond_62_bits_is_refused() -> None:
    n = 2**21
    ids = pa.array([f"m{i}" for i in range(n)])
    rows = pa.table({"run": pa.repeat(pa.scalar("r"), n), "machine": pa.repeat(pa.scalar("m"), n),
                     "example": pa.array(range(n), pa.int64()), "queue": pa.repeat(pa.scalar("q"), n),
                     "msg": ids, "f": pa.repeat(pa.scalar("send"), n), "type": pa.repeat(pa.scalar("ok"), n),
                     "result": pa.nulls(n, pa.string())})
    codes = encode.Codes(rows, checks_python.FS, checks_python.TYPES)  # 2^21 x 2 x 2^21 fits
    with pytest.raises(encode.TooLarge, match="use --engine spark"):
        codes.add_queues([f"q{i}" for i in range(2**20)])
