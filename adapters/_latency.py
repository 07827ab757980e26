"""The broker's round-trip latency as measured during a run, and the real-time margins that follow it.

A broker adapter with a real clock waits on the broker in two ways: after an advance, until a timer
the model has run out has surely run out on the broker too (a TTL: ``advance``'s margin), and after an
operation, until the broker's asynchronous state has caught up (the adapters' settle polls, bounded).
Fixed margins of 50 ms and bounds of 0.5-1 s are right on a quiet machine; on a loaded one every
round trip takes longer and so does the broker's own work, and a fixed margin turns load into false
findings. :class:`LatencyMeter` keeps the round-trip times of the run's recent operations, and each
margin grows with them: never below its fixed floor, never above a cap (a run stays bounded).
"""

from __future__ import annotations

import statistics
from collections import deque

#: operations whose duration is not a round trip (they sleep or start a server): never recorded
NOT_ROUND_TRIPS = frozenset({"advance", "restart", "open", "close", "pause"})
#: the operations the meter remembers (a window: the latency of the last minute, not of the run)
WINDOW = 64
#: fewer samples than this and the meter knows nothing: the floors hold
MIN_SAMPLES = 8
#: a TTL margin is this many times the typical round trip (the median: an operation that waits for
#: an answer that does not come, a receive of nothing, is not typical)
TTL_FACTOR = 6.0
#: a settle bound is this many times the typical round trip
SETTLE_FACTOR = 30.0
#: no margin grows beyond this many times its floor
CAP_FACTOR = 4.0


class LatencyMeter:
    """Round-trip times (seconds) of an adapter's recent operations."""

    def __init__(self) -> None:
        self._recent: deque[float] = deque(maxlen=WINDOW)

    def record(self, op: str, seconds: float) -> None:
        """One operation took `seconds` (ignored for operations that are not round trips)."""
        if op not in NOT_ROUND_TRIPS and seconds >= 0:
            self._recent.append(seconds)

    def typical_s(self) -> float | None:
        """The median of the recent round trips; None before MIN_SAMPLES."""
        if len(self._recent) < MIN_SAMPLES:
            return None
        return statistics.median(self._recent)

    def _grown(self, floor_s: float, factor: float) -> float:
        typical = self.typical_s()
        if typical is None:
            return floor_s
        return min(floor_s * CAP_FACTOR, max(floor_s, factor * typical))

    def ttl_margin_s(self, floor_s: float) -> float:
        """How long after a timer runs out (since its real start) the broker has surely acted on it."""
        return self._grown(floor_s, TTL_FACTOR)

    def settle_s(self, floor_s: float) -> float:
        """How long an adapter waits for the broker's asynchronous state before taking it as it is."""
        return self._grown(floor_s, SETTLE_FACTOR)

    def summary(self) -> dict[str, float | int | None]:
        """The figures a run records: samples, median and 90th percentile round trip (ms)."""
        enough = len(self._recent) >= MIN_SAMPLES
        median = statistics.median(self._recent) if enough else None
        p90 = statistics.quantiles(self._recent, n=10, method="inclusive")[-1] if enough else None
        return {"samples": len(self._recent),
                "median_ms": None if median is None else round(median * 1000, 2),
                "p90_ms": None if p90 is None else round(p90 * 1000, 2)}
