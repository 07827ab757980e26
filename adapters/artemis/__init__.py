"""The `artemis` adapter (:mod:`.adapter`) and its broker launcher (:mod:`.server`)."""

from .adapter import ArtemisAdapter

__all__ = ["ArtemisAdapter"]
