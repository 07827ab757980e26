"""The VOS queue-file model (reference_model/storage.py) against seed S0 and reference note C."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqconform.reference_model.errors import ModelMisuse
from mqconform.reference_model.storage import QueueFile, StoreConfig
from mqconform.reference_model.world import World

rules = pytest.mark.rules
BLOCK = 4096


def store(max_bytes: int = 1000, **kw: object) -> QueueFile:
    return QueueFile(StoreConfig("s", max_bytes=max_bytes, **kw))  # type: ignore[arg-type]


def fill(q: QueueFile, *sizes: int, prefix: str = "m") -> list[str]:
    ids = [f"{prefix}{i}" for i in range(len(sizes))]
    for msg_id, size in zip(ids, sizes, strict=True):
        assert q.put(msg_id, size) == "ok"
    return ids


# ---------------------------------------------------------------- reuse (S0)
@rules("STORAGE-1", "STORAGE-2")
def test_exact_length_reuse_takes_the_most_recently_deleted_slot() -> None:
    q = store()
    fill(q, 100, 100, 100)  # offsets 0, 100, 200
    assert q.remove("m0") == "ok"
    assert q.remove("m2") == "ok"
    assert q.put("a", 100) == "ok"
    assert q.offset_of("a") == 200  # m2 was deleted last
    assert q.put("b", 100) == "ok"
    assert q.offset_of("b") == 0
    assert q.put("c", 100) == "ok"
    assert q.offset_of("c") == 300  # no free slot left: virgin space
    assert q.used_bytes == 400


@rules("STORAGE-1", "STORAGE-3")
def test_no_reuse_across_lengths_no_coalescing_no_splitting() -> None:
    q = store()
    fill(q, 100, 100)
    q.remove("m0")
    q.remove("m1")
    assert q.put("small", 50) == "ok"  # would fit in a 100-byte slot: not reused
    assert q.offset_of("small") == 200
    assert q.put("big", 200) == "ok"  # two adjacent free 100s are not coalesced
    assert q.offset_of("big") == 250
    assert (q.free_slots, q.free_slots_of(100), q.used_bytes) == (2, 2, 450)


@rules("STORAGE-3")
def test_used_bytes_is_the_virgin_mark_and_conserves_bytes() -> None:
    q = store()
    fill(q, 10, 20, 30, 20)
    q.remove("m1")
    q.remove("m2")
    assert q.used_bytes == 80 == q.live_bytes + q.free_bytes
    assert q.put("x", 20) == "ok"
    assert q.used_bytes == 80  # reuse never moves the virgin mark
    assert q.live_bytes + q.free_bytes == 80


@rules("STORAGE-4")
def test_the_index_survives_emptying() -> None:
    q = store()
    fill(q, 100, 200, 300, 100)
    for msg_id in ("m0", "m1", "m2", "m3"):
        assert q.remove(msg_id) == "ok"
    assert q.live == 0
    assert q.free_slots == 4  # one entry per freed position
    assert q.index_entries == 3  # distinct lengths 100, 200, 300
    assert q.used_bytes == 700
    assert q.put("x", 100) == "ok"
    assert q.put("y", 100) == "ok"
    assert (q.free_slots, q.index_entries) == (2, 2)  # key 100 went with its last slot


@rules("STORAGE-5")
def test_full_and_empty_refuses_an_add() -> None:
    q = store(max_bytes=1000)
    fill(q, *[100] * 10)
    assert q.put("over", 100) == "e$max_file_exceeded"
    for i in range(10):
        q.remove(f"m{i}")
    assert q.live == 0
    assert q.put("n", 101) == "e$max_file_exceeded"  # empty, yet no 101-byte slot and no virgin room
    assert q.put("n", 99) == "e$max_file_exceeded"
    assert q.put("n", 100) == "ok"  # an exact slot is always usable


@rules("STORAGE-5")
def test_the_seed_queue_520201_blocks_used_and_empty() -> None:
    q = store(max_bytes=524_288 * BLOCK)  # the 2 GiB non-extent candidate of note C.1
    used = 520_201 * BLOCK
    sizes = [1000 + i for i in range(1000)]  # many distinct lengths, as in the blog's queue
    sizes.append(used - sum(sizes))
    fill(q, *sizes)
    for i in range(len(sizes)):
        q.remove(f"m{i}")
    assert (q.live, q.blocks_used) == (0, 520_201)
    left = q.capacity_left()
    assert left == (524_288 - 520_201) * BLOCK
    assert q.put("new", left + 1) == "e$max_file_exceeded"
    assert q.put("reused", 1500) == "ok"  # a 1500-byte slot exists
    assert q.put("virgin", left) == "ok"
    assert q.put("last", 2000) == "e$max_file_exceeded"


@rules("STORAGE-5")
def test_refusal_changes_nothing() -> None:
    q = store(max_bytes=100)
    fill(q, 60)
    before = (q.used_bytes, q.live, q.free_slots, q.last_message)
    assert q.put("x", 41) == "e$max_file_exceeded"
    assert (q.used_bytes, q.live, q.free_slots, q.last_message) == before
    assert q.put("x", 40) == "ok"  # the refused id is not taken


# ---------------------------------------------------------------- rounding, extents
@rules("STORAGE-10", "STORAGE-1")
def test_rounding_makes_reuse_work() -> None:
    exact, rounded = store(max_bytes=200), store(max_bytes=200, round_to=128)
    for q in (exact, rounded):
        assert q.put("a", 100) == "ok"
        q.remove("a")
    assert exact.put("b", 120) == "e$max_file_exceeded"  # empty, but no 120-byte slot, no room
    assert rounded.put("b", 120) == "ok"
    assert rounded.used_bytes == 128 and rounded.offset_of("b") == 0  # the 128-byte slot reused
    assert exact.put("c", 100) == "ok" and exact.offset_of("c") == 0


@rules("STORAGE-10")
def test_standard_sizes_round_up_to_the_smallest_that_fits() -> None:
    config = StoreConfig("s", max_bytes=10_000, round_to=[1024, 128, 256])
    assert config.round_to == (128, 256, 1024)
    assert [config.stored_size(n) for n in (1, 128, 129, 300, 1024, 5000)] == [128, 128, 256, 1024, 1024,
                                                                              5000]
    assert StoreConfig("s", max_bytes=1, round_to=100).stored_size(201) == 300


@rules("STORAGE-10")
def test_one_length_and_bounded_backlog_never_fails_while_many_lengths_do() -> None:
    import random

    rnd = random.Random(7)
    workload = [rnd.randint(1, 128) for _ in range(2000)]
    for round_to, should_fail in ((128, False), (None, True)):
        q = store(max_bytes=128 * 5, round_to=round_to)
        failed = False
        for i, size in enumerate(workload):
            if q.live == 5:
                q.read()
            failed |= q.put(f"m{i}", size) != "ok"
        assert failed is should_fail


@rules("STORAGE-11")
def test_extent_size_multiplies_the_maximum_file_size() -> None:
    flat, extent = store(max_bytes=1000), store(max_bytes=1000, extent_size=4)
    assert (flat.config.capacity, extent.config.capacity) == (1000, 4000)
    assert flat.put("a", 1001) == "e$max_file_exceeded"
    assert extent.put("a", 4000) == "ok"
    assert extent.put("b", 1) == "e$max_file_exceeded"


def test_block_size_only_counts_blocks() -> None:
    q = store(max_bytes=10_000, block_size=BLOCK)
    assert q.blocks_used == 0
    fill(q, 1)
    assert (q.used_bytes, q.blocks_used) == (1, 1)
    fill(q, BLOCK, prefix="n")
    assert q.blocks_used == 2
    assert q.config.capacity == 10_000


# ---------------------------------------------------------------- truncate (S0 conditions 1-4)
@rules("STORAGE-7")
@pytest.mark.parametrize(("requester", "message", "caller"), [
    (True, False, "server"), (False, True, "server"), (False, False, "requester")])
def test_truncate_needs_all_three_conditions(requester: bool, message: bool, caller: str) -> None:
    q = store()
    fill(q, 100)
    q.remove("m0")
    if requester:
        q.open_requester()
    if message:
        fill(q, 50, prefix="live")
    before = (q.used_bytes, q.free_slots, q.index_entries)
    assert q.truncate(caller) == "e$no_truncate_queue"
    assert (q.used_bytes, q.free_slots, q.index_entries) == before


@rules("STORAGE-7", "STORAGE-9")
def test_truncate_succeeds_when_closed_empty_and_called_by_a_server() -> None:
    q = store(max_bytes=300)
    fill(q, 100, 150)
    q.remove("m0")
    q.remove("m1")
    q.open_requester()
    assert q.truncate("server") == "e$no_truncate_queue"
    q.close_requester()
    assert q.truncate("server") == "ok"
    assert (q.used_bytes, q.free_slots, q.index_entries, q.live) == (0, 0, 0, 0)
    assert q.put("whole", 300) == "ok"  # the whole file is available again


@rules("STORAGE-8")
@pytest.mark.parametrize("blocked", [False, True])
def test_a_transaction_file_cannot_be_truncated(blocked: bool) -> None:
    q = store(transaction_file=True)
    if blocked:  # conditions 1-3 also fail: e$invalid_io_operation still wins
        q.open_requester()
        fill(q, 10)
    assert q.truncate("server") == "e$invalid_io_operation"
    assert q.truncate("requester") == "e$invalid_io_operation"
    assert q.used_bytes == (10 if blocked else 0)


# ---------------------------------------------------------------- FIFO, numbers, rename (S0)
@rules("STORAGE-13")
def test_fifo_reads_and_message_numbers_keep_counting() -> None:
    q = store(max_bytes=1000)
    fill(q, 10, 20, 30, 40)
    q.remove("m1")
    assert [q.read(), q.read(), q.read(), q.read()] == ["m0", "m2", "m3", None]
    assert q.last_message == 4
    fill(q, 10, prefix="again")
    assert q.last_message == 5
    q.remove("again0")
    assert q.truncate() == "ok"
    fill(q, 10, prefix="after")
    assert q.last_message == 6


@rules("STORAGE-13")
def test_a_re_added_id_is_read_in_its_new_place() -> None:
    q = store()
    fill(q, 10, 10)
    q.remove("m0")
    assert q.put("m0", 10) == "ok"
    assert [q.read(), q.read(), q.read()] == ["m1", "m0", None]


@rules("STORAGE-12")
def test_rename_and_fresh_queue_loses_nothing_and_starts_with_an_empty_index() -> None:
    world = World()
    world.call("store", name="old", max_bytes=1000)
    for i, size in enumerate((100, 200, 100, 300)):
        world.call("put", store="old", id=f"m{i}", size=size)
    world.call("remove", store="old", id="m1")
    old = world.stores.pop("old")
    world.stores["old.renamed"] = old  # rename: the old servers keep draining it
    world.call("store", name="old", max_bytes=1000)  # fresh queue under the old name
    assert world.call("store_state", store="old") == {
        "used_bytes": 0, "live": 0, "free_slots": 0, "index_entries": 0, "blocks_used": 0,
        "last_message": 0}
    assert world.call("put", store="old", id="new", size=700) == "ok"
    drained = [old.read() for _ in range(4)]
    assert drained == ["m0", "m2", "m3", None]
    assert world.call("store_state", store="old.renamed")["live"] == 0


# ---------------------------------------------------------------- cost (S0)
@rules("STORAGE-6")
def test_vos_cost_counter_grows_with_same_length_deleted_records() -> None:
    q = store(max_bytes=10**9)
    fill(q, *[100] * 1000)
    costs = []
    for i in range(1000):
        q.remove(f"m{i}")
        costs.append(q.last_vos_cost)
    assert costs[0] == 1 and costs[-1] == 1000  # linear in the same-length free records
    q.put("x", 100)
    assert q.last_vos_cost == 1001
    q.put("y", 7)
    assert q.last_vos_cost == 1  # another length does not pay for the 100s


@rules("STORAGE-6")
def test_the_model_stores_each_length_in_one_stack() -> None:
    """The model's own work does not walk the duplicates: one dict lookup and one list pop."""
    q = store(max_bytes=10**9)
    fill(q, *[100] * 20_000)
    for i in range(20_000):
        q.remove(f"m{i}")
    assert q._index[100][-1] == 19_999 * 100  # most recent on top
    assert q.put("x", 100) == "ok" and q.offset_of("x") == 19_999 * 100


# ---------------------------------------------------------------- edges and misuse
@rules("STORAGE-1")
def test_remove_of_an_unknown_or_removed_id_is_record_not_found() -> None:
    q = store()
    fill(q, 10)
    assert q.remove("nope") == "e$record_not_found"
    assert q.remove("m0") == "ok"
    assert q.remove("m0") == "e$record_not_found"
    assert q.free_slots == 1


@pytest.mark.parametrize("kw", [{"max_bytes": -1}, {"block_size": 0}, {"extent_size": 0},
                                {"round_to": 0}, {"round_to": []}, {"round_to": [10, -1]},
                                {"max_bytes": "big"}])
def test_bad_configuration_is_misuse(kw: dict[str, object]) -> None:
    args: dict[str, object] = {"max_bytes": 100, **kw}
    with pytest.raises(ModelMisuse):
        StoreConfig("s", **args)  # type: ignore[arg-type]


def test_misuse_is_an_exception() -> None:
    q = store()
    fill(q, 10)
    with pytest.raises(ModelMisuse):
        q.put("m0", 10)
    with pytest.raises(ModelMisuse):
        q.put("z", 0)
    with pytest.raises(ModelMisuse):
        q.close_requester()
    with pytest.raises(ModelMisuse):
        q.truncate("operator")


@rules("STORAGE-5", "STORAGE-7")
def test_world_call_runs_the_scenario_operations() -> None:
    world = World()
    assert world.call("store", name="s", max_bytes=300, block_size=100, extent_size=1, round_to=None,
                      transaction_file=False) is None
    assert world.call("put", store="s", id=1, size=200) == "ok"
    assert world.call("put", store="s", id=2, size=150) == "e$max_file_exceeded"
    assert world.call("remove", store="s", id=1) == "ok"
    assert world.call("open_requester", store="s") is None
    assert world.call("truncate", store="s", caller="server") == "e$no_truncate_queue"
    assert world.call("close_requester", store="s") is None
    state = world.call("store_state", store="s")
    assert state == {"used_bytes": 200, "live": 0, "free_slots": 1, "index_entries": 1, "blocks_used": 2,
                     "last_message": 1}
    assert world.call("truncate", store="s") == "ok"
    assert world.call("put", store="s", id=2, size=150) == "ok"
    with pytest.raises(ModelMisuse):
        world.call("put", store="nope", id=1, size=1)


# ---------------------------------------------------------------- against a naive oracle
class NaiveFile:
    """A deliberately simple list-scanning reading of note C.2, to check the fast model against."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.virgin = capacity, 0
        self.free: list[tuple[int, int]] = []  # (size, offset) in deletion order
        self.live: dict[str, tuple[int, int]] = {}

    def put(self, msg_id: str, size: int) -> tuple[str, int | None]:
        for i in range(len(self.free) - 1, -1, -1):
            if self.free[i][0] == size:
                offset = self.free.pop(i)[1]
                break
        else:
            if self.virgin + size > self.capacity:
                return "e$max_file_exceeded", None
            offset, self.virgin = self.virgin, self.virgin + size
        self.live[msg_id] = (size, offset)
        return "ok", offset

    def remove(self, msg_id: str) -> None:
        self.free.append(self.live.pop(msg_id))


@rules("STORAGE-1", "STORAGE-2", "STORAGE-3", "STORAGE-5")
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([30, 50, 50, 100, 170]), st.integers(0, 50)),
                max_size=60), st.sampled_from([300, 500, 1000]))
def test_the_model_agrees_with_a_naive_list_scan(ops: list[tuple[bool, int, int]], capacity: int) -> None:
    q, naive = store(max_bytes=capacity), NaiveFile(capacity)
    for n, (add, size, pick) in enumerate(ops):
        if add or not naive.live:
            got = q.put(f"m{n}", size)
            want, offset = naive.put(f"m{n}", size)
            assert got == want
            assert q.offset_of(f"m{n}") == offset
        else:
            victim = sorted(naive.live)[pick % len(naive.live)]
            naive.remove(victim)
            assert q.remove(victim) == "ok"
        assert q.used_bytes == naive.virgin == q.live_bytes + q.free_bytes
        assert q.free_slots == len(naive.free)
        assert q.index_entries == len({size for size, _ in naive.free})
        assert q.live == len(naive.live)


@rules("STORAGE-2")
def test_world_locate_observes_offsets() -> None:
    world = World()
    world.call("store", name="s", max_bytes=1000)
    for i in range(3):
        world.call("put", store="s", id=f"m{i}", size=10)
    world.call("remove", store="s", id="m0")
    world.call("remove", store="s", id="m1")
    world.call("put", store="s", id="x", size=10)
    assert world.call("locate", store="s", id="x") == 10  # m1's slot: the most recently freed
    assert world.call("locate", store="s", id="m0") is None


@rules("STORAGE-6")
def test_bench_printing_names_each_target(capsys: pytest.CaptureFixture[str]) -> None:
    from mqconform.commands.bench import print_model

    print_model({"queue_ops_per_s": 100_000.0, "storage_ops_per_s": 1_000_000.0,
                 "storage_cost_ratio_1e6_vs_1e3": 1.2})
    lines = capsys.readouterr().out.splitlines()
    assert "target >= 300,000" in lines[0] and lines[0].endswith("MISSED")
    assert lines[1].endswith("met")
    assert "target <= 1.5" in lines[2] and lines[2].endswith("met")
