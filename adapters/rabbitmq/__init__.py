"""The `rabbitmq` adapter (:mod:`.adapter`)."""

from .adapter import RabbitMQAdapter

__all__ = ["RabbitMQAdapter"]
