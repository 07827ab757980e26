"""Redelivery: delivery counts, undo on cancel, delay on rollback not on close, dead letters."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import WHICH
from ..rules import rules_for
from .ring import RingMachine


class RedeliveryMachine(RingMachine):
    area = "redelivery"
    RULES = rules_for("redelivery")
    QUEUES = ("q", "dlq")
    USE_PRIORITIES = False
    REQUIRES = ("queues",)

    @initialize(attempts=st.integers(min_value=1, max_value=4), delay=st.sampled_from([0, 0, 20, 50]),
                multiplier=st.sampled_from([1.0, 2.0]), cap=st.sampled_from([None, 60]), mode=MODE_INDEX)
    def setup(self, attempts: int, delay: int, multiplier: float, cap: int | None, mode: int) -> None:
        self.ring = -1
        queue: dict[str, Any] = {"name": "q", "max_delivery_attempts": attempts}
        if self.can("redelivery_delay") and delay:
            queue.update(redelivery_delay_ms=delay, redelivery_multiplier=multiplier,
                         max_redelivery_delay_ms=cap)
        if self.can("dead_letter"):
            self.d.both("address", {"name": "dla"})
            self.d.both("queue", {"name": "dlq", "address": "dla"})
            queue["dead_letter"] = "dla"
        else:
            self.d.both("queue", {"name": "dlq"})
        self.d.both("queue", queue)
        settings = consumer_settings(self.caps, mode)
        if settings is not None:
            self.declare_consumer("q", **settings)
        self.ready = True

    @precondition(lambda self: self.ready)
    @rule(size_index=WHICH, priority=st.just(4))
    def send(self, size_index: int, priority: int) -> None:
        self.do_send(100, 4)

    @precondition(lambda self: False)
    @rule(size=st.just(0))
    def set_ring_size(self, size: int) -> None:  # not part of this area
        pass

    @precondition(lambda self: self.ready and self.can("advance_time"))
    @rule(ms=st.sampled_from([5, 20, 50, 200]))
    def advance(self, ms: int) -> None:
        self.d.both("advance", ms)
