"""Fake RabbitMQ quorum adapters for the known-deviation tests: the model under rabbitmq-quorum,
named ``rabbitmq`` at server version 3.10.8 (a release with a registered bug, rabbitmq-server#5609),
with a made-up counters bug, with the #5609 bug model switched on, or with both that and a made-up
delivery-count bug. No broker needed."""

from __future__ import annotations

from typing import Any

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.bugs import bug_model
from mqconform.reference_model.config import QueueConfig
from mqconform.reference_model.profiles import profile


class _SkewedCounters(ReferenceAdapter):
    """After a nack that `_skews`, each queue shows one ready message as delivering (while it has one)."""

    name = "rabbitmq"

    def __init__(self, server_version: str = "3.10.8") -> None:
        super().__init__("rabbitmq-quorum")
        self.server_version = server_version
        self.queues: list[str] = []
        self.skewed = False

    def open(self, namespace: str) -> None:
        super().open(namespace)
        self.queues, self.skewed = [], False

    def declare_queue(self, config: QueueConfig) -> Result:
        result = super().declare_queue(config)
        if result.is_ok:
            self.queues.append(config.name)
        return result

    def _killed(self) -> int:
        return sum(int(super(_SkewedCounters, self).counters(q).value["killed"]) for q in self.queues)

    def _skews(self, killed_before: int, requeue: bool) -> bool:
        raise NotImplementedError

    def nack(self, consumer: str, msg_id: str, requeue: bool = True, multiple: bool = False,
             delay_ms: int = 0) -> Result:
        before = self._killed()
        result = super().nack(consumer, msg_id, requeue, multiple, delay_ms)
        if result.is_ok and self._skews(before, requeue):
            self.skewed = True
        return result

    def counters(self, queue: str) -> Result:
        result = super().counters(queue)
        if not (self.skewed and result.is_ok and result.value["pending_count"] > 0):
            return result
        value: dict[str, Any] = dict(result.value)
        value["pending_count"] -= 1
        value["delivering_count"] += 1
        return Result.ok(value)


class AnyNackSkews(_SkewedCounters):
    """The made-up bug: after *any* nack, one ready message is shown as delivering."""

    def _skews(self, killed_before: int, requeue: bool) -> bool:
        return True


class KillingNackSkews(_SkewedCounters):
    """A made-up bug in the shape of rabbitmq-server#5609 as the counters show it: only after a nack
    that asks for a requeue and dead-letters or drops the message instead (its delivery limit) is one
    ready message shown as delivering. It imitates the counters only, so the #5609 bug model does not
    explain it; a registry entry without a model (shape nack-at-delivery-limit) does, which is what
    the pytest plugin, which replays no bug model, is tested with."""

    def _skews(self, killed_before: int, requeue: bool) -> bool:
        return requeue and self._killed() > killed_before


class CreditTwice(ReferenceAdapter):
    """rabbitmq-server#5609 itself: the bug model (reference_model.bugs.rabbitmq_server_5609) under
    rabbitmq-quorum: a nack that dead-letters or drops a message at its delivery limit grants the
    consumer credit twice."""

    name = "rabbitmq"

    def __init__(self, server_version: str = "3.10.8") -> None:
        super().__init__(options=bug_model("rabbitmq-server-5609").enable(profile("rabbitmq-quorum")))
        self.server_version = server_version


class CreditTwiceAndMiscounts(CreditTwice):
    """The #5609 bug model and, besides, an unrelated made-up bug in the same examples: each message
    dropped at its delivery limit by a nack is counted killed twice."""

    def __init__(self, server_version: str = "3.10.8") -> None:
        super().__init__(server_version)
        self.extra: dict[str, int] = {}

    def open(self, namespace: str) -> None:
        super().open(namespace)
        self.extra = {}

    def nack(self, consumer: str, msg_id: str, requeue: bool = True, multiple: bool = False,
             delay_ms: int = 0) -> Result:
        queues = list(self.world.broker.queues)
        before = {q: self._killed(q) for q in queues}
        result = super().nack(consumer, msg_id, requeue, multiple, delay_ms)
        for queue in queues:
            self.extra[queue] = self.extra.get(queue, 0) + self._killed(queue) - before[queue]
        return result

    def _killed(self, queue: str) -> int:
        return int(super().counters(queue).value["killed"])

    def counters(self, queue: str) -> Result:
        result = super().counters(queue)
        if not result.is_ok or not self.extra.get(queue):
            return result
        value: dict[str, Any] = dict(result.value)
        value["killed"] = int(value["killed"]) + self.extra[queue]
        return Result.ok(value)
