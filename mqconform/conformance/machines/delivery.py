"""Delivery: order by priority then FIFO, windows, counters, nothing unsent or acked delivered."""

from __future__ import annotations

from hypothesis.stateful import initialize, precondition, rule

from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import QueueMachine
from ..restart import RestartSteps
from ..rules import rules_for


class DeliveryMachine(RestartSteps, QueueMachine):
    area = "delivery"
    RULES = rules_for("delivery")
    SIZES = (100, 700, 5000)
    USE_PRIORITIES = True
    REQUIRES = ("queues",)

    @initialize(mode=MODE_INDEX)
    def setup(self, mode: int) -> None:
        settings = consumer_settings(self.caps, mode)
        self.d.both("queue", {"name": "q"})
        if settings is not None:
            self.declare_consumer("q", **settings)
        self.ready = True

    @precondition(lambda self: self.ready and self.can("browse"))
    @rule()
    def browse(self) -> None:
        self.d.both("browse", "q", compare="browse.ids")
