"""The `activemq` adapter (:mod:`.adapter`) and its broker launcher (:mod:`.server`); ``ROOM`` describes
the broker (:mod:`mqconform.adapters.rooms`). ``ActiveMQAdapter`` is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import BrokerRoom, adapter_on_first_use

ROOM = BrokerRoom(name="activemq", adapter="mqconform.adapters.activemq:ActiveMQAdapter",
                  profile="activemq-classic", order=50)

if TYPE_CHECKING:
    from .adapter import ActiveMQAdapter

__all__ = ["ROOM", "ActiveMQAdapter"]

__getattr__ = adapter_on_first_use(__name__, "ActiveMQAdapter")
