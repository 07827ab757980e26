"""Delivery: order by priority then FIFO, windows, counters, nothing unsent or acked delivered."""

from __future__ import annotations

from hypothesis.stateful import initialize, precondition, rule

from ..consumers import MODE_INDEX, consumer_settings, mode_round, pulls
from ..queue_machine import CONSUMER_ORDER_CHECKS, DELETE_CHECKS, QUEUE_CHECKS, QueueMachine
from ..restart import RESTART_CHECKS, RestartSteps


class DeliveryMachine(RestartSteps, QueueMachine):
    area = "delivery"
    CHECKS = (QUEUE_CHECKS.citing({"receive.id": ("DELIVERY-3", "DELIVERY-4", "DELIVERY-5", "DELIVERY-24")})
              | CONSUMER_ORDER_CHECKS | DELETE_CHECKS | RESTART_CHECKS)
    SIZES = (100, 700, 5000)
    USE_PRIORITIES = True
    REQUIRES = ("queues",)

    CONSUMER_ORDER = True
    REFUSED_ACKS = True
    DRAWS_DELETE = True

    @initialize(mode=MODE_INDEX)
    def setup(self, mode: int) -> None:
        """The queue, single active consumer (DELIVERY-26) where offered and the mode's round is odd
        (:func:`..consumers.mode_round`), and its first consumer (a pushing one on such a queue)."""
        settings = consumer_settings(self.caps, mode)
        single = (self.can("single_active_consumer") and settings is not None and not pulls(settings)
                  and mode_round(self.caps, mode, 2) == 1)
        if single:
            self.d.both("queue", {"name": "q", "single_active_consumer": True})
            self.single_active.add("q")
        else:
            self.d.both("queue", {"name": "q"})
        if settings is not None:
            self.declare_consumer("q", **settings)
        self.ready = True

    @precondition(lambda self: self.ready and self.can("browse"))
    @rule()
    def browse(self) -> None:
        self.d.both("browse", "q", compare="browse.ids")
