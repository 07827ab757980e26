"""The `artemis` adapter (:mod:`.adapter`: lifecycle, consumers, receive and settle) and its layers:
connection state (:mod:`.client`), waits on the broker's threads and the clock (:mod:`.settling`),
declarations (:mod:`.declarations`), sends (:mod:`.sends`), observations (:mod:`.observation`), records
(:mod:`.records`), capabilities by release (:mod:`.features`), management (:mod:`.management`),
message sizes (:mod:`.sizing`) and the broker launcher (:mod:`.server`).

``ROOM`` (:mod:`.room`) describes the broker and its releases (:mod:`mqconform.adapters.rooms`).

``ArtemisAdapter`` is imported on first use, so ``python -m mqconform.adapters.artemis.server`` (the
cache warm-up of scripts/setup.sh) needs neither proton nor a second copy of the server module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import adapter_on_first_use
from .room import ARTEMIS_NEW_GROUP_SINCE, ARTEMIS_RELEASES, RELEASES, ROOM, artemis_group

if TYPE_CHECKING:
    from .adapter import ArtemisAdapter

__all__ = ["ARTEMIS_NEW_GROUP_SINCE", "ARTEMIS_RELEASES", "RELEASES", "ROOM", "ArtemisAdapter",
           "artemis_group"]

__getattr__ = adapter_on_first_use(__name__, "ArtemisAdapter")
