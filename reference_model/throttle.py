"""The MDB throttle of a WebSphere z/OS listener port: hysteresis between high and low (seed S1).

Implements THROTTLE-1 .. THROTTLE-9, THROTTLE-14 .. THROTTLE-17 (the state machine) and
THROTTLE-11 .. THROTTLE-13 (the tuning advice, :func:`tuning_max_sessions`).

Reading of the seed's ambiguity (THROTTLE-3): by default (``dispatch_crossing="before_block"``) the
message that pushes the count over high is put on the WLM queue *before* the queue agent thread
blocks, so up to high + 1 work records are in process (APAR PQ90664). The other reading,
``dispatch_crossing="after_release"``, counts the crossing message but holds it until the release
and dispatches it first then.

Messages offered while the throttle is blocked stay on the destination (THROTTLE-8: nothing is
dropped); when the throttle is released the queue agent thread takes them again in arrival order,
each with its own increment, until the throttle blocks again.
"""

from __future__ import annotations

from collections import deque
from typing import Literal

import attrs

from .errors import ModelMisuse

BlockRule = Literal["gt", "ge"]
DispatchCrossing = Literal["before_block", "after_release"]
Outcome = Literal["commit", "rollback", "timeout"]
Listener = Literal["queue", "durable_topic", "nondurable_topic"]
OfferResult = Literal["queued", "held"]

BLOCK_RULES = ("gt", "ge")
CROSSINGS = ("before_block", "after_release")
OUTCOMES = ("commit", "rollback", "timeout")
LISTENERS = ("queue", "durable_topic", "nondurable_topic")


@attrs.frozen
class ThrottleConfig:
    """One listener port's throttle settings (THROTTLE-1, THROTTLE-3, THROTTLE-17).

    ``max_sessions`` is the listener port's Maximum sessions; ``low_equals_high`` is the message
    listener service custom property MDB.THROTTLE.THRESHOLD.LOW.EQUALS.HIGH; ``block_rule`` is
    ``gt`` (block when count > high, post-PQ90664, default) or ``ge`` (count >= high);
    ``listener`` ``nondurable_topic`` listens in each servant and is not throttled.
    """

    name: str
    max_sessions: int
    low_equals_high: bool = False
    block_rule: BlockRule = "gt"
    dispatch_crossing: DispatchCrossing = "before_block"
    listener: Listener = "queue"

    def __attrs_post_init__(self) -> None:
        sessions = self.max_sessions
        if not isinstance(sessions, int) or isinstance(sessions, bool) or sessions < 1:
            raise ModelMisuse(f"max_sessions must be an integer >= 1, not {self.max_sessions!r}")
        for field, value, allowed in (("block_rule", self.block_rule, BLOCK_RULES),
                                      ("dispatch_crossing", self.dispatch_crossing, CROSSINGS),
                                      ("listener", self.listener, LISTENERS)):
            if value not in allowed:
                raise ModelMisuse(f"{field} must be one of {', '.join(allowed)}, not {value!r}")

    @property
    def high(self) -> int:
        """THROTTLE-1: high = max sessions."""
        return self.max_sessions

    @property
    def low(self) -> int:
        """THROTTLE-1: low = floor(high / 2), or high with LOW.EQUALS.HIGH."""
        return self.max_sessions if self.low_equals_high else self.max_sessions // 2

    @property
    def max_in_flight(self) -> int:
        """THROTTLE-7: high + 1 under ``gt``, high under ``ge``."""
        return self.high + 1 if self.block_rule == "gt" else self.high


def worker_threads(servants: int, threads_per_servant: int) -> int:
    """WT: the worker threads of all servants of the scalable server (THROTTLE-11)."""
    if servants < 1 or threads_per_servant < 1:
        raise ModelMisuse("servants and worker threads per servant must be >= 1")
    return servants * threads_per_servant


def tuning_max_sessions(worker_threads_total: int, backlog: int = 0) -> int:
    """The advised Maximum sessions: 2·WT, or 2·(WT + N) to keep N work records ready.

    Implements THROTTLE-11, THROTTLE-12, THROTTLE-13 (3 servants x 6 threads, N = 32: 100).
    """
    if worker_threads_total < 1 or backlog < 0:
        raise ModelMisuse("worker threads must be >= 1 and the backlog N >= 0")
    return 2 * (worker_threads_total + backlog)


class Throttle:
    """The per-port in-flight count with its blocked flag and the BLOCKS / TOTAL statistics.

    Implements THROTTLE-2 .. THROTTLE-9, THROTTLE-14 .. THROTTLE-17. Every operation is O(1)
    amortised (a release takes each waiting message once).
    """

    def __init__(self, config: ThrottleConfig) -> None:
        self.config = config
        self.in_flight = 0
        self.blocked = False
        #: mdbstats BLOCKS: transitions into the blocked state (THROTTLE-9)
        self.blocks = 0
        #: mdbstats TOTAL: messages taken from the destination (each take is one work record)
        self.total = 0
        #: work records queued on the WLM queue or executing, by message id
        self._in_process: set[str] = set()
        #: after_release only: the counted crossing message, dispatched at the release
        self._crossing: str | None = None
        #: messages left on the destination while blocked, in arrival order
        self._waiting: deque[str] = deque()
        self._known: set[str] = set()

    # ------------------------------------------------------------------ observations
    @property
    def waiting(self) -> list[str]:
        """Messages that stay on the destination until the throttle is released (THROTTLE-8)."""
        held = [self._crossing] if self._crossing is not None else []
        return held + list(self._waiting)

    @property
    def in_process(self) -> frozenset[str]:
        return frozenset(self._in_process)

    # ------------------------------------------------------------------ operations
    def offer(self, msg_id: str) -> OfferResult:
        """A message arrives on the destination; ``queued`` if it became a work record now.

        THROTTLE-2 (increment, queue at count <= high), THROTTLE-3 (block above high, nothing
        queued while blocked), THROTTLE-17 (a non-durable topic listener is not throttled).
        """
        if msg_id in self._known:
            raise ModelMisuse(f"message {msg_id!r} was already offered to throttle {self.config.name!r}")
        self._known.add(msg_id)
        if self.blocked:
            self._waiting.append(msg_id)
            return "held"
        return "queued" if self._take(msg_id) else "held"

    def complete(self, msg_id: str, outcome: Outcome = "commit") -> list[str]:
        """A work record completed; returns the ids that became work records as a result.

        THROTTLE-4 (decrement by 1 whatever the outcome), THROTTLE-5 (release when the count has
        come down to low), THROTTLE-14 / THROTTLE-16 (a rolled-back or timed-out message goes back
        to the destination, ahead of later arrivals, and is taken again as a new work record).
        """
        if outcome not in OUTCOMES:
            raise ModelMisuse(f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r}")
        if msg_id not in self._in_process:
            raise ModelMisuse(f"message {msg_id!r} is not in process on throttle {self.config.name!r}")
        self._in_process.discard(msg_id)
        self.in_flight -= 1
        if outcome != "commit":
            self._waiting.appendleft(msg_id)
        if self.blocked and self._released():
            self.blocked = False
        return self._drain() if not self.blocked else []

    # ------------------------------------------------------------------ internals
    def _over(self) -> bool:
        """THROTTLE-3: the block test after an increment."""
        if self.config.block_rule == "gt":
            return self.in_flight > self.config.high
        return self.in_flight >= self.config.high

    def _released(self) -> bool:
        """THROTTLE-5: the release test after a decrement."""
        return self.in_flight <= self.config.low

    def _take(self, msg_id: str) -> bool:
        """The queue agent thread takes one message; True if its work record was queued."""
        self.total += 1
        self.in_flight += 1
        # THROTTLE-17: a non-durable topic listener runs in each servant and never blocks
        if self.config.listener != "nondurable_topic" and self._over():
            self.blocked = True
            self.blocks += 1
            if self.config.dispatch_crossing == "after_release":
                self._crossing = msg_id
                return False
        self._in_process.add(msg_id)
        return True

    def _drain(self) -> list[str]:
        """After a release: dispatch the held crossing message, then take waiting messages in order."""
        queued: list[str] = []
        if self._crossing is not None:
            queued.append(self._crossing)
            self._in_process.add(self._crossing)
            self._crossing = None
        while self._waiting and not self.blocked:
            msg_id = self._waiting.popleft()
            if self._take(msg_id):
                queued.append(msg_id)
        return queued
