"""The `nats` adapter (:mod:`.adapter`) and its parts: the connection (:mod:`.client`), pull requests
(:mod:`.pulls`), observations (:mod:`.observation`), stream updates (:mod:`.stream_admin`), stream
addresses of several consumers (:mod:`.retention`), queue records and names (:mod:`.queues`),
capabilities by release (:mod:`.capabilities`) and the embedded server (:mod:`.server`)."""

from .adapter import NatsAdapter

__all__ = ["NatsAdapter"]
