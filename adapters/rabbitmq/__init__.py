"""The `rabbitmq` adapter (:mod:`.adapter`) and its records of queues, consumers and deliveries
(:mod:`.records`); ``ROOM`` describes the broker (:mod:`mqconform.adapters.rooms`: classic queues, and
quorum queues in the coverage table). ``RabbitMQAdapter`` is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import BrokerRoom, adapter_on_first_use

ROOM = BrokerRoom(name="rabbitmq", adapter="mqconform.adapters.rabbitmq:RabbitMQAdapter",
                  profile="rabbitmq-classic", order=20, coverage_options=({}, {"queue_type": "quorum"}),
                  service=("rabbitmq", 5672))

if TYPE_CHECKING:
    from .adapter import RabbitMQAdapter

__all__ = ["ROOM", "RabbitMQAdapter"]

__getattr__ = adapter_on_first_use(__name__, "RabbitMQAdapter")
