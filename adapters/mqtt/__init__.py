"""The `mqtt` adapter (:mod:`.adapter`) and its Mosquitto launcher (:mod:`.server`); ``ROOM`` describes
the broker (:mod:`mqconform.adapters.rooms`). ``MqttAdapter`` is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..rooms import BrokerRoom

ROOM = BrokerRoom(name="mqtt", adapter="mqconform.adapters.mqtt:MqttAdapter", profile="mosquitto", order=40,
                  service=("mosquitto", 1883))

if TYPE_CHECKING:
    from .adapter import MqttAdapter

__all__ = ["ROOM", "MqttAdapter"]


def __getattr__(name: str) -> Any:
    if name == "MqttAdapter":
        from .adapter import MqttAdapter

        return MqttAdapter
    raise AttributeError(name)
