"""VOS queue files: exact-length reuse of the most recently deleted slot, full-and-empty, truncate.

Every answer is compared with the model (storage.put, storage.remove, storage.truncate, the state
counters) and, independently of the model, with the machine's own shadow of the file built from the
implementation's answers: reuse only of exact lengths, most recently deleted first (STORAGE-1, 2,
with the `locate` observation when offered), virgin space only without an exact slot and by exactly
the stored length (STORAGE-3, 10), e$max_file_exceeded iff no exact slot and no virgin room, also when
empty (STORAGE-5, 11), bytes conserved and the index surviving emptying (STORAGE-3, 4), truncate's
conditions and its reset (STORAGE-7, 8, 9).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..checks import Checks, check
from ..driver import Inconclusive
from ..flow_machine import FlowMachine
from ..queue_machine import WHICH

SIZES = st.sampled_from([50, 100, 100, 150, 300])
STATE_KEYS = ("used_bytes", "live", "free_slots", "index_entries")
EXTRA_KEYS = ("blocks_used", "last_message")
#: the component step by step; storage.<key> compares the state's STATE_KEYS and EXTRA_KEYS
STORAGE_CHECKS = Checks(*(check(name, *rules) for name, rules in {
    "store.accepted": ("STORAGE-1",),
    "storage.put": ("STORAGE-1", "STORAGE-2", "STORAGE-3", "STORAGE-5"), "put.accepted": ("STORAGE-1",),
    "storage.remove": ("STORAGE-1",), "remove.accepted": ("STORAGE-1",),
    "open_requester.accepted": ("STORAGE-7",), "close_requester.accepted": ("STORAGE-7",),
    "storage.truncate": ("STORAGE-7", "STORAGE-8"), "truncate.accepted": ("STORAGE-7",),
    "storage.exact_reuse": ("STORAGE-1", "STORAGE-10"),
    "storage.reuse_before_virgin": ("STORAGE-2",), "storage.most_recent_slot": ("STORAGE-2",),
    "storage.virgin_growth": ("STORAGE-3", "STORAGE-10"), "storage.virgin_offset": ("STORAGE-3",),
    "storage.virgin_monotone": ("STORAGE-3",), "storage.bytes_conserved": ("STORAGE-3",),
    "storage.max_file_iff": ("STORAGE-5", "STORAGE-11"),
    "storage.truncate_conditions": ("STORAGE-7", "STORAGE-8"),
    "storage.truncate_resets": ("STORAGE-9",), "storage.index_survives": ("STORAGE-4",),
    "storage.used_bytes": ("STORAGE-3",), "storage.live": ("STORAGE-1",),
    "storage.free_slots": ("STORAGE-2", "STORAGE-4"), "storage.index_entries": ("STORAGE-4",),
    "storage.blocks_used": ("STORAGE-5",), "storage.last_message": ("STORAGE-13",),
}.items()))


class StorageMachine(FlowMachine):
    area = "storage"
    CHECKS = STORAGE_CHECKS
    REQUIRES = ("storage",)

    @initialize(max_bytes=st.sampled_from([400, 600, 1000, 4096]), transaction_file=st.booleans(),
                extent_size=st.sampled_from([1, 1, 2]), round_to=st.sampled_from([None, None, 64]))
    def setup(self, max_bytes: int, transaction_file: bool, extent_size: int, round_to: int | None) -> None:
        if not self.can("storage"):
            return
        self.capacity = max_bytes * extent_size
        self.round_to = round_to
        self.transaction_file = transaction_file
        self.live: dict[str, tuple[int, int | None]] = {}  # id -> (stored size, offset)
        self.free: dict[int, list[int | None]] = {}  # stored size -> offsets, most recently freed last
        self.gone: list[str] = []
        self.requesters = 0
        self.used = 0
        self.locatable = True
        self.d.both("store", {"name": "s", "max_bytes": max_bytes, "block_size": 100,
                              "extent_size": extent_size, "round_to": round_to,
                              "transaction_file": transaction_file})
        self.ready = True

    # ------------------------------------------------------------------ observations
    def _state(self) -> dict[str, Any]:
        result = self.adapter.call("store_state", store="s")
        if not result.is_ok:
            raise Inconclusive(f"store_state: {result.error}")
        return dict(result.value)

    def _locate(self, msg_id: str) -> int | None:
        """The implementation's offset of a live message, None when it cannot tell."""
        if not self.locatable:
            return None
        result = self.adapter.call("locate", store="s", id=msg_id)
        if result.type == "info":
            raise Inconclusive(f"locate: {result.error}")
        if not result.is_ok:
            self.locatable = False
            return None
        return result.value if isinstance(result.value, int) else None

    def _stored(self, size: int) -> int:
        step = self.round_to
        return size if step is None else -(-size // step) * step

    # ------------------------------------------------------------------ operations
    @precondition(lambda self: self.ready)
    @rule(size=SIZES)
    def put(self, size: int) -> None:
        before = self._state()["used_bytes"]
        stored = self._stored(size)
        slots = self.free.get(stored)
        msg_id = self.next_id("p")
        _, actual = self.d.both_values("put", {"store": "s", "id": msg_id, "size": size},
                                       compare="storage.put")
        if actual is None:
            return
        after = self._state()["used_bytes"]
        self.used = after
        if actual == "e$max_file_exceeded":
            self.d.check("storage.max_file_iff", not slots and before + stored > self.capacity,
                         lambda: f"a {size}-byte add was refused with {len(slots or ())} free {stored}-byte "
                                 f"slots and {self.capacity - before} virgin bytes left")
            self.d.check("storage.virgin_monotone", after == before,
                         lambda: f"a refused add moved the virgin mark {before} -> {after}")
            return
        if actual != "ok":
            return
        offset = self._locate(msg_id)
        if slots:
            self.d.check("storage.reuse_before_virgin", after == before,
                         lambda: f"a {size}-byte add went to virgin space ({before} -> {after}) though "
                                 f"{len(slots)} {stored}-byte slots were free")
            top = slots.pop()
            if not slots:
                del self.free[stored]
            if offset is not None and top is not None:
                self.d.check("storage.most_recent_slot", offset == top,
                             lambda: f"a {size}-byte add took the slot at {offset}, not the most recently "
                                     f"freed {stored}-byte slot at {top}")
        else:
            self.d.check("storage.max_file_iff", before + stored <= self.capacity,
                         lambda: f"a {size}-byte add succeeded with no {stored}-byte slot and only "
                                 f"{self.capacity - before} virgin bytes")
            self.d.check("storage.exact_reuse", after != before,
                         lambda: f"a {size}-byte add reused a slot though no {stored}-byte slot was free")
            self.d.check("storage.virgin_growth", after == before + stored,
                         lambda: f"a {size}-byte add (stored {stored}) moved the virgin mark {before} -> "
                                 f"{after}")
            if offset is not None:
                self.d.check("storage.virgin_offset", offset == before,
                             lambda: f"a virgin add was written at {offset}, not at the mark {before}")
        self.live[msg_id] = (stored, offset)

    @precondition(lambda self: self.ready and self.live)
    @rule(index=WHICH)
    def remove(self, index: int) -> None:
        ids = sorted(self.live)
        msg_id = ids[index % len(ids)]
        _, actual = self.d.both_values("remove", {"store": "s", "id": msg_id}, compare="storage.remove")
        if actual != "ok":
            return
        stored, offset = self.live.pop(msg_id)
        self.free.setdefault(stored, []).append(offset)
        self.gone.append(msg_id)

    @precondition(lambda self: self.ready and self.gone)
    @rule(index=WHICH)
    def remove_again(self, index: int) -> None:
        msg_id = self.gone[index % len(self.gone)]
        self.d.both("remove", {"store": "s", "id": msg_id}, compare="storage.remove")

    @precondition(lambda self: self.ready)
    @rule(open_=st.booleans())
    def requester(self, open_: bool) -> None:
        if open_:
            self.requesters += 1
            self.d.both("open_requester", "s")
        elif self.requesters:
            self.requesters -= 1
            self.d.both("close_requester", "s")

    @precondition(lambda self: self.ready)
    @rule(caller=st.sampled_from(["server", "server", "requester"]))
    def truncate(self, caller: str) -> None:
        if self.transaction_file:
            want = "e$invalid_io_operation"
        elif self.requesters or self.live or caller != "server":
            want = "e$no_truncate_queue"
        else:
            want = "ok"
        _, actual = self.d.both_values("truncate", {"store": "s", "caller": caller},
                                       compare="storage.truncate")
        if actual is None:
            return
        self.d.check("storage.truncate_conditions", actual == want,
                     lambda: f"truncate by a {caller} (transaction file {self.transaction_file}, "
                             f"{self.requesters} requesters, {len(self.live)} messages) gave {actual!r}, "
                             f"not {want!r}")
        if actual == "ok":
            state = self._state()
            self.d.check("storage.truncate_resets",
                         (state["used_bytes"], state["free_slots"], state["index_entries"]) == (0, 0, 0),
                         lambda: f"after a truncation the file still shows {state}")
            self.free.clear()
            self.used = 0

    # ------------------------------------------------------------------ invariants
    @invariant()
    def state_agrees(self) -> None:
        if not self.ready:
            return
        want = self.d.model.call("store_state", store="s").value
        got = self._state()
        self.d.observe("store_state", "s", got)
        for key in STATE_KEYS:
            self.d.expect_equal(f"storage.{key}", want[key], got.get(key), f"store {key}: ")
        for key in EXTRA_KEYS:
            if key in got:
                self.d.expect_equal(f"storage.{key}", want[key], got[key], f"store {key}: ")
        used = got.get("used_bytes")
        self.d.check("storage.virgin_monotone", used == self.used,
                     lambda: f"the virgin mark moved without an add or a truncation: {self.used} -> {used}")
        held = sum(size for size, _ in self.live.values())
        freed = sum(size * len(slots) for size, slots in self.free.items())
        self.d.check("storage.bytes_conserved", used == held + freed,
                     lambda: f"used_bytes {used} != live bytes {held} + free-slot bytes {freed}")
        slots = sum(len(s) for s in self.free.values())
        self.d.check("storage.index_survives", (got.get("free_slots"), got.get("index_entries"),
                                                got.get("live")) == (slots, len(self.free), len(self.live)),
                     lambda: f"index shows {got.get('free_slots')} free slots of {got.get('index_entries')} "
                             f"lengths and {got.get('live')} live; the file had {slots} freed slots of "
                             f"{len(self.free)} lengths and {len(self.live)} live")
