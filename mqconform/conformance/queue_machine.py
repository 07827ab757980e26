"""Shared operations of the queue machines: send, receive, ack, nack, rollback, close, browse, time.

Model-free checks made here from what the implementation shows (no model needed):
delivered messages were sent, acknowledged messages are never delivered again, an unacknowledged
message is never evicted where the profile forbids it, and counter identities.

After each delivery the delivery count the implementation shows is recorded as a ``delivery_count``
observation ``{"id", "count"}`` (REDELIVERY-1, REDELIVERY-2, REDELIVERY-12, REDELIVERY-19, REDELIVERY-22:
the report's monotonicity check reads it).
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from .base import ConformanceMachine

WHICH = st.integers(min_value=0, max_value=7)


class QueueMachine(ConformanceMachine):
    """One address, its queues (QUEUES) and one consumer per queue named c-<queue>."""

    QUEUES: ClassVar[tuple[str, ...]] = ("q",)
    SIZES: ClassVar[tuple[int, ...]] = (100,)
    USE_PRIORITIES: ClassVar[bool] = False
    ADDRESS: ClassVar[str] = "q"

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0
        self.sent: set[str] = set()
        #: (queue, message id) pairs acknowledged: one message reaches every queue of its address
        self.acked: set[tuple[str, str]] = set()
        self.consumer_args: dict[str, dict[str, Any]] = {}
        self.open_consumers: set[str] = set()
        self.ready = False

    # ------------------------------------------------------------------ helpers
    def _broker(self) -> Any:
        return self.d.model.world.broker

    def consumer_of(self, queue: str) -> str:
        return f"c-{queue}"

    def declare_consumer(self, queue: str, **settings: Any) -> None:
        name = self.consumer_of(queue)
        args = {"name": name, "queue": queue, **settings}
        self.consumer_args[name] = args
        self.d.both("consumer", args)
        self.open_consumers.add(name)

    def unacked(self, consumer: str) -> list[str]:
        if consumer not in self.open_consumers:
            return []
        return list(self._broker().unacked_ids(consumer))

    def any_unacked(self) -> bool:
        return any(self.unacked(c) for c in self.open_consumers)

    def pick_consumer(self, which: int) -> str:
        names = sorted(self.consumer_args)
        return names[which % len(names)]

    def next_id(self) -> str:
        self.counter += 1
        return f"m{self.counter}"

    # ------------------------------------------------------------------ operations
    def do_send(self, size: int, priority: int, scheduled_at: int | None = None) -> None:
        msg_id = self.next_id()
        args: dict[str, Any] = {"to": self.ADDRESS, "id": msg_id, "size": size}
        if priority != 4:
            args["priority"] = priority
        if scheduled_at is not None:
            args["scheduled_at_ms"] = scheduled_at
        self.sent.add(msg_id)
        self.d.both("send", args, compare="send.result")

    @precondition(lambda self: self.ready)
    @rule(size_index=WHICH, priority=st.sampled_from([4, 4, 0, 9, 5]))
    def send(self, size_index: int, priority: int) -> None:
        self.do_send(self.SIZES[size_index % len(self.SIZES)],
                     priority if self.USE_PRIORITIES and self.can("priorities") else 4)

    @precondition(lambda self: self.ready and self.open_consumers)
    @rule(which=WHICH)
    def receive(self, which: int) -> None:
        consumer = self.pick_consumer(which)
        if consumer not in self.open_consumers:
            return
        expected, actual = self.d.both_values("receive", consumer, compare="receive.id")
        if actual is not None:
            self.d.check("delivery.sent_only", actual in self.sent,
                         lambda: f"{consumer} received {actual!r}, which was never sent")
            queue = self.consumer_args[consumer]["queue"]
            self.d.check("delivery.acked_not_redelivered", (queue, actual) not in self.acked,
                         lambda: f"{consumer} received {actual!r} again after it was acknowledged")
        if expected is not None and self.can("delivery_count"):
            queue = self.consumer_args[consumer]["queue"]
            want, got = self.d.observe_both("delivery_count", queue, expected)
            # the implementation's count, for the history's delivery-count monotonicity check
            self.d.observe("delivery_count", queue, {"id": expected, "count": got})
            self.d.expect_equal("delivery_count", want, got, f"delivery count of {expected}: ")

    def _ack_target(self, which: int, index: int) -> tuple[str, str] | None:
        candidates = [c for c in sorted(self.open_consumers) if self.unacked(c)]
        if not candidates:
            return None
        consumer = candidates[which % len(candidates)]
        ids = self.unacked(consumer)
        return consumer, ids[index % len(ids)]

    @precondition(lambda self: self.ready and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def ack(self, which: int, index: int) -> None:
        target = self._ack_target(which, index)
        if target is None:
            return
        consumer, msg_id = target
        _, answer = self.d.both_values("ack", {"consumer": consumer, "id": msg_id}, compare="ack.result")
        if answer == "ok":  # only what the implementation says it acknowledged (DELIVERY-7)
            self.acked.add((self.consumer_args[consumer]["queue"], msg_id))

    @precondition(lambda self: self.ready and self.open_consumers)
    @rule(which=WHICH)
    def close_and_reopen(self, which: int) -> None:
        consumer = self.pick_consumer(which)
        if consumer not in self.open_consumers:
            return
        self.d.both("close", consumer)
        self.open_consumers.discard(consumer)
        self.d.both("consumer", self.consumer_args[consumer])
        self.open_consumers.add(consumer)

    # ------------------------------------------------------------------ invariants
    @invariant()
    def counters_agree(self) -> None:
        if not self.ready:
            return
        for queue in self.QUEUES:
            shown = self.compare_counters(queue)
            if shown is not None and "delivering_count" in shown and not self.options.evict_unacked:
                held = sum(len(self.unacked(c)) for c in self.open_consumers
                           if self.consumer_args[c]["queue"] == queue)
                self.d.check("ring.unacked_never_evicted", shown["delivering_count"] >= held,
                             lambda q=queue, n=shown["delivering_count"], h=held:
                                 f"queue {q} shows {n} delivering but consumers hold {h} unacknowledged "
                                 "messages")
        if self.can("pending_order"):
            for queue in self.QUEUES:
                want, got = self.d.observe_both("pending_ids", queue)
                self.d.expect_equal("pending.order", want, got, f"pending of {queue}: ")
