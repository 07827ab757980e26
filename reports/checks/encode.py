"""Integer coding of a history table for the in-process engine (:mod:`.python_engine`).

Grouping and filtering Arrow tables by string columns costs several times more than by integers
(measured here: a 4-column string group-by 3.3 s, the same on one int64 key 1.4 s, filtering a
table of strings 12 times slower than of integers, at 21 M rows). So the engine codes every row once:

- ``q``: the queue, a code into :attr:`Codes.queues` (:attr:`Codes.null_queue` for a null queue);
- ``m``: the message id, a code into the message dictionary (null when the row has none); ``p``: the
  process (a consumer's name on its rows), a code into :attr:`Codes.processes`;
- ``ek``: the example (run, machine, example) as ``rm * n_examples + example code``, where ``rm`` is
  the (run, machine) code; ``fs``, ``ty``, ``rs``: the operation (index into ``FS``), the record type
  (index into ``TYPES``) and the result class (:data:`RESULT_CLASSES`).

Composite keys are then single int64 columns (:meth:`Codes.mk` per message of an example,
:meth:`Codes.gk` per example and queue, :meth:`Codes.dk` per example, queue and message,
:meth:`Codes.rk` per run, machine and queue), and decoded only for the few result rows. String
columns may be plain or Arrow dictionaries (:func:`..read.store.read_store_table` with ``dictionary=True``
reads Parquet's dictionary pages directly). The coding is exact: codes are dense dictionary indices,
and a history whose key space would not fit in 62 bits is refused (:class:`TooLarge`), never folded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: result class codes (``rs``): a send completion's outcome class
RESULT_CLASSES = {"accepted": 1, "paged": 1, "dropped": 2, "failed": 2, "blocked": 3, "deleted": 4}
LIMIT = 2**62


class TooLarge(ValueError):
    """The history's key space does not fit the python engine's 62-bit keys (use the Spark engine)."""


def _dictionary(column: Any) -> tuple[Any, list[Any]]:
    """(int32 codes, dictionary values) of a column, plain or dictionary-typed (arithmetic with an int64
    operand promotes the codes, so they are not cast here)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    column = column.unify_dictionaries() if column.num_chunks > 1 else column
    if column.num_chunks == 0:
        return pa.chunked_array([], pa.int32()), []
    values = column.chunk(0).dictionary
    return pa.chunked_array([chunk.indices for chunk in column.chunks]), values.to_pylist()


def _example_codes(column: Any) -> tuple[Any, Sequence[int]]:
    """(codes, example numbers): ``example - min`` when the numbers span fewer values than the rows
    (always so for histories: examples are numbered 1, 2, ...), else dense dictionary codes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    bounds = pc.min_max(column).as_py() if len(column) else {"min": None, "max": None}
    low, high = bounds["min"], bounds["max"]
    if low is None or high - low >= max(len(column), 1):
        codes, values = _dictionary(column)
        return pc.cast(codes, pa.int64()), values
    return pc.subtract(column, pa.scalar(low, pa.int64())), range(low, high + 1)


def _lookup(codes: Any, dictionary: list[Any], table: dict[Any, int]) -> Any:
    """Map codes of `dictionary` through `table` (dictionary value -> small code; others null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mapping = pa.array([table.get(v) for v in dictionary], pa.int8())
    return pc.take(mapping, codes)


class Codes:
    """The coded table (:attr:`table`) and what decodes its keys."""

    def __init__(self, table: Any, fs: Sequence[str], types: Sequence[str]) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        run, runs = _dictionary(table["run"])
        machine, machines = _dictionary(table["machine"])
        queue, queues = _dictionary(table["queue"])
        msg, self.msgs = _dictionary(table["msg"])
        process, self.processes = _dictionary(table["process"]) if "process" in table.column_names \
            else (pa.nulls(len(table), pa.int32()), [])
        example, examples = _example_codes(table["example"])
        f, fnames = _dictionary(table["f"])
        type_, tnames = _dictionary(table["type"])
        result, rnames = _dictionary(table["result"])
        self.queues: list[str | None] = [*queues, None]
        self.null_queue = len(queues)
        self.queue_code = {name: i for i, name in enumerate(queues)}
        self.nm = max(1, len(self.msgs))
        self.n_machines = max(1, len(machines))
        self.n_examples = max(1, len(examples))
        self.runs, self.machines, self.examples = runs, machines, examples
        self._check_size()
        rm = pc.add(pc.multiply(pc.cast(run, pa.int64()), self.n_machines), machine)
        columns = {
            "ek": pc.add(pc.multiply(rm, self.n_examples), example),
            # int32 codes: arithmetic with the int64 keys promotes them (a cast here would cost a pass)
            "q": pc.fill_null(queue, self.null_queue), "m": msg, "p": process,
            "fs": _lookup(f, fnames, {name: i for i, name in enumerate(fs)}),
            "ty": _lookup(type_, tnames, {name: i for i, name in enumerate(types)}),
            "rs": pc.fill_null(_lookup(result, rnames, RESULT_CLASSES), 0),
        }
        rest = [c for c in table.column_names if c not in ("run", "machine", "queue", "msg", "example", "f",
                                                          "type", "result", "value", "process")]
        self.table = pa.table({**columns, **{c: table[c] for c in rest}})
        self._example_code = None if isinstance(examples, range) else {ex: i for i, ex in enumerate(examples)}
        self._run_code = {name: i for i, name in enumerate(runs)}
        self._machine_code = {name: i for i, name in enumerate(machines)}

    @property
    def nq(self) -> int:
        return len(self.queues)

    def _check_size(self) -> None:
        n_ex = max(1, len(self.runs)) * self.n_machines * self.n_examples
        if n_ex * self.nq * self.nm >= LIMIT:
            raise TooLarge(f"{n_ex} examples x {self.nq} queues x {self.nm} message ids do not fit the "
                           "python engine's keys; use --engine spark")

    def add_queues(self, names: Iterable[str | None]) -> None:
        """Give codes to queue names no row carries (declared but unused queues, addresses); call it
        before computing any key (keys depend on the number of queues)."""
        for name in names:
            if name is not None and name not in self.queue_code:
                self.queue_code[name] = len(self.queues)
                self.queues.append(name)
        self._check_size()

    # ------------------------------------------------------------------ keys (Arrow arrays)
    def mk(self, ek: Any, m: Any) -> Any:
        """Key of one message of one example."""
        import pyarrow.compute as pc

        return pc.add(pc.multiply(ek, self.nm), m)

    def gk(self, ek: Any, q: Any) -> Any:
        """Key of one queue of one example."""
        import pyarrow.compute as pc

        return pc.add(pc.multiply(ek, self.nq), q)

    def dk(self, ek: Any, q: Any, m: Any) -> Any:
        """Key of one message on one queue of one example."""
        return self.mk(self.gk(ek, q), m)

    def rk(self, ek: Any, q: Any) -> Any:
        """Key of one queue of one (run, machine): the unit of a check result."""
        import pyarrow.compute as pc

        return self.gk(pc.divide(ek, self.n_examples), q)

    def split_mk(self, mk: Any) -> tuple[Any, Any]:
        """(ek, m) of message keys."""
        import pyarrow.compute as pc

        ek = pc.divide(mk, self.nm)
        return ek, pc.subtract(mk, pc.multiply(ek, self.nm))

    def split_dk(self, dk: Any) -> tuple[Any, Any]:
        """(gk, m) of example-queue-message keys."""
        import pyarrow.compute as pc

        gk = pc.divide(dk, self.nm)
        return gk, pc.subtract(dk, pc.multiply(gk, self.nm))

    def split_gk(self, gk: Any) -> tuple[Any, Any]:
        """(ek, q) of example-queue keys."""
        import pyarrow.compute as pc

        ek = pc.divide(gk, self.nq)
        return ek, pc.subtract(gk, pc.multiply(ek, self.nq))

    # ------------------------------------------------------------------ decoding (Python values)
    def run_machine_queue(self, rk: int) -> tuple[str, str, str | None]:
        """(run, machine, queue) of a result key."""
        rm, q = divmod(rk, self.nq)
        run, machine = divmod(rm, self.n_machines)
        return self.runs[run], self.machines[machine], self.queues[q]

    def example_queue(self, gk: int) -> tuple[str, str, int, str | None]:
        """(run, machine, example, queue) of an example-queue key."""
        ek, q = divmod(gk, self.nq)
        rm, example = divmod(ek, self.n_examples)
        run, machine = divmod(rm, self.n_machines)
        return self.runs[run], self.machines[machine], self.examples[example], self.queues[q]

    def ek_for(self, run: str, machine: str, example: int) -> int | None:
        """The example key of (run, machine, example), None when the table has no such example."""
        if self._example_code is None:
            code = self.examples.index(example) if example in self.examples else None
        else:
            code = self._example_code.get(example)
        codes = (self._run_code.get(run), self._machine_code.get(machine), code)
        if None in codes:
            return None
        r, mc, ex = codes
        assert r is not None and mc is not None and ex is not None
        return (r * self.n_machines + mc) * self.n_examples + ex

    def gk_for(self, run: str, machine: str, example: int, queue: str | None) -> int | None:
        """The example-queue key, None when the example or queue is unknown to the table."""
        ek = self.ek_for(run, machine, example)
        q = self.null_queue if queue is None else self.queue_code.get(queue)
        return None if ek is None or q is None else ek * self.nq + q
