"""RocketMQ broker fast failure: request queues scanned every 10 ms (seed S2, BrokerFastFailure).

Implements ADMISSION-1 .. ADMISSION-13 and ADMISSION-15 .. ADMISSION-20: per-queue wait limits and
capacities with the seed's defaults, the fixed-rate scan from a start offset, the PCBUSY drain of
the send queue, the head-only TIMEOUT scan, OVERLOAD at capacity and exactly one answer per request;
and the broker's two other page-cache guards on a send, which the seed does not name (named option
``page_cache_guards``, on by default as in every RocketMQ release): REJECTREQUEST on arrival
(ADMISSION-19) and PC_SYNCHRONIZED when a worker runs it (ADMISSION-20).

Time is the logical clock the caller passes in. A request submitted at time t is queued after any
scan tick at t has run (ticks at t come first). The page-cache predicate is exact
(flow-control-semantics.md A.3): busy iff a thread holds the put lock and
``busy_after_ms < now - lock_begin < busy_upper_ms``; a free lock is ``lock_begin = None``, never 0.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

import attrs

from .errors import ModelMisuse

AnswerKind = Literal["processed", "TIMEOUT_CLEAN_QUEUE", "PCBUSY_CLEAN_QUEUE", "OVERLOAD",
                     "REJECTREQUEST", "PC_SYNCHRONIZED"]
SubmitResult = Literal["queued", "OVERLOAD", "REJECTREQUEST"]

#: RemotingSysResponseCode.SYSTEM_BUSY (ADMISSION-2)
SYSTEM_BUSY = 2
#: the order in which a tick scans the queues after the PCBUSY drain (ADMISSION-18); any other
#: queue is scanned after these, in configuration order
SCAN_ORDER = ("send", "pull", "lite_pull", "heartbeat", "transaction", "ack", "admin")
#: ADMISSION-6, ADMISSION-17: the PCBUSY drain applies to this queue only
SEND = "send"

OVERLOAD_TEXT = "[OVERLOAD]system busy, start flow control for a while"
#: ADMISSION-19: SendMessageProcessor#rejectRequest, answered by the remoting layer before queueing
REJECTREQUEST_TEXT = "[REJECTREQUEST]system busy, start flow control for a while"
#: ADMISSION-20: HookUtils#checkBeforePutMessage (OS_PAGE_CACHE_BUSY), answered SYSTEM_BUSY since 5.3.0
PC_SYNCHRONIZED_TEXT = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
_CLEAN_TEXT = ("[{kind}]broker busy, start flow control for a while, period in queue: {behind}ms, "
               "size of queue: {size}")


def clean_text(kind: str, behind_ms: int, size: int) -> str:
    """The remark of a scan answer (ADMISSION-2, ADMISSION-6); size is the queue after removal."""
    return _CLEAN_TEXT.format(kind=kind, behind=behind_ms, size=size)


@attrs.frozen
class QueueLimit:
    """One request queue: its wait limit (ms in queue before TIMEOUT) and capacity (ADMISSION-4, -8)."""

    wait_ms: int
    capacity: int

    def __attrs_post_init__(self) -> None:
        if self.wait_ms < 0 or self.capacity < 1:
            raise ModelMisuse(f"a queue needs wait_ms >= 0 and capacity >= 1, "
                              f"not {self.wait_ms}, {self.capacity}")


def default_queues() -> dict[str, QueueLimit]:
    """The seed's defaults (ADMISSION-4, ADMISSION-8; BrokerConfig)."""
    return {
        "send": QueueLimit(wait_ms=200, capacity=10_000),
        "pull": QueueLimit(wait_ms=5_000, capacity=100_000),
        "heartbeat": QueueLimit(wait_ms=31_000, capacity=50_000),
        "transaction": QueueLimit(wait_ms=3_000, capacity=100_000),
    }


def _merge_queues(given: Mapping[str, QueueLimit] | None) -> Mapping[str, QueueLimit]:
    """The defaults, with the given queues replacing or adding to them."""
    merged = default_queues()
    for name, limit in (given or {}).items():
        if not isinstance(limit, QueueLimit):
            raise ModelMisuse(f"queue {name!r}: expected a QueueLimit, not {limit!r}")
        merged[name] = limit
    return MappingProxyType(merged)


@attrs.frozen
class AdmissionConfig:
    """Fast-failure settings of one broker (ADMISSION-1, -4, -6, -8, -11, -15).

    ``scan_start_ms``: the first tick (1000 ms after start); ``scan_period_ms``: fixed rate (10 ms);
    ``enabled``: brokerFastFailureEnable; ``busy_after_ms``: osPageCacheBusyTimeOutMills (1000);
    ``busy_upper_ms``: the hard-coded sanity bound of the PCBUSY predicate (10,000,000);
    ``page_cache_guards``: a send that arrives, or that a worker runs, while the page cache is busy is
    refused then (ADMISSION-19, ADMISSION-20; whatever ``enabled``); off, only the scan's drain
    answers PCBUSY, as seed S2's text alone says.
    """

    name: str = "broker"
    scan_start_ms: int = 1000
    scan_period_ms: int = 10
    enabled: bool = True
    busy_after_ms: int = 1000
    busy_upper_ms: int = 10_000_000
    page_cache_guards: bool = True
    queues: Mapping[str, QueueLimit] = attrs.field(factory=default_queues, converter=_merge_queues,
                                                   hash=False)

    def __attrs_post_init__(self) -> None:
        if self.scan_start_ms < 0 or self.scan_period_ms < 1:
            raise ModelMisuse("scan_start_ms must be >= 0 and scan_period_ms >= 1")
        if self.busy_after_ms < 0 or self.busy_upper_ms <= self.busy_after_ms:
            raise ModelMisuse("busy_after_ms must be >= 0 and below busy_upper_ms")

    def scan_order(self) -> list[str]:
        """ADMISSION-18: the queues in the order a tick scans them."""
        known = [q for q in SCAN_ORDER if q in self.queues]
        return known + [q for q in self.queues if q not in SCAN_ORDER]


@attrs.frozen
class Answer:
    """The one answer a request gets (ADMISSION-7): who answered it, when, with which remark."""

    kind: AnswerKind
    at_ms: int
    text: str | None = None

    @property
    def code(self) -> int | None:
        """SYSTEM_BUSY (2) for every rejection (PC_SYNCHRONIZED: the 5.3.0 and later code; it was
        SYSTEM_ERROR before), None for a request a worker took and stored."""
        return None if self.kind == "processed" else SYSTEM_BUSY


@attrs.frozen
class _Request:
    id: str
    queue: str
    created_ms: int


class Admission:
    """The broker's request queues, its workers' takes and the fast-failure scanner.

    Implements ADMISSION-1 .. ADMISSION-13, ADMISSION-15 .. ADMISSION-20. submit and take are O(1);
    a tick costs O(queues + requests it answers); next_tick_ms is O(queues).
    """

    def __init__(self, config: AdmissionConfig) -> None:
        self.config = config
        self._order = config.scan_order()
        self._queues: dict[str, deque[_Request]] = {q: deque() for q in self._order}
        self._answers: dict[str, Answer | None] = {}
        #: ids a worker executed (stored), in execution order (ADMISSION-12, ADMISSION-13)
        self.executed: list[str] = []
        self.lock_begin: int | None = None

    # ------------------------------------------------------------------ observations
    def queue_length(self, queue: str) -> int:
        return len(self._queue(queue))

    def pending(self, queue: str) -> list[str]:
        """The ids waiting in `queue`, head first."""
        return [r.id for r in self._queue(queue)]

    def answer(self, request_id: str) -> Answer | None:
        """The request's answer, or None while it waits in its queue."""
        try:
            return self._answers[request_id]
        except KeyError:
            raise ModelMisuse(f"unknown request {request_id!r}") from None

    def page_cache_busy(self, now: int) -> bool:
        """ADMISSION-15 (isOSPageCacheBusy): held, and busy_after < now - begin < busy_upper (strict)."""
        if self.lock_begin is None:
            return False
        held_for = now - self.lock_begin
        return self.config.busy_after_ms < held_for < self.config.busy_upper_ms

    # ------------------------------------------------------------------ operations
    def submit(self, queue: str, request_id: str, now: int) -> SubmitResult:
        """A request arrives: queued, or refused at once: REJECTREQUEST if it is a send and the page
        cache is busy (ADMISSION-19, checked before the queue), else OVERLOAD if its queue is full
        (ADMISSION-8)."""
        q = self._queue(queue)
        if request_id in self._answers:
            raise ModelMisuse(f"request {request_id!r} was already submitted")
        if self._guarded(queue, now):
            self._answers[request_id] = Answer("REJECTREQUEST", now, REJECTREQUEST_TEXT)
            return "REJECTREQUEST"
        if len(q) >= self.config.queues[queue].capacity:
            self._answers[request_id] = Answer("OVERLOAD", now, OVERLOAD_TEXT)
            return "OVERLOAD"
        q.append(_Request(request_id, queue, now))
        self._answers[request_id] = None
        return "queued"

    def take(self, queue: str, now: int) -> str | None:
        """A free worker takes the head of `queue` and executes it (ADMISSION-9, ADMISSION-12); a send
        run while the page cache is busy is answered PC_SYNCHRONIZED and not stored (ADMISSION-20)."""
        q = self._queue(queue)
        if not q:
            return None
        request = q.popleft()
        if self._guarded(queue, now):
            self._answers[request.id] = Answer("PC_SYNCHRONIZED", now, PC_SYNCHRONIZED_TEXT)
            return request.id
        self._answers[request.id] = Answer("processed", now)
        self.executed.append(request.id)
        return request.id

    def set_lock(self, held: bool, now: int) -> None:
        """The commit-log put lock is taken (begin = now) or released (begin = None).

        Taking a lock already held keeps the holder's begin time."""
        if not held:
            self.lock_begin = None
        elif self.lock_begin is None:
            self.lock_begin = now

    # ------------------------------------------------------------------ the scanner
    def busy(self) -> bool:
        """Could a scan tick do anything: fast failure is on and some queue holds a request."""
        return self.config.enabled and any(self._queues.values())

    def _first_tick_at_or_after(self, t: int) -> int:
        start, period = self.config.scan_start_ms, self.config.scan_period_ms
        if t <= start:
            return start
        return start + -(-(t - start) // period) * period

    def next_tick_ms(self, after_ms: int) -> int | None:
        """The first scan tick strictly after `after_ms` at which the scan has work (ADMISSION-1).

        Ticks in between would find every head younger than its limit and the page cache not busy,
        so they change nothing and are skipped. None: no tick will ever do anything in this state.
        """
        if not self.config.enabled:
            return None
        earliest = after_ms + 1
        candidates: list[int] = []
        for name, q in self._queues.items():
            if q:
                expires = q[0].created_ms + self.config.queues[name].wait_ms
                candidates.append(self._first_tick_at_or_after(max(earliest, expires)))
        if self.lock_begin is not None and self._queues.get(SEND):
            busy_from = self.lock_begin + self.config.busy_after_ms + 1
            tick = self._first_tick_at_or_after(max(earliest, busy_from))
            if tick < self.lock_begin + self.config.busy_upper_ms:
                candidates.append(tick)
        return min(candidates) if candidates else None

    def tick(self, now: int) -> None:
        """One scan at tick time `now`: the PCBUSY drain of the send queue, then the timeout scan.

        ADMISSION-6 / -15 / -17 (drain), ADMISSION-2 / -3 / -5 (head-only, inclusive >=),
        ADMISSION-11 (off when disabled), ADMISSION-18 (order).
        """
        if not self.config.enabled:
            return
        if now < self.config.scan_start_ms or (now - self.config.scan_start_ms) % self.config.scan_period_ms:
            raise ModelMisuse(f"{now} ms is not a scan tick")
        send = self._queues.get(SEND)
        while send and self.page_cache_busy(now):
            self._reject(send.popleft(), "PCBUSY_CLEAN_QUEUE", now, len(send))
        for name in self._order:
            q = self._queues[name]
            wait_ms = self.config.queues[name].wait_ms
            while q and self._expired(q[0], wait_ms, now):
                self._reject(q.popleft(), "TIMEOUT_CLEAN_QUEUE", now, len(q))

    # ------------------------------------------------------------------ internals
    def _guarded(self, queue: str, now: int) -> bool:
        """ADMISSION-19 / -20: a send meets a busy page cache (the guards are on)."""
        return self.config.page_cache_guards and queue == SEND and self.page_cache_busy(now)

    def _queue(self, queue: str) -> deque[_Request]:
        try:
            return self._queues[queue]
        except KeyError:
            raise ModelMisuse(f"unknown request queue {queue!r} (known: {', '.join(self._order)})") from None

    def _expired(self, request: _Request, wait_ms: int, now: int) -> bool:
        """ADMISSION-3: time in queue has reached the limit (inclusive)."""
        return now - request.created_ms >= wait_ms

    def _reject(self, request: _Request, kind: AnswerKind, now: int, size: int) -> None:
        self._answers[request.id] = Answer(kind, now, clean_text(kind, now - request.created_ms, size))
