"""The MDB throttle: hysteresis between high (max sessions) and low; never queue while blocked."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..flow_machine import FlowMachine
from ..queue_machine import WHICH
from ..rules import rules_for


class ThrottleMachine(FlowMachine):
    area = "throttle"
    RULES = rules_for("throttle")
    REQUIRES = ("throttle",)

    @initialize(max_sessions=st.integers(min_value=1, max_value=5), low_equals_high=st.booleans(),
                block_rule=st.sampled_from(["gt", "ge"]))
    def setup(self, max_sessions: int, low_equals_high: bool, block_rule: str) -> None:
        if not self.can("throttle"):
            return
        self.in_process: list[str] = []
        self.d.both("throttle", {"name": "t", "max_sessions": max_sessions,
                                 "low_equals_high": low_equals_high, "block_rule": block_rule})
        self.ready = True

    def _state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        want = self.d.model.call("throttle_state", throttle="t")
        got = self.adapter.call("throttle_state", throttle="t")
        if not got.is_ok:
            from ..driver import Inconclusive
            raise Inconclusive(f"throttle_state: {got.error}")
        return want.value, got.value

    @precondition(lambda self: self.ready)
    @rule()
    def offer(self) -> None:
        _, before = self._state()
        msg_id = self.next_id("w")
        expected, actual = self.d.both_values("offer", {"throttle": "t", "id": msg_id},
                                              compare="throttle.offer")
        if before["blocked"]:
            self.d.check("throttle.no_queue_while_blocked", actual != "queued",
                         lambda: f"{msg_id} was queued while the throttle was blocked")
        if expected == "queued":
            self.in_process.append(msg_id)

    @precondition(lambda self: self.ready and self.in_process)
    @rule(index=WHICH)
    def complete(self, index: int) -> None:
        msg_id = self.in_process.pop(index % len(self.in_process))
        released = self.d.both("complete", {"throttle": "t", "id": msg_id}, compare="throttle.release")
        self.in_process.extend(released or [])

    @invariant()
    def state_agrees(self) -> None:
        if not self.ready:
            return
        want, got = self._state()
        self.d.observe("throttle_state", "t", got)
        self.d.expect_equal("throttle.in_flight", want["in_flight"], got["in_flight"], "in flight: ")
        self.d.expect_equal("throttle.blocked", want["blocked"], got["blocked"], "blocked: ")
