"""VOS queue files: exact-length reuse of the most recently deleted slot, full-and-empty, truncate."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..driver import Inconclusive
from ..flow_machine import FlowMachine
from ..queue_machine import WHICH
from ..rules import rules_for


class StorageMachine(FlowMachine):
    area = "storage"
    RULES = rules_for("storage")
    REQUIRES = ("storage",)

    @initialize(max_bytes=st.sampled_from([600, 1000, 4096]), transaction_file=st.booleans(),
                extent_size=st.sampled_from([1, 1, 2]))
    def setup(self, max_bytes: int, transaction_file: bool, extent_size: int) -> None:
        if not self.can("storage"):
            return
        self.live: dict[str, int] = {}
        self.freed: list[int] = []
        self.requesters = 0
        self.d.both("store", {"name": "s", "max_bytes": max_bytes, "block_size": 1,
                              "extent_size": extent_size, "transaction_file": transaction_file})
        self.ready = True

    def _state(self) -> dict[str, int]:
        result = self.adapter.call("store_state", store="s")
        if not result.is_ok:
            raise Inconclusive(f"store_state: {result.error}")
        return dict(result.value)

    @precondition(lambda self: self.ready)
    @rule(size=st.sampled_from([50, 100, 100, 150, 300]))
    def put(self, size: int) -> None:
        before = self._state()
        msg_id = self.next_id("p")
        expected, actual = self.d.both_values("put", {"store": "s", "id": msg_id, "size": size},
                                              compare="storage.put")
        if expected == "ok":
            self.live[msg_id] = size
        if actual != "ok":
            return
        after = self._state()
        reused = after["used_bytes"] == before["used_bytes"]
        if reused:
            self.d.check("storage.exact_reuse", size in self.freed,
                         lambda: f"a {size}-byte message reused a slot though no {size}-byte slot was free")
        else:
            self.d.check("storage.reuse_before_virgin", size not in self.freed,
                         lambda: f"a {size}-byte message went to virgin space though a {size}-byte "
                                 "slot was free")
        if reused and size in self.freed:
            self.freed.remove(size)

    @precondition(lambda self: self.ready and self.live)
    @rule(index=WHICH)
    def remove(self, index: int) -> None:
        ids = sorted(self.live)
        msg_id = ids[index % len(ids)]
        self.d.both("remove", {"store": "s", "id": msg_id}, compare="storage.remove")
        self.freed.append(self.live.pop(msg_id))

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
        result = self.d.both("truncate", {"store": "s", "caller": caller}, compare="storage.truncate")
        if result == "ok":
            self.freed.clear()

    @invariant()
    def state_agrees(self) -> None:
        if not self.ready:
            return
        want = self.d.model.call("store_state", store="s").value
        got = self._state()
        self.d.observe("store_state", "s", got)
        for key in ("used_bytes", "live", "free_slots", "index_entries"):
            self.d.expect_equal(f"storage.{key}", want[key], got[key], f"store {key}: ")
