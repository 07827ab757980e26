"""The hornetq adapter's records of its addresses, queues and consumers (core sessions)."""

from __future__ import annotations

import attrs

from mqconform.reference_model.config import AddressConfig

#: HornetQ's max-delivery-attempts default (AddressSettings), the model's default_delivery_limit
DEFAULT_ATTEMPTS = 10


@attrs.define
class _Address:
    name: str
    physical: str
    config: AddressConfig
    queues: list[str] = attrs.Factory(list)
    #: max-delivery-attempts of the address settings (its queues')
    attempts: int = DEFAULT_ATTEMPTS
    #: BLOCK: the sends the core producer has not got through yet
    blocked: int = 0


@attrs.define
class _Queue:
    name: str
    physical: str
    address: str


@attrs.define
class _Consumer:
    name: str
    queue: str
    #: its core session (the launcher's name for it)
    session: str
    #: logical id -> the launcher's name of the core consumer holding it, in receive order
    held: dict[str, str] = attrs.Factory(dict)
    #: the launcher's name of the one core consumer of a consumer with cumulative acks (else None)
    kept: str | None = None
