"""Scheduled delivery: due messages go to the head in scheduler order; a full ring drops them.

The due boundary (SCHED-4, REDELIVERY-7): `probe_due` takes the queue's next due time in the model's
scheduler, a scheduled send or a delayed redelivery (a nack of a queue with a redelivery delay), and
advances the clock to 1 ms before it, to it and to 1 ms after it, comparing what the implementation
shows with the model after each: a message that fires 1 ms early or 1 ms late fails.
On a ring queue the counts after every advance are compared under `advance.ring_due` (SCHED-14: a
due message meets a full ring and is replaced at once, counts above the ring size are legal before).
Where the adapter offers `deliver_scheduled`, `deliver_now` moves one scheduled message to the head
before its time (SCHED-16, Artemis management); where it offers `move` too, half of those steps move the
message to a second queue, `moved`, instead (DELIVERY-48: from Artemis 2.53.0 a scheduled message is
moved and its copy waits in the target's scheduler; before, the answer is false). The other adapters
draw exactly as before.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ..checks import Checks, check
from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import QUEUE_CHECKS, WHICH, QueueMachine
from .delivery import MOVE_TARGET, move_to_target

START_MS = 10
#: REDELIVERY-7: the redelivery delays a set-up draws (0: none), so nacks make delayed deliveries
REDELIVERY_DELAYS_MS = (0, 0, 15, 30)

#: advance (probe_due), and ring_due: a ring queue's counts after an advance
SCHEDULING_CHECKS = Checks(check("advance.accepted", "SCHED-4"),
                           check("advance.ring_due", "SCHED-14", "SCHED-8", "RING-10", needs=("ring",)),
                           # deliver_now: its answer and the counts right after it
                           check("deliver_scheduled.result", "SCHED-16", needs=("deliver_scheduled",)),
                           # deliver_now's move: its answer, the counts of both queues right after it and
                           # the target's pending order, and the target's counts after each advance
                           check("move.scheduled", "DELIVERY-48", "SCHED-2", "SCHED-4", "SCHED-6",
                                 needs=("move", "deliver_scheduled")))
#: SCHED-16: the `index` of deliver_now that names the last message sent that the scheduler does not
#: hold (pending, held or gone) instead of one it holds
LAST_SENT_INDEX = 7


class SchedulingMachine(QueueMachine):
    area = "scheduling"
    CHECKS = QUEUE_CHECKS.citing({
        "send.result": ("SCHED-1", "SCHED-2"), "receive.id": ("SCHED-3", "SCHED-4"),
        "pending.order": ("SCHED-3", "SCHED-4", "SCHED-5"), "counters.scheduled_count": ("SCHED-6",),
        "counters.message_count": ("SCHED-6", "DELIVERY-1"), "counters.pending_count": ("SCHED-4", "SCHED-2"),
        "counters.replaced": ("SCHED-8", "RING-10")}) | SCHEDULING_CHECKS
    REQUIRES = ("queues", "scheduling", "advance_time")

    @initialize(ring=st.sampled_from([-1, -1, 2, 3]), mode=MODE_INDEX, consume=st.booleans(),
                delay=st.sampled_from(REDELIVERY_DELAYS_MS))
    def setup(self, ring: int, mode: int, consume: bool, delay: int) -> None:
        queue: dict[str, object] = {"name": "q"}
        self.ring_queue = ring >= 0 and self.can("ring")
        if self.ring_queue:
            queue["ring_size"] = ring
        if delay and self.can("redelivery_delay"):
            queue["redelivery_delay_ms"] = delay
        self.d.both("queue", queue)
        settings = consumer_settings(self.caps, mode)
        if consume and settings is not None:
            self.declare_consumer("q", **settings)
        if self.can("move", "deliver_scheduled"):  # DELIVERY-48: the target of deliver_now's move
            self.d.both("queue", {"name": MOVE_TARGET})
        #: DELIVERY-48: a move answered true (the target then holds a copy to follow after each advance)
        self.moved = False
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
        self.ring_due()

    def ring_due(self) -> None:
        """SCHED-14: the counts of a ring queue after time moved (what fell due met the ring); DELIVERY-48:
        the move target's, once a copy went there (a scheduled one fires there at its own time)."""
        if self.ring_queue:
            self.compare_counter("advance.ring_due", "q", "message_count", "scheduled_count", "pending_count",
                                 "replaced")
        if self.moved:
            self.compare_counter("move.scheduled", MOVE_TARGET, "message_count", "scheduled_count",
                                 "pending_count")

    @precondition(lambda self: self.ready and self.can("deliver_scheduled") and self._next_due() is not None)
    @rule(index=WHICH, move=st.booleans())
    def deliver_now(self, index: int, move: bool) -> None:
        """SCHED-16: deliver one scheduled message now, whatever its due time (Artemis
        QueueControl#deliverScheduledMessage): one the model's scheduler holds (by `index`, in
        scheduler order) or, at LAST_SENT_INDEX, the last message sent that it does not hold (pending,
        held or gone: the answer is then false and nothing changes). The answer and the counts right
        after are compared; where the message went, by the invariants (pending order) and what later
        receives give. With `move`, where the adapter offers it, that message is moved to MOVE_TARGET
        instead (:meth:`move_one`)."""
        queue = self._broker().queues["q"]
        scheduled = [ref.id for ref in queue.scheduler.items()]
        if index == LAST_SENT_INDEX:  # the last message sent that is not scheduled (else the last one)
            others = [f"m{n}" for n in range(self.counter, 0, -1) if f"m{n}" not in scheduled]
            target = others[0] if others else f"m{self.counter}"
        else:
            target = scheduled[index % len(scheduled)]
        if move and self.can("move"):
            self.move_one(target)
            return
        check = "deliver_scheduled.result"
        self.d.both_values("deliver_scheduled", {"queue": "q", "id": target}, compare=check)
        self.compare_counter(check, "q", "message_count", "scheduled_count", "pending_count", "added",
                             "replaced")

    def move_one(self, target: str) -> None:
        """DELIVERY-48: move message `target` of q to MOVE_TARGET by id (Artemis QueueControl#moveMessage).
        A scheduled one is moved from 2.53.0 (the model's move_listed; an older release answers false and
        nothing changes) and its copy keeps its delivery time: it waits in the target's scheduler and
        fires there at that time. A pending one (it fired before) is moved on every release and its
        copy, its time passed, fires at once to the target's head; a held or gone one answers false.
        The answer, the counts of both queues right after, the target's pending order and (ring_due)
        the target's counts after each advance are compared; the final drain accounts for a moved
        message as a deleted one."""
        counts = ("message_count", "scheduled_count", "pending_count")
        if move_to_target(self, target, "move.scheduled", counts):
            self.moved = True

    @precondition(lambda self: self.ready and self.can("nack") and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def nack(self, which: int, index: int) -> None:
        """A nack of a held message: with the queue's redelivery delay it waits in the scheduler
        (REDELIVERY-7, REDELIVERY-9), a delayed delivery `probe_due` can probe."""
        target = self._ack_target(which, index)
        if target is not None:
            self.d.both("nack", {"consumer": target[0], "id": target[1]}, compare="nack.result")

    @precondition(lambda self: self.ready and self.can("advance_time") and self._next_due() is not None)
    @rule()
    def probe_due(self) -> None:
        """SCHED-4 / REDELIVERY-7 at the boundary: advance to due - 1, due and due + 1 ms of the next
        scheduled or delayed message, comparing the implementation with the model after each."""
        due = self._next_due()
        assert due is not None
        for target in (due - 1, due, due + 1):
            step = target - self.now()
            if step > 0:
                self.d.both("advance", step)
                self.ring_due()
                self.counters_agree()

    def _next_due(self) -> int | None:
        """The model's next due time of queue q (a scheduled send or a delayed redelivery)."""
        queue = self._broker().queues.get("q")
        return queue.scheduler.next_due() if queue is not None else None
