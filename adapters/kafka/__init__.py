"""The `kafka` adapter (:mod:`.adapter`, share groups) and its broker launcher (:mod:`.server`); ``ROOM``
(:mod:`.room`) describes the broker and its releases (:mod:`mqconform.adapters.rooms`).

``KafkaShareAdapter`` is imported on first use, so ``python -m mqconform.adapters.kafka.server`` (the
cache warm-up of scripts/setup.sh) needs no Kafka client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import adapter_on_first_use
from .room import KAFKA_RELEASES, RELEASES, ROOM

if TYPE_CHECKING:
    from .adapter import KafkaShareAdapter

__all__ = ["KAFKA_RELEASES", "RELEASES", "ROOM", "KafkaShareAdapter"]

__getattr__ = adapter_on_first_use(__name__, "KafkaShareAdapter")
