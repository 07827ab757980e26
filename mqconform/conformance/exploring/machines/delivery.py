"""Delivery: order by priority then FIFO, windows, counters, nothing unsent or acked delivered.

Where the adapter offers `move`, a second queue `moved` is declared and `send` draws a move of one
message of q to it by id (DELIVERY-48, Artemis management); the other adapters explore exactly as
before.
"""

from __future__ import annotations

from hypothesis import strategies as st
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
          needs=("single_active_consumer",)),
    check("receive.group", "DELIVERY-49", "DELIVERY-25", "DELIVERY-24", "DELIVERY-3", "DELIVERY-4",
          "DELIVERY-5", needs=("message_groups",)))
#: DELIVERY-48: a move's answer, the counts of both queues right after it and the target's pending order
MOVE_CHECKS = Checks(check("move.result", "DELIVERY-48", "DELIVERY-3", needs=("move",)))
#: the queue a move sends its message to (its own address; no consumer ever takes from it)
MOVE_TARGET = "moved"
#: the `size_index` of `send` that moves a message instead (DeliveryMachine.send); the ack rule is
#: drawn too rarely here (a handful of times a run) to carry it
MOVE_INDEX = 6


class DeliveryMachine(RestartSteps, QueueMachine):
    area = "delivery"
    CHECKS = (QUEUE_CHECKS.citing({"receive.id": ("DELIVERY-3", "DELIVERY-4", "DELIVERY-5", "DELIVERY-24")})
              | CONSUMER_ORDER_CHECKS | DELETE_CHECKS | MOVE_CHECKS | RESTART_CHECKS)
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
        if self.can("move"):  # DELIVERY-48: the target of `move`, a queue of its own address
            self.d.both("queue", {"name": MOVE_TARGET})
        self.ready = True

    @precondition(QueueMachine.can_open_consumer)
    @rule(which=WHICH, mode=mode_rounds(3))
    def open_consumer(self, which: int, mode: int) -> None:
        """The queue machine's step, its mode drawn three times around the modes so that the mode's
        round gives a consumer priority 0-2 (DELIVERY-25) even where every mode is allowed."""
        QueueMachine.open_consumer(self, which, mode)

    @property
    def send_group(self) -> str | None:
        """DELIVERY-49 where the adapter offers message_groups, derived from the message's number and
        not drawn (the other adapters explore as before): two of every three messages to q carry
        group g0 or g1, none on an exclusive queue (QueueImpl#extractGroupID)."""
        if not self._groups_on_q() or self.counter % 3 == 0:
            return None
        return f"g{self.counter % 2}"

    def _groups_on_q(self) -> bool:
        return self.can("message_groups") and "q" not in self.single_active

    def receive_check(self, consumer: str) -> str:
        """DELIVERY-49's check where q has grouped messages, else the queue machine's."""
        if self._groups_on_q() and self.consumer_args[consumer]["queue"] == "q":
            return "receive.group"
        return QueueMachine.receive_check(self, consumer)

    @precondition(lambda self: self.ready and self.can("browse"))
    @rule()
    def browse(self) -> None:
        self.d.both("browse", "q", compare="browse.ids")

    @precondition(lambda self: self.ready)
    @rule(size_index=WHICH, priority=st.sampled_from([4, 4, 0, 9, 5]))
    def send(self, size_index: int, priority: int) -> None:
        """The queue machine's step, with DELIVERY-48's move drawn within it (no new rule, so the
        adapters without move explore exactly as before): at MOVE_INDEX, once a message was sent,
        where the adapter offers move; `priority` then picks the message (see :meth:`move`)."""
        if size_index == MOVE_INDEX and self.counter and self.can("move"):
            self.move(priority)
            return
        QueueMachine.send(self, size_index, priority)

    def move(self, pick: int) -> None:
        """DELIVERY-48: move one message of q to MOVE_TARGET by id: with `pick` 9 one a consumer holds,
        with 5 (or nothing pending) the last one sent (often held or gone), with 4 the first one the
        model lists pending, with 0 the last one; a held or gone one answers false and changes
        nothing. The answer, the counts of both queues right after and the target's pending order are
        compared; the final drain accounts for a moved message as a deleted one (it left q acknowledged)."""
        pending = self._broker().pending_ids("q")
        held = sorted(m for c in self.open_consumers for m in self._held(c))
        if pick == 9 and held:
            target = held[0]
        elif pick == 5 or not pending:
            target = f"m{self.counter}"
        else:
            target = pending[0 if pick == 4 else -1]
        move_to_target(self, target, "move.result", ("message_count", "pending_count"))


def move_to_target(machine: QueueMachine, target: str, check: str, counts: tuple[str, ...]) -> bool:
    """DELIVERY-48: move message `target` of q to MOVE_TARGET by id under check `check`: its answer, the
    `counts` of q (and its acknowledged count) and of MOVE_TARGET (and its added count) right after, and
    MOVE_TARGET's pending order are compared; a message moved is accounted for by the final drain as a
    deleted one (it left q acknowledged). Whether it was moved (the model's answer)."""
    _, answer = machine.d.both_values("move", {"queue": "q", "id": target, "to": MOVE_TARGET}, compare=check)
    if answer is True:
        machine.deleted.add(("q", target))
    machine.compare_counter(check, "q", *counts, "acknowledged")
    machine.compare_counter(check, MOVE_TARGET, *counts, "added")
    if machine.can("pending_order"):
        observed = machine.d.observe_if_observable("pending_ids", MOVE_TARGET)
        if observed is not None:
            machine.d.expect_equal(check, *observed, f"pending of {MOVE_TARGET}: ")
    return answer is True
