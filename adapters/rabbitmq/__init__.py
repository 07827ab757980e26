"""The `rabbitmq` adapter (:mod:`.adapter`) and its records of queues, consumers and deliveries
(:mod:`.records`)."""

from .adapter import RabbitMQAdapter

__all__ = ["RabbitMQAdapter"]
