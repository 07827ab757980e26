"""Scheduled delivery: due messages go to the head in scheduler order; a full ring drops them."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import QueueMachine
from ..rules import rules_for

START_MS = 10


class SchedulingMachine(QueueMachine):
    area = "scheduling"
    RULES = rules_for("scheduling")
    REQUIRES = ("queues", "scheduling", "advance_time")

    @initialize(ring=st.sampled_from([-1, -1, 2, 3]), mode=MODE_INDEX, consume=st.booleans())
    def setup(self, ring: int, mode: int, consume: bool) -> None:
        queue: dict[str, object] = {"name": "q"}
        if ring >= 0 and self.can("ring"):
            queue["ring_size"] = ring
        self.d.both("queue", queue)
        settings = consumer_settings(self.caps, mode)
        if consume and settings is not None:
            self.declare_consumer("q", **settings)
        if self.can("advance_time"):
            self.d.both("advance", START_MS)
        self.ready = True

    def now(self) -> int:
        return int(self._broker().now_ms)

    @precondition(lambda self: self.ready and self.can("scheduling", "advance_time"))
    @rule(offset=st.sampled_from([-5, 0, 10, 20, 20, 30]), priority=st.sampled_from([4, 4, 9]))
    def send_scheduled(self, offset: int, priority: int) -> None:
        self.do_send(100, priority if self.can("priorities") else 4, scheduled_at=self.now() + offset)

    @precondition(lambda self: self.ready and self.can("advance_time"))
    @rule(ms=st.sampled_from([1, 5, 10, 25]))
    def advance(self, ms: int) -> None:
        self.d.both("advance", ms)
