"""Everything the model simulates at once: the queue broker plus MDB throttles (THROTTLE-*),
fast-failure admission (ADMISSION-*) and VOS queue files (STORAGE-*), on one logical clock.

:meth:`World.advance` moves time through every due event in order: scheduled messages
(SCHED-4) and admission scan ticks (ADMISSION-1), so two events 10 ms apart fire separately.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .broker import Broker
from .calls import CALLS
from .errors import ModelMisuse
from .options import ModelOptions
from .profiles import ARTEMIS

if TYPE_CHECKING:  # the components load on first use: a queue-only run never imports them
    from .admission import Admission
    from .storage import QueueFile
    from .throttle import Throttle


class World:
    """The broker and the flow-control components under one clock."""

    def __init__(self, options: ModelOptions = ARTEMIS, broker_class: type[Broker] = Broker) -> None:
        self.broker = broker_class(options)
        self.throttles: dict[str, Throttle] = {}
        self.admissions: dict[str, Admission] = {}
        self.stores: dict[str, QueueFile] = {}

    @property
    def now_ms(self) -> int:
        return self.broker.now_ms

    # ------------------------------------------------------------------ time
    def _next_tick(self, after_ms: int) -> int | None:
        ticks = [t for a in self.admissions.values()
                 if a.busy() and (t := a.next_tick_ms(after_ms)) is not None]
        return min(ticks) if ticks else None

    def advance(self, ms: int) -> None:
        """Move the clock `ms` forward through every due scheduled message and admission tick."""
        if ms < 0:
            raise ModelMisuse("time only moves forward")
        broker = self.broker
        target = broker.now_ms + ms
        while True:
            due = broker.next_due_ms()
            tick = self._next_tick(broker.now_ms)
            candidates = [t for t in (due, tick) if t is not None and t <= target]
            if not candidates:
                break
            step = max(min(candidates), broker.now_ms)
            broker.advance(step - broker.now_ms)
            if tick is not None and tick == step:
                for admission in self.admissions.values():
                    if admission.next_tick_ms(step - 1) == step:
                        admission.tick(step)
        broker.advance(target - broker.now_ms)

    # ------------------------------------------------------------------ components
    def call(self, op: str, **kw: Any) -> Any:
        """Run one call operation by its name (reference_model/calls.py has how each runs)."""
        run = CALLS.get(op)
        if run is None:
            raise ModelMisuse(f"unknown operation {op!r}")
        return run(self, kw)
