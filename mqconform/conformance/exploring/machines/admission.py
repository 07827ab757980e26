"""Broker fast failure: one answer per request, never a TIMEOUT before the wait limit.

Besides comparing every answer with the model, the machine checks model-free invariants on what
the implementation answers: exactly one answer per request and no resurrection (ADMISSION-7,
ADMISSION-9), TIMEOUT never before the limit (ADMISSION-3) and by the first tick after it
(ADMISSION-10), scan answers only on scan ticks (ADMISSION-1) and with the seed's remark
(ADMISSION-2), OVERLOAD exactly at capacity (ADMISSION-8), PCBUSY only on the send queue while the
lock has been held past busy_after_ms (ADMISSION-6, ADMISSION-15 .. ADMISSION-17), nothing from the
scan when fast failure is off (ADMISSION-11), workers take the head (ADMISSION-9, ADMISSION-12),
and a send refused on arrival (REJECTREQUEST) or run and not stored (PC_SYNCHRONIZED) only while the
page cache is busy (ADMISSION-19, ADMISSION-20).

A real broker is driven the same way, step by step on the model's clock, by an adapter that holds
the broker's workers and scan (the rocketmq adapter: docs/adapters/rocketmq.md).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..checks import Checks, check
from ..driver import Inconclusive
from ..flow_machine import FlowMachine

QUEUES = ("send", "pull")
PULL_WAIT_MS = 50
SCAN_PERIOD_MS = 10
SCAN_KINDS = ("TIMEOUT_CLEAN_QUEUE", "PCBUSY_CLEAN_QUEUE")
#: ADMISSION-19 / -20: a send refused on arrival, or run and not stored, while the page cache is busy
GUARD_KINDS = ("REJECTREQUEST", "PC_SYNCHRONIZED")
#: ADMISSION-2 / ADMISSION-6: the remark of a scan answer, as BrokerFastFailure formats it
REMARK = "[{kind}]broker busy, start flow control for a while, period in queue: {behind}ms, size of queue: "


#: the component step by step (each check needs the capability admission)
ADMISSION_CHECKS = Checks(*(check(name, *rules, needs=("admission",)) for name, rules in {
    "admission.accepted": ("ADMISSION-1",),
    "admission.submit": ("ADMISSION-8", "ADMISSION-19"), "submit.accepted": ("ADMISSION-8",),
    "admission.take": ("ADMISSION-9", "ADMISSION-12"), "take.accepted": ("ADMISSION-9",),
    "lock.accepted": ("ADMISSION-6",), "advance.accepted": ("ADMISSION-1",),
    "admission.answer": ("ADMISSION-2", "ADMISSION-3", "ADMISSION-5", "ADMISSION-6", "ADMISSION-15",
                         "ADMISSION-18"),
    "admission.single_answer": ("ADMISSION-7",),
    "admission.no_resurrection": ("ADMISSION-7", "ADMISSION-9", "ADMISSION-13"),
    "admission.take_head": ("ADMISSION-9", "ADMISSION-12"),
    "admission.overload_at_capacity": ("ADMISSION-8",),
    "admission.not_before_limit": ("ADMISSION-3",),
    "admission.bounded_wait": ("ADMISSION-10", "ADMISSION-4"),
    "admission.on_tick": ("ADMISSION-1",),
    "admission.remark": ("ADMISSION-2", "ADMISSION-6"),
    "admission.pcbusy_gate": ("ADMISSION-6", "ADMISSION-15", "ADMISSION-16", "ADMISSION-17"),
    "admission.disabled_silent": ("ADMISSION-11",),
    "admission.page_cache_guard": ("ADMISSION-19", "ADMISSION-20"),
}.items()))


class AdmissionMachine(FlowMachine):
    area = "admission"
    CHECKS = ADMISSION_CHECKS
    REQUIRES = ("admission",)

    @initialize(scan_start=st.sampled_from([0, 5, 1000]), send_wait=st.sampled_from([20, 200]),
                capacity=st.integers(min_value=1, max_value=3), busy_after=st.sampled_from([30, 1000]),
                enabled=st.sampled_from([True, True, True, False]))
    def setup(self, scan_start: int, send_wait: int, capacity: int, busy_after: int, enabled: bool) -> None:
        self.scan_start = scan_start
        self.capacity = capacity
        self.busy_after = busy_after
        self.enabled = enabled
        self.waits = {"send": send_wait, "pull": PULL_WAIT_MS}
        #: request -> (queue, submitted at); in submission order
        self.submitted: dict[str, tuple[str, int]] = {}
        #: the latest answer the implementation showed for each request
        self.seen: dict[str, Any] = {}
        self.first_answer: dict[str, Any] = {}
        #: put-lock hold intervals [begin, end or None]
        self.holds: list[list[int | None]] = []
        config: dict[str, Any] = {
            "name": "broker", "scan_start_ms": scan_start, "scan_period_ms": SCAN_PERIOD_MS,
            "busy_after_ms": busy_after,
            "queues": {"send": {"wait_ms": send_wait, "capacity": capacity},
                       "pull": {"wait_ms": PULL_WAIT_MS, "capacity": capacity}}}
        if not enabled:
            config["enabled"] = False
        self.d.both("admission", config)
        self.lock_held = False
        self.ready = True

    def now(self) -> int:
        return int(self.d.model.world.now_ms)

    def _pending(self, queue: str) -> list[str]:
        """Requests of `queue` the implementation has not answered yet, oldest first."""
        return [r for r, (q, _) in self.submitted.items() if q == queue and self.seen.get(r) is None]

    def _first_tick_at_or_after(self, t: int) -> int:
        if t <= self.scan_start:
            return self.scan_start
        return self.scan_start + -(-(t - self.scan_start) // SCAN_PERIOD_MS) * SCAN_PERIOD_MS

    @precondition(lambda self: self.ready)
    @rule(queue=st.sampled_from(QUEUES))
    def submit(self, queue: str) -> None:
        request = self.next_id("r")
        waiting = len(self._pending(queue))
        self.submitted[request] = (queue, self.now())
        _, actual = self.d.both_values("submit", {"queue": queue, "id": request}, compare="admission.submit")
        if actual == "OVERLOAD":
            self.d.check("admission.overload_at_capacity", waiting == self.capacity,
                         lambda: f"{request} refused OVERLOAD with {waiting} of {self.capacity} waiting")
        elif actual == "queued":
            self.d.check("admission.overload_at_capacity", waiting < self.capacity,
                         lambda: f"{request} queued with {waiting} already waiting, capacity {self.capacity}")

    @precondition(lambda self: self.ready)
    @rule(queue=st.sampled_from(QUEUES))
    def take(self, queue: str) -> None:
        pending = self._pending(queue)
        _, actual = self.d.both_values("take", queue, compare="admission.take")
        if actual is not None and any(answer is not None for answer in self.seen.values()):
            # made whenever some request was answered before a worker took one (the only time a
            # resurrection can happen), so that the rules it evidences count as checked when it holds
            answered = self.seen.get(actual)
            self.d.check("admission.no_resurrection", answered is None, lambda: (
                f"a worker took {actual}, already answered {answered and answered['answer']}"))
        head = pending[0] if pending else None
        self.d.check("admission.take_head", actual == head,
                     lambda: f"a worker on {queue} took {actual!r}; the head was {head!r}")

    @precondition(lambda self: self.ready)
    @rule(held=st.booleans())
    def lock(self, held: bool) -> None:
        """Take or release the put lock; taking a held lock keeps its holder (ADMISSION-15)."""
        if held and not self.lock_held:
            self.holds.append([self.now(), None])
        elif not held and self.lock_held:
            self.holds[-1][1] = self.now()
        self.lock_held = held
        self.d.both("lock", "held" if held else "released")

    @precondition(lambda self: self.ready and self.can("advance_time"))
    @rule(ms=st.sampled_from([1, 5, 10, 40, 200, 1100]))
    def advance(self, ms: int) -> None:
        self.d.both("advance", ms)

    def _pcbusy_allowed(self, at: int) -> bool:
        """ADMISSION-6 / -15: some hold began before `at` - busy_after and lasted until `at`."""
        return any(begin is not None and at - begin > self.busy_after and (end is None or at <= end)
                   for begin, end in self.holds)

    def _check_scan_answer(self, request: str, queue: str, at: int, got: dict[str, Any]) -> None:
        kind, when = got["answer"], got["at_ms"]
        self.d.check("admission.disabled_silent", self.enabled,
                     lambda: f"{request} answered {kind} although fast failure is off")
        self.d.check("admission.on_tick",
                     when >= self.scan_start and (when - self.scan_start) % SCAN_PERIOD_MS == 0,
                     lambda: f"{request} answered {kind} at {when} ms, not a scan tick "
                             f"({self.scan_start} + k*{SCAN_PERIOD_MS})")
        prefix = REMARK.format(kind=kind, behind=when - at)
        text = got.get("text") or ""
        self.d.check("admission.remark", text.startswith(prefix) and got.get("code", 2) == 2,
                     lambda: f"{request}: remark {text!r} (code {got.get('code')}), expected {prefix!r}…")
        if kind == "TIMEOUT_CLEAN_QUEUE":
            waited, limit = when - at, self.waits[queue]
            self.d.check("admission.not_before_limit", waited >= limit,
                         lambda: f"{request} timed out after {waited} ms, before its {limit} ms limit")
        else:
            self.d.check("admission.pcbusy_gate", queue == "send" and self._pcbusy_allowed(when),
                         lambda: f"{request} ({queue}) drained PCBUSY at {when} ms; put-lock holds "
                                 f"{self.holds}, busy after {self.busy_after} ms")

    @invariant()
    def answers_agree(self) -> None:
        if not self.ready:
            return
        now = self.now()
        for request, (queue, at) in self.submitted.items():
            want = self.d.model.call("request", id=request).value
            result = self.adapter.call("request", id=request)
            if not result.is_ok:
                raise Inconclusive(f"request {request}: {result.error}")
            got = result.value
            self.d.expect_equal("admission.answer", want, got, f"answer to {request}: ")
            if got is not None and got != self.seen.get(request):
                # one history row per answer shown (ADMISSION-7, ADMISSION-3 history checks)
                self.d.observe("answer", queue, {
                    "id": request, "answer": got.get("answer"), "at_ms": got.get("at_ms"),
                    "submitted_ms": at, "wait_ms": self.waits[queue]})
            self.seen[request] = got
            if got is None:
                due = self._first_tick_at_or_after(max(self.scan_start, at + self.waits[queue]))
                self.d.check("admission.bounded_wait", not self.enabled or now < due,
                             lambda r=request, t=due: f"{r} still waits at {now} ms; the tick at {t} ms "
                                                      f"should have answered it")
                continue
            first = self.first_answer.setdefault(request, got)
            self.d.check("admission.single_answer", first == got,
                         lambda r=request, a=first, b=got: f"{r} was answered {a!r} and later {b!r}")
            if got["answer"] in SCAN_KINDS:
                self._check_scan_answer(request, queue, at, got)
            elif got["answer"] in GUARD_KINDS:
                self._check_guard_answer(request, queue, got)

    def _check_guard_answer(self, request: str, queue: str, got: dict[str, Any]) -> None:
        """ADMISSION-19 / -20: a send refused on arrival or run unstored only while the cache is busy."""
        kind, when = got["answer"], got["at_ms"]
        self.d.check("admission.page_cache_guard", queue == "send" and self._pcbusy_allowed(when),
                     lambda: f"{request} ({queue}) answered {kind} at {when} ms; put-lock holds "
                             f"{self.holds}, busy after {self.busy_after} ms")
