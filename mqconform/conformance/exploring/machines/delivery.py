"""Delivery: order by priority then FIFO, windows, counters, nothing unsent or acked delivered."""

from __future__ import annotations

from hypothesis.stateful import initialize, precondition, rule

from ..checks import Checks, check
from ..consumers import consumer_settings, mode_round, mode_rounds, pulls
from ..queue_machine import DELETE_CHECKS, QUEUE_CHECKS, WHICH, QueueMachine
from ..restart import RESTART_CHECKS, RestartSteps

#: receive_check where the machine has CONSUMER_ORDER (DELIVERY-25/26)
CONSUMER_ORDER_CHECKS = Checks(
    check("receive.priority", "DELIVERY-25", "DELIVERY-24", "DELIVERY-3", "DELIVERY-4", "DELIVERY-5",
          needs=("consumer_priority",)),
    check("receive.single_active", "DELIVERY-26", "DELIVERY-3", "DELIVERY-4", "DELIVERY-5",
          needs=("single_active_consumer",)))


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

    @initialize(mode=mode_rounds(2))
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

    @precondition(QueueMachine.can_open_consumer)
    @rule(which=WHICH, mode=mode_rounds(3))
    def open_consumer(self, which: int, mode: int) -> None:
        """The queue machine's step, its mode drawn three times around the modes so that the mode's
        round gives a consumer priority 0-2 (DELIVERY-25) even where every mode is allowed."""
        QueueMachine.open_consumer(self, which, mode)

    @precondition(lambda self: self.ready and self.can("browse"))
    @rule()
    def browse(self) -> None:
        self.d.both("browse", "q", compare="browse.ids")
