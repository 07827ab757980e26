"""Mutants of stream retention, pull batches and priority groups (RETENTION-1..11, DELIVERY-38..47),
claiming jetstream
(:mod:`.mutants` makes each a Mutant: name, description, broker class)."""

from __future__ import annotations

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.state import ConsumerState, QueueState, Ref


class _LimitsDropsAcked(Broker):
    """A Limits stream deletes a message as soon as one consumer acknowledges it."""

    def _terminate(self, queue: QueueState, ref: Ref, reason: str) -> None:  # type: ignore[override]
        super()._terminate(queue, ref, reason)  # type: ignore[arg-type]
        if reason == "acknowledged" and queue.address.config.retention == "limits":
            queue.address.stream_accepted -= 1


class _LeaveKeepsInterest(Broker):
    """Deleting a consumer of an Interest stream leaves what only it held stored."""

    def leave(self, queue_name: str) -> None:
        queue = self._queue(queue_name)
        address = queue.address
        held = [ref.msg for ref in queue.live.values() if ref.place in ("pending", "delivering")]
        super().leave(queue_name)
        if address.config.retention == "interest":
            for msg in held:
                address.hold(msg)


class _OverflowNeedsBoth(Broker):
    """An overflow pull request that names both thresholds is given a message only when both hold
    (nats-server 2.11.0 to 2.12.4, before 43071fa5b; DELIVERY-43)."""

    def _overflow_serves(self, queue: QueueState, ref: Ref, min_pending: int, min_ack_pending: int) -> bool:
        if not (min_pending and min_ack_pending):
            return super()._overflow_serves(queue, ref, min_pending, min_ack_pending)
        return (super()._overflow_serves(queue, ref, min_pending, 0)
                and super()._overflow_serves(queue, ref, 0, min_ack_pending))


class _UnpinForgetsNothing(Broker):
    """A client that names an old pin id is served as soon as no pin holds, instead of being refused
    (DELIVERY-47): it is pinned again under its old id."""

    def _pin_admits(self, queue: QueueState, consumer: ConsumerState, available: bool) -> bool:
        if queue.pinned is None and consumer.pin is not None and available:
            consumer.pin = None
        return super()._pin_admits(queue, consumer, available)


#: (name, description, broker class) of each mutant of the retention area
RETENTION_MUTANTS: tuple[tuple[str, str, type[Broker]], ...] = (
    ("limits-drops-acked", "a Limits stream deletes a message one consumer acknowledged", _LimitsDropsAcked),
    ("leave-keeps-interest", "deleting a consumer of an Interest stream releases nothing",
     _LeaveKeepsInterest),
    ("overflow-needs-both", "an overflow pull request with both thresholds needs both to hold",
     _OverflowNeedsBoth),
    ("old-pin-id-served", "a client naming an old pin id is pinned again instead of refused",
     _UnpinForgetsNothing),
)
