"""Broker fast failure: one answer per request, never a TIMEOUT before the wait limit."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..driver import Inconclusive
from ..flow_machine import FlowMachine
from ..rules import rules_for

QUEUES = ("send", "pull")


class AdmissionMachine(FlowMachine):
    area = "admission"
    RULES = rules_for("admission")
    REQUIRES = ("admission",)

    @initialize(scan_start=st.sampled_from([0, 5, 1000]), send_wait=st.sampled_from([20, 200]),
                capacity=st.integers(min_value=1, max_value=3), busy_after=st.sampled_from([30, 1000]))
    def setup(self, scan_start: int, send_wait: int, capacity: int, busy_after: int) -> None:
        if not self.can("admission"):
            return
        self.waits = {"send": send_wait, "pull": 50}
        self.submitted: dict[str, tuple[str, int]] = {}
        self.first_answer: dict[str, Any] = {}
        self.d.both("admission", {
            "name": "broker", "scan_start_ms": scan_start, "scan_period_ms": 10, "busy_after_ms": busy_after,
            "queues": {"send": {"wait_ms": send_wait, "capacity": capacity},
                       "pull": {"wait_ms": 50, "capacity": capacity}}})
        self.lock_held = False
        self.ready = True

    def now(self) -> int:
        return int(self.d.model.world.now_ms)

    @precondition(lambda self: self.ready)
    @rule(queue=st.sampled_from(QUEUES))
    def submit(self, queue: str) -> None:
        request = self.next_id("r")
        self.submitted[request] = (queue, self.now())
        self.d.both("submit", {"queue": queue, "id": request}, compare="admission.submit")

    @precondition(lambda self: self.ready)
    @rule(queue=st.sampled_from(QUEUES))
    def take(self, queue: str) -> None:
        self.d.both("take", queue, compare="admission.take")

    @precondition(lambda self: self.ready)
    @rule()
    def toggle_lock(self) -> None:
        self.lock_held = not self.lock_held
        self.d.both("lock", "held" if self.lock_held else "released")

    @precondition(lambda self: self.ready and self.can("advance_time"))
    @rule(ms=st.sampled_from([1, 5, 10, 40, 200, 1100]))
    def advance(self, ms: int) -> None:
        self.d.both("advance", ms)

    @invariant()
    def answers_agree(self) -> None:
        if not self.ready:
            return
        for request, (queue, at) in self.submitted.items():
            want = self.d.model.call("request", id=request).value
            result = self.adapter.call("request", id=request)
            if not result.is_ok:
                raise Inconclusive(f"request {request}: {result.error}")
            got = result.value
            self.d.expect_equal("admission.answer", want, got, f"answer to {request}: ")
            if got is None:
                continue
            first = self.first_answer.setdefault(request, got)
            self.d.check("admission.single_answer", first == got,
                         lambda r=request, a=first, b=got: f"{r} was answered {a!r} and later {b!r}")
            if got["answer"] == "TIMEOUT_CLEAN_QUEUE":
                waited = got["at_ms"] - at
                limit = self.waits[queue]
                self.d.check("admission.not_before_limit", waited >= limit,
                             lambda r=request, w=waited, lim=limit: f"{r} timed out after {w} ms, "
                                                                   f"before its {lim} ms limit")
