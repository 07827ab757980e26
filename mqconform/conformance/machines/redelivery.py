"""Redelivery: delivery counts, undo on cancel, delay on rollback not on close, dead letters.

Deep redelivery within a short budget: set-ups are biased toward short delays with a multiplier and
a cap, and `redeliver` takes one message round a whole redelivery in one step (receive, nack or
rollback, then advance to its due time or 1 ms before it), so the 4th-6th delivery of one message,
where a multiplier or cap bug shows, is a few steps deep.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import WHICH
from ..restart import RestartSteps
from ..rules import rules_for
from .ring import RingMachine

#: the longest advance a redelivery round makes (the drawn delays and caps are at most 60 ms x the
#: multiplier; a far timer such as a JetStream ack wait is left to the `advance` rule)
ROUND_ADVANCE_MAX_MS = 1000


class RedeliveryMachine(RestartSteps, RingMachine):
    area = "redelivery"
    RULES = rules_for("redelivery")
    QUEUES = ("q", "dlq")
    USE_PRIORITIES = False
    REQUIRES = ("queues",)

    @initialize(attempts=st.integers(min_value=1, max_value=6), delay=st.sampled_from([0, 10, 20, 20, 50]),
                multiplier=st.sampled_from([2.0, 4.0, 1.0]), cap=st.sampled_from([None, 30, 60]),
                mode=MODE_INDEX, dla=st.booleans())
    def setup(self, attempts: int, delay: int, multiplier: float, cap: int | None, mode: int,
              dla: bool) -> None:
        self.ring = -1
        queue: dict[str, Any] = {"name": "q", "max_delivery_attempts": attempts}
        if self.can("redelivery_delay") and delay:
            queue.update(redelivery_delay_ms=delay, redelivery_multiplier=multiplier,
                         max_redelivery_delay_ms=cap)
        self.QUEUES = ("q",)
        if dla:  # without a dead-letter address a message past its attempts is dropped (REDELIVERY-6)
            self.QUEUES = ("q", "dlq")
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

    @precondition(lambda self: self.ready and self.open_consumers and (self.can("nack")
                                                                      or self.can("transactions")))
    @rule(which=WHICH, rounds=st.sampled_from([2, 1, 3]), early=st.sampled_from([1, 0]))
    def redeliver(self, which: int, rounds: int, early: int) -> None:
        """`rounds` redelivery rounds of the consumer's next message: receive it, give it back keeping
        its delivery count (nack, else a transactional ack rolled back), then advance to the time it
        is due again (1 ms before it after the last round when `early`)."""
        consumer = self.pick_consumer(which)
        for n in range(rounds):
            if consumer not in self.open_consumers:
                return
            expected, actual = self.d.both_values("receive", consumer, compare="receive.id")
            self.received(consumer, expected, actual)
            if expected is None:
                return
            if self.can("nack"):
                self.d.both("nack", {"consumer": consumer, "id": expected}, compare="nack.result")
            else:
                self.d.both("ack", {"consumer": consumer, "id": expected, "tx": True}, compare="ack.result")
                self.d.both("rollback", consumer)
            due = self._broker().next_due_ms() if self.can("advance_time") else None
            ms = None if due is None else due - self._broker().now_ms - (early if n == rounds - 1 else 0)
            if ms is None or ms <= 0 or ms > ROUND_ADVANCE_MAX_MS:
                return  # nothing due, or only a far timer (an ack wait): a broker would sleep it out
            self.d.both("advance", ms)
