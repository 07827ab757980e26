"""The MDB throttle: hysteresis between high (max sessions) and low; never queue while blocked.

Besides comparing every answer with the model, the machine checks model-free invariants on what
the implementation shows: nothing queued while blocked (THROTTLE-3), release only at count <= low
(THROTTLE-5), 0 <= in_flight <= high + 1 (gt) or high (ge) (THROTTLE-7), the count equals the work
records reported queued and not completed (THROTTLE-2, THROTTLE-4), and no message is lost or
invented on release (THROTTLE-8). The seed's worked example, high 2 and low 1 (THROTTLE-6), compares
the count and the blocked flag under a check of its own (`throttle.high2_low1`), and with high 1 under
the ge rule at most one work record is in process (`throttle.one_at_a_time`, THROTTLE-15).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..checks import Checks, check
from ..driver import Inconclusive
from ..flow_machine import FlowMachine
from ..queue_machine import WHICH

#: completion outcomes; a commit is the common case (THROTTLE-4, THROTTLE-14, THROTTLE-16)
OUTCOMES = st.sampled_from(["commit", "commit", "commit", "rollback", "timeout"])
#: the component step by step (offer, complete, the model-free invariants); the seed's worked example
#: (high 2, low 1), and high 1 under ge (one_at_a_time)
THROTTLE_CHECKS = Checks(
    check("throttle.accepted", "THROTTLE-1"),
    check("throttle.offer", "THROTTLE-2", "THROTTLE-3", "THROTTLE-17"), check("offer.accepted", "THROTTLE-2"),
    check("throttle.release", "THROTTLE-4", "THROTTLE-5", "THROTTLE-8", "THROTTLE-14", "THROTTLE-16"),
    check("complete.accepted", "THROTTLE-4"),
    check("throttle.in_flight", "THROTTLE-2", "THROTTLE-4", "THROTTLE-14", "THROTTLE-16"),
    check("throttle.blocked", "THROTTLE-1", "THROTTLE-3", "THROTTLE-5"),
    check("throttle.blocks", "THROTTLE-9"),
    check("throttle.waiting", "THROTTLE-3", "THROTTLE-8"),
    check("throttle.no_queue_while_blocked", "THROTTLE-3"), check("throttle.release_at_low", "THROTTLE-5"),
    check("throttle.no_loss", "THROTTLE-8"), check("throttle.in_flight_bound", "THROTTLE-7"),
    check("throttle.count_matches_work", "THROTTLE-2", "THROTTLE-4"),
    check("throttle.waiting_only_while_blocked", "THROTTLE-5", "THROTTLE-10"),
    check("throttle.high2_low1", "THROTTLE-6"), check("throttle.one_at_a_time", "THROTTLE-15"))


class ThrottleMachine(FlowMachine):
    area = "throttle"
    CHECKS = THROTTLE_CHECKS
    REQUIRES = ("throttle",)

    @initialize(max_sessions=st.integers(min_value=1, max_value=5), low_equals_high=st.booleans(),
                block_rule=st.sampled_from(["gt", "ge"]))
    def setup(self, max_sessions: int, low_equals_high: bool, block_rule: str) -> None:
        if not self.can("throttle"):
            return
        self.high = max_sessions
        self.low = max_sessions if low_equals_high else max_sessions // 2
        self.cap = self.high + 1 if block_rule == "gt" else self.high
        self.worked_example = (self.high, self.low) == (2, 1)  # THROTTLE-6
        self.one_at_a_time = self.high == 1 and block_rule == "ge"  # THROTTLE-15
        #: work records the model says are queued or executing, and messages left on the destination
        self.in_process: list[str] = []
        self.waiting: list[str] = []
        self.d.both("throttle", {"name": "t", "max_sessions": max_sessions,
                                 "low_equals_high": low_equals_high, "block_rule": block_rule})
        self.ready = True

    def _state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        want = self.d.model.call("throttle_state", throttle="t")
        got = self.adapter.call("throttle_state", throttle="t")
        if not got.is_ok:
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
        (self.in_process if expected == "queued" else self.waiting).append(msg_id)

    @precondition(lambda self: self.ready and self.in_process)
    @rule(index=WHICH, outcome=OUTCOMES)
    def complete(self, index: int, outcome: str) -> None:
        _, before = self._state()
        msg_id = self.in_process.pop(index % len(self.in_process))
        args: dict[str, Any] = {"throttle": "t", "id": msg_id}
        if outcome != "commit":
            args["outcome"] = outcome
        expected, actual = self.d.both_values("complete", args, compare="throttle.release")
        _, after = self._state()
        released = list(actual or [])
        if before["blocked"] and (released or not after["blocked"]):
            count = before["in_flight"] - 1
            self.d.check("throttle.release_at_low", count <= self.low,
                         lambda: f"released at count {count}, above low {self.low}")
        candidates = ([msg_id] if outcome != "commit" else []) + self.waiting
        self.d.check("throttle.no_loss", released == candidates[:len(released)],
                     lambda: f"completing {msg_id} ({outcome}) queued {released}; the messages waiting "
                             f"on the destination, in order, were {candidates}")
        if outcome != "commit":
            self.waiting.insert(0, msg_id)
        queued = list(expected or [])
        self.in_process.extend(queued)
        self.waiting = [m for m in self.waiting if m not in queued]

    @invariant()
    def state_agrees(self) -> None:
        if not self.ready:
            return
        want, got = self._state()
        self.d.observe("throttle_state", "t", got)
        self.d.expect_equal("throttle.in_flight", want["in_flight"], got["in_flight"], "in flight: ")
        self.d.expect_equal("throttle.blocked", want["blocked"], got["blocked"], "blocked: ")
        if "blocks" in got:
            self.d.expect_equal("throttle.blocks", want["blocks"], got["blocks"], "BLOCKS statistic: ")
        if "waiting" in got:
            self.d.expect_equal("throttle.waiting", want["waiting"], got["waiting"],
                                "messages waiting on the destination: ")
        in_flight = got["in_flight"]
        if self.worked_example:
            self.d.expect_equal("throttle.high2_low1", (want["in_flight"], want["blocked"]),
                                (in_flight, got["blocked"]), "high 2, low 1: (in flight, blocked): ")
        if self.one_at_a_time:
            self.d.check("throttle.one_at_a_time", in_flight <= 1,
                         lambda: f"high 1 under the ge rule, yet {in_flight} work records are in process")
        self.d.check("throttle.in_flight_bound", 0 <= in_flight <= self.cap,
                     lambda: f"in flight {in_flight} outside 0..{self.cap}")
        self.d.check("throttle.count_matches_work", in_flight == len(self.in_process),
                     lambda: f"in flight {in_flight}, but {len(self.in_process)} work records are queued "
                             f"and not completed: {self.in_process}")
        self.d.check("throttle.waiting_only_while_blocked", got["blocked"] or not self.waiting,
                     lambda: f"not blocked, yet {self.waiting} still wait on the destination")
