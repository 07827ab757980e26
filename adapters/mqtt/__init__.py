"""The `mqtt` adapter (:mod:`.adapter`) and its Mosquitto launcher (:mod:`.server`)."""

from .adapter import MqttAdapter

__all__ = ["MqttAdapter"]
