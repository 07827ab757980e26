"""Fake Artemis adapters for the bug-model tests: the model under the artemis profile, named
``artemis`` at server version 2.40.0 (a release with registered bugs), with a registered bug switched on
(the bug model itself) or with a made-up bug. No broker needed."""

from __future__ import annotations

from typing import Any

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.bugs import bug_model
from mqconform.reference_model.profiles import profile


class WithBug(ReferenceAdapter):
    """The artemis model with the registered bug model `bug` (default ARTEMIS-4985's regression)."""

    name = "artemis"

    def __init__(self, bug: str = "artemis-4985", server_version: str = "2.40.0") -> None:
        super().__init__(options=bug_model(bug).enable(profile("artemis")))
        self.server_version = server_version


class WithBugs(ReferenceAdapter):
    """The artemis model with several registered bug models switched on at once."""

    name = "artemis"

    def __init__(self, *bugs: str, server_version: str = "2.40.0") -> None:
        options = profile("artemis")
        for bug in bugs:
            options = bug_model(bug).enable(options)
        super().__init__(options=options)
        self.server_version = server_version


class IgnoresPriority(ReferenceAdapter):
    """A made-up bug: the artemis model that ignores message priorities (one level, plain FIFO)."""

    name = "artemis"

    def __init__(self, server_version: str = "2.40.0") -> None:
        super().__init__(options=profile("artemis").evolve(priority_levels=1))
        self.server_version = server_version


class MiscountsAfterClose(WithBug):
    """ARTEMIS-4985's bug model and a made-up counters bug: after a consumer closes, each queue counts
    one message more than it holds."""

    def __init__(self, server_version: str = "2.40.0") -> None:
        super().__init__("artemis-4985", server_version)
        self.closed = False

    def open(self, namespace: str) -> None:
        super().open(namespace)
        self.closed = False

    def close_consumer(self, consumer: str) -> Result:
        result = super().close_consumer(consumer)
        self.closed = self.closed or result.is_ok
        return result

    def counters(self, queue: str) -> Result:
        result = super().counters(queue)
        if not self.closed or not result.is_ok:
            return result
        value: dict[str, Any] = dict(result.value)
        value["message_count"] = int(value["message_count"]) + 1
        return Result.ok(value)


class DropsAtLimitNegative(WithBug):
    """The artemis model with the registered bug model of the DeliveringCount -1 at the delivery limit
    (artemis-drop-at-limit-delivering-negative): the redelivery area finds it within a hundred examples."""

    def __init__(self, server_version: str = "2.40.0") -> None:
        super().__init__("artemis-drop-at-limit-delivering-negative", server_version)


class BugShowsOnSecondRun(WithBug):
    """ARTEMIS-4985's bug model that answers as the claimed model in its first scenario run (the
    `first` opens): an implementation whose replay under load did not show the bug it has."""

    def __init__(self, first: int = 1) -> None:
        super().__init__("artemis-4985")
        self.buggy = self.options
        self.opens = 0
        self.first = first

    def open(self, namespace: str) -> None:
        self.opens += 1
        self.options = profile("artemis") if self.opens <= self.first else self.buggy
        super().open(namespace)
