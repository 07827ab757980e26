"""The final drain of a queue machine (DELIVERY-21, what goes in must come out): when an example ends
without a finding, every queue of the address is drained through its open consumers, and every send
the implementation accepted must have been delivered or be accounted for (replaced, killed, expired,
or still scheduled, paged or waiting)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar

from .base import ConformanceMachine
from .checks import Checks, check

#: DELIVERY-21: the longest drain of one consumer (rounds of receive_batch + ack_batch)
DRAIN_ROUNDS = 40
#: DELIVERY-21: the final drain accounts for every send the implementation accepted (any queue machine)
DRAIN_CHECKS = Checks(check("drain.accounted", "DELIVERY-21"))


class QueueDrain(ConformanceMachine):
    """The teardown's drain and account of :class:`~.queue_machine.QueueMachine` (which provides the
    state and the steps used here)."""

    if TYPE_CHECKING:  # provided by QueueMachine
        QUEUES: ClassVar[tuple[str, ...]]
        ready: bool
        open_consumers: set[str]
        consumer_args: dict[str, dict[str, Any]]
        accepted: list[str]
        delivered: dict[str, set[str]]
        deleted: set[tuple[str, str]]

        def _broker(self) -> Any: ...
        def consumers_on(self, queue: str) -> list[str]: ...
        def _held(self, consumer: str) -> Any: ...
        def _address_queues(self) -> list[str]: ...
        def gets_left(self, consumer: str) -> int: ...
        def receive_check(self, consumer: str) -> str: ...
        def received(self, consumer: str, expected: str | None, actual: str | None) -> None: ...
        def _acked(self, consumer: str, msg_id: str, answer: Any) -> None: ...

    def teardown(self) -> None:
        """Drain and account (DELIVERY-21) when the example ended without a finding, then close."""
        try:
            if self.ready and not self.d.violated and sys.exc_info()[0] is None:
                self.drain()
        finally:
            super().teardown()

    def _drainable(self, consumer: str) -> int:
        """How many receives the model will answer with a message for `consumer` now: its buffer
        (a pushing consumer), else for a pulling one the pending messages within its max_unacked (0:
        nothing to drain, so the implementation is never asked for a receive that must come back empty)."""
        state = self._broker().consumers[consumer]
        if state.buffer:
            return len(state.buffer)
        if not state.no_buffering:
            return 0
        room = 1 << 30
        if state.config.max_unacked is not None and state.config.max_unacked >= 0:
            room = state.config.max_unacked - len(state.received)
        queue = self._broker().queues[self.consumer_args[consumer]["queue"]]
        return max(0, min(len(queue.pending), room, self.gets_left(consumer)))

    def drain(self) -> None:
        """DELIVERY-21: acknowledge what every open consumer of the address's queues holds and
        receive (and acknowledge) what it is given until the model has nothing more for it; then every
        accepted send must have been delivered by that queue, or be accounted for: the queue's
        replaced + killed + expired counters (the implementation's where it shows all three, else
        the model's), the new messages its bound refused although the send was answered accepted
        (RING-21, the model's count) and what the model still keeps in it (scheduled, paged,
        waiting out a delay)."""
        queues = [q for q in self._address_queues() if q in self.QUEUES]
        for queue in queues:
            for consumer in self.consumers_on(queue):
                if consumer not in self.open_consumers:
                    continue
                for _ in range(DRAIN_ROUNDS):
                    held = list(self._held(consumer))
                    if held:
                        answers = self.d.both_batch("ack_batch", {"consumer": consumer, "ids": held},
                                                    "ack.result")
                        for msg_id, (_, answer) in zip(held, answers, strict=False):
                            self._acked(consumer, msg_id, answer)
                    count = min(self._drainable(consumer), 25)
                    if not count:
                        break
                    self.d.both_batch("receive_batch", {"consumer": consumer, "count": count},
                                      self.receive_check(consumer),
                                      after=lambda e, a, c=consumer: self.received(c, e, a))
        for queue in queues:
            self.check_accounted(queue)

    def check_accounted(self, queue: str) -> None:
        """DELIVERY-21 for one drained queue (see :meth:`drain`)."""
        delivered = self.delivered.get(queue, set())
        lost = [m for m in self.accepted if m not in delivered and (queue, m) not in self.deleted]
        if not lost:
            self.d.check("drain.accounted", True, str)
            return
        model = self._broker().counters(queue)
        gone = {"replaced": model.replaced, "killed": model.killed, "expired": model.expired}
        if all(self.can(f"counter:{name}") for name in gone):
            shown = self.adapter.counters(queue)
            if shown.is_ok:
                gone = {name: int(shown.value.get(name, 0)) for name in gone}
        kept = model.message_count
        # RING-21: a bound that refuses silently (the sender told accepted) drops it at the door
        refused = self._broker().queues[queue].counters.refused
        if refused:
            gone["refused"] = refused
        accounted = sum(gone.values()) + kept
        self.d.check("drain.accounted", len(lost) <= accounted,
                     lambda: f"after the final drain of queue {queue}, {len(lost)} accepted message(s) never "
                             f"came out ({lost[:10]}) but only {accounted} are accounted for ({gone}, "
                             f"{kept} still kept)")
