"""The `activemq` adapter (:mod:`.adapter`) and its broker launcher (:mod:`.server`); ``ROOM`` describes
the broker (:mod:`mqconform.adapters.rooms`). ``ActiveMQAdapter`` is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..rooms import BrokerRoom

ROOM = BrokerRoom(name="activemq", adapter="mqconform.adapters.activemq:ActiveMQAdapter",
                  profile="activemq-classic", order=50)

if TYPE_CHECKING:
    from .adapter import ActiveMQAdapter

__all__ = ["ROOM", "ActiveMQAdapter"]


def __getattr__(name: str) -> Any:
    if name == "ActiveMQAdapter":
        from .adapter import ActiveMQAdapter

        return ActiveMQAdapter
    raise AttributeError(name)
