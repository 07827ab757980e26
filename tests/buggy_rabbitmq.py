"""The built-in rabbitmq adapter with a made-up counters bug, for the known-deviation test on the real
broker (tests/adapters/test_rabbitmq.py): after any nack, each queue shows one ready message as
delivering. RabbitMQ 3.10.8 quorum has a registered bug, rabbitmq-server#5609, whose bug model must not
explain this one."""

from __future__ import annotations

from typing import Any

from mqconform.adapters.contract import Result
from mqconform.adapters.rabbitmq import RabbitMQAdapter


class NackSkewsCounters(RabbitMQAdapter):
    """After any nack, one ready message of each queue is shown as delivering (while it has one)."""

    def open(self, namespace: str) -> None:
        super().open(namespace)
        self.skewed = False

    def nack(self, consumer: str, msg_id: str, requeue: bool = True, multiple: bool = False) -> Result:
        result: Result = super().nack(consumer, msg_id, requeue, multiple)  # type: ignore[assignment]
        self.skewed = self.skewed or result.is_ok
        return result

    def counters(self, queue: str) -> Result:
        result: Result = super().counters(queue)  # type: ignore[assignment]
        if not (getattr(self, "skewed", False) and result.is_ok and result.value["pending_count"] > 0):
            return result
        value: dict[str, Any] = dict(result.value)
        value["pending_count"] -= 1
        value["delivering_count"] += 1
        return Result.ok(value)
