"""The `redis` adapter (:mod:`.adapter`) and its server launcher (:mod:`.server`)."""

from .adapter import RedisAdapter

__all__ = ["RedisAdapter"]
