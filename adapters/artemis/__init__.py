"""The `artemis` adapter (:mod:`.adapter`) and its broker launcher (:mod:`.server`).

``ArtemisAdapter`` is imported on first use, so ``python -m mqconform.adapters.artemis.server`` (the
cache warm-up of scripts/setup.sh) needs neither proton nor a second copy of the server module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .adapter import ArtemisAdapter

__all__ = ["ArtemisAdapter"]


def __getattr__(name: str) -> Any:
    if name == "ArtemisAdapter":
        from .adapter import ArtemisAdapter

        return ArtemisAdapter
    raise AttributeError(name)
