"""The `hornetq` adapter (:mod:`.adapter`) and its broker launcher (:mod:`.server`); ``ROOM`` describes
the broker (:mod:`mqconform.adapters.rooms`).

``HornetQAdapter`` is imported on first use, so ``python -m mqconform.adapters.hornetq.server`` (the
cache warm-up of scripts/setup.sh) needs neither stomp.py nor a second copy of the server module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import BrokerRoom, adapter_on_first_use

ROOM = BrokerRoom(name="hornetq", adapter="mqconform.adapters.hornetq:HornetQAdapter", profile="hornetq-2.4",
                  order=80)

if TYPE_CHECKING:
    from .adapter import HornetQAdapter

__all__ = ["ROOM", "HornetQAdapter"]

__getattr__ = adapter_on_first_use(__name__, "HornetQAdapter")
