"""Fake RabbitMQ quorum adapters for the known-deviation tests: the model under rabbitmq-quorum,
named ``rabbitmq`` at server version 3.10.8 (a release with registered deviations), with a counters
bug of their own. No broker needed."""

from __future__ import annotations

from typing import Any

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.config import QueueConfig


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
    """rabbitmq-server#5609 as the counters show it: only after a nack that asks for a requeue and
    dead-letters or drops the message instead (its delivery limit) is one ready message shown as
    delivering."""

    def _skews(self, killed_before: int, requeue: bool) -> bool:
        return requeue and self._killed() > killed_before


class KillingNackSkewsAndMiscounts(KillingNackSkews):
    """The #5609 shape and, besides, an unrelated bug: a message delivered twice or more shows one
    delivery too many."""

    def delivery_count(self, queue: str, msg_id: str) -> Result:
        result = super().delivery_count(queue, msg_id)
        if result.is_ok and isinstance(result.value, int) and result.value >= 2:
            return Result.ok(result.value + 1)
        return result
