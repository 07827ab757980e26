"""Mutants of stream retention and pull batches (RETENTION-1..11, DELIVERY-38..40), claiming jetstream
(:mod:`.mutants` makes each a Mutant: name, description, broker class)."""

from __future__ import annotations

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.state import QueueState, Ref


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


#: (name, description, broker class) of each mutant of the retention area
RETENTION_MUTANTS: tuple[tuple[str, str, type[Broker]], ...] = (
    ("limits-drops-acked", "a Limits stream deletes a message one consumer acknowledged", _LimitsDropsAcked),
    ("leave-keeps-interest", "deleting a consumer of an Interest stream releases nothing",
     _LeaveKeepsInterest),
)
