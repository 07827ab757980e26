"""The `rocketmq` adapter (:mod:`.adapter`), its namesrv + broker launcher (:mod:`.server`) and the
broker's driver, Java compiled against the release's jars (``driver/BrokerDriver.java``,
``driver/Queues.java``, ``driver/Clock.java``); ``ROOM`` describes the broker
(:mod:`mqconform.adapters.rooms`).

``RocketMQAdapter`` is imported on first use, so ``python -m mqconform.adapters.rocketmq.server``
(the cache warm-up of scripts/setup.sh) loads no more than it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import BrokerRoom, adapter_on_first_use

ROOM = BrokerRoom(name="rocketmq", adapter="mqconform.adapters.rocketmq:RocketMQAdapter", profile="rocketmq",
                  order=100)

if TYPE_CHECKING:
    from .adapter import RocketMQAdapter

__all__ = ["ROOM", "RocketMQAdapter"]

__getattr__ = adapter_on_first_use(__name__, "RocketMQAdapter")
