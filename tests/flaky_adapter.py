"""A fake implementation with a one-off glitch: the model (profile artemis) whose counters, once in the
adapter's lifetime (the fifth counters read that sees a message), show one message too many. A
counterexample of it never fails again when replayed: the suite must report it as flaky, never as a
failure or a pass. No broker needed."""

from __future__ import annotations

import copy
from typing import Any

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter


class OnceWrongCounts(ReferenceAdapter):
    name = "once-wrong"

    def __init__(self) -> None:
        super().__init__("artemis")
        self.reads = 0

    def counters(self, queue: str) -> Result:
        result = super().counters(queue)
        value: Any = result.value
        if result.is_ok and isinstance(value, dict) and value.get("message_count", 0) > 0:
            self.reads += 1
            if self.reads == 5:
                return Result.ok({**value, "message_count": value["message_count"] + 1})
        return result


class OnceLateReceive(ReferenceAdapter):
    """The same glitch in an operation's result: once in the adapter's lifetime (the fifth receive that
    finds a message) the message is not there yet: the receive answers nothing and the message stays."""

    name = "once-late"

    def __init__(self) -> None:
        super().__init__("artemis")
        self.found = 0

    def receive(self, consumer: str) -> Result:
        before = copy.deepcopy(self.world)
        result = super().receive(consumer)
        if result.is_ok and result.value is not None:
            self.found += 1
            if self.found == 5:
                self.world = before
                return Result.ok(None)
        return result
