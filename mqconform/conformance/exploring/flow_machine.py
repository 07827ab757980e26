"""Base of the flow-control machines (throttle, admission, storage): no queues, one component."""

from __future__ import annotations

from .base import ConformanceMachine


class FlowMachine(ConformanceMachine):
    """A component machine: `ready` once the component is declared with the needed capability."""

    CAPABILITY = ""

    def __init__(self) -> None:
        super().__init__()
        self.ready = False
        self.counter = 0

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"
