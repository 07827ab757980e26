"""Mutants of last-value queues (LASTVALUE-1..10), claiming artemis (:mod:`.mutants` makes each a
Mutant: name, description, broker class)."""

from __future__ import annotations

from mqconform.reference_model.broker import Broker
from mqconform.reference_model.state import QueueState, Ref


class _NeverPrunes(Broker):
    """A superseded message is never removed: every value keeps all its messages (LASTVALUE-1)."""

    def _prune_last_values(self, queue: QueueState) -> bool:
        queue.lv_candidates = []
        return False


class _KeylessReplaceEachOther(Broker):
    """Messages without the last-value property share one value and replace each other (LASTVALUE-3)."""

    def _lv_put(self, queue: QueueState, ref: Ref) -> None:
        if queue.last_value_key is None or queue.last_value(ref) is not None:
            super()._lv_put(queue, ref)
            return
        current = queue.last_values.get("")
        queue.last_values[""] = ref
        if current is not None and current is not ref:
            queue.lv_candidates.append(current)


#: (name, description, broker class) of each mutant of the lastvalue area
LASTVALUE_MUTANTS: tuple[tuple[str, str, type[Broker]], ...] = (
    ("last-value-never-prunes", "a last-value queue keeps every superseded message", _NeverPrunes),
    ("keyless-messages-replace", "messages without the last-value property replace each other",
     _KeylessReplaceEachOther),
)
