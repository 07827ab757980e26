"""The `nats` adapter (:mod:`.adapter`), its embedded server (:mod:`.server`) and the stream addresses
of several consumers (:mod:`.retention`)."""

from .adapter import NatsAdapter

__all__ = ["NatsAdapter"]
