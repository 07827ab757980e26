"""Ring queues: the bound counts pending only, one head evicted per add, returns never evict."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import WHICH, QueueMachine
from ..rules import rules_for


class RingMachine(QueueMachine):
    area = "ring"
    RULES = rules_for("ring")
    USE_PRIORITIES = True
    REQUIRES = ("queues", "ring")

    @initialize(ring=st.integers(min_value=0, max_value=4), mode=MODE_INDEX)
    def setup(self, ring: int, mode: int) -> None:
        ring = self.ring_size(ring)
        self.ring = ring
        self.d.both("queue", {"name": "q", "ring_size": ring})
        settings = consumer_settings(self.caps, mode)
        if settings is not None:
            self.declare_consumer("q", **settings)
        self.ready = True

    def ring_size(self, drawn: int) -> int:
        """A drawn ring size, at least 1 where the implementation cannot have a ring of 0."""
        return drawn if self.can("ring_zero") else max(drawn, 1)

    def _pending(self) -> int | None:
        if not self.can("counter:pending_count"):
            return None
        result = self.adapter.counters("q")
        return result.value["pending_count"] if result.is_ok else None

    @precondition(lambda self: self.ready and self.can("ring"))
    @rule(size_index=WHICH, priority=st.sampled_from([4, 4, 0, 9]))
    def send(self, size_index: int, priority: int) -> None:
        before = self._pending()
        super().send(size_index, priority)
        after = self._pending()
        opts = self.options
        if before is None or after is None or opts.overflow != "drop_head" or opts.bound_counts != "pending":
            return
        bound = max(self.ring, before)
        self.d.check("ring.bound", after <= bound,
                     lambda: f"pending went from {before} to {after} on a send to a ring of {self.ring}")

    @precondition(lambda self: self.ready and self.can("transactions") and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def ack_in_tx(self, which: int, index: int) -> None:
        target = self._ack_target(which, index)
        if target is not None:
            self.d.both("ack", {"consumer": target[0], "id": target[1], "tx": True}, compare="ack.result")

    @precondition(lambda self: self.ready and self.can("transactions") and self.open_consumers)
    @rule(which=WHICH, commit=st.booleans())
    def end_tx(self, which: int, commit: bool) -> None:
        consumer = self.pick_consumer(which)
        if consumer not in self.open_consumers:
            return
        if commit:
            tx_acked = [r.id for r in self._broker().consumers[consumer].tx_acked]
            self.d.both("commit", consumer)
            self.acked.update((self.consumer_args[consumer]["queue"], m) for m in tx_acked)
        else:
            self.d.both("rollback", consumer)

    @precondition(lambda self: self.ready and self.can("nack") and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def nack(self, which: int, index: int) -> None:
        target = self._ack_target(which, index)
        if target is not None:
            self.d.both("nack", {"consumer": target[0], "id": target[1]}, compare="nack.result")

    @precondition(lambda self: self.ready and self.can("set_ring_size"))
    @rule(size=st.integers(min_value=0, max_value=4))
    def set_ring_size(self, size: int) -> None:
        size = self.ring_size(size)
        self.ring = size
        args: dict[str, Any] = {"queue": "q", "size": size}
        self.d.both("set_ring_size", args)
