"""The `mqtt` adapter (:mod:`.adapter`) and its Mosquitto launcher (:mod:`.server`); ``ROOM`` describes
the broker (:mod:`mqconform.adapters.rooms`). ``MqttAdapter`` is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import BrokerRoom, adapter_on_first_use

ROOM = BrokerRoom(name="mqtt", adapter="mqconform.adapters.mqtt:MqttAdapter", profile="mosquitto", order=40,
                  service=("mosquitto", 1883))

if TYPE_CHECKING:
    from .adapter import MqttAdapter

__all__ = ["ROOM", "MqttAdapter"]

__getattr__ = adapter_on_first_use(__name__, "MqttAdapter")
