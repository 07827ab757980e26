"""The `activemq` adapter (:mod:`.adapter`) and its broker launcher (:mod:`.server`)."""

from .adapter import ActiveMQAdapter

__all__ = ["ActiveMQAdapter"]
