"""Consumer settings a machine may use, by the capability each needs."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

#: (capabilities needed, consumer settings)
CONSUMER_MODES: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("window_bytes",), {}),
    (("window_bytes",), {"window_messages": 1}),
    (("window_bytes",), {"window_messages": 2}),
    (("window_bytes",), {"window_bytes": 250}),
    (("consumer_pull",), {"window_bytes": 0}),
    (("consumer_pull", "max_unacked"), {"window_bytes": 0, "max_unacked": 2}),
    (("consumer_prefetch",), {"window_bytes": -1, "max_unacked": 1}),
    (("consumer_prefetch",), {"window_bytes": -1, "max_unacked": 3}),
)

def mode_rounds(rounds: int) -> st.SearchStrategy[int]:
    """A mode index that goes `rounds` times around every mode, so that :func:`mode_round` gives each
    of its choices even where an adapter allows all the modes (the reference adapter)."""
    return st.integers(min_value=0, max_value=rounds * len(CONSUMER_MODES) - 1)


#: one mode index, once around the modes
MODE_INDEX = mode_rounds(1)


def consumer_settings(caps: frozenset[str], index: int) -> dict[str, Any] | None:
    """The index-th consumer mode the capabilities allow (wrapping), or None if none is allowed."""
    allowed = [settings for needs, settings in CONSUMER_MODES if all(n in caps for n in needs)]
    if not allowed:
        return None
    return dict(allowed[index % len(allowed)])


def pulls(settings: dict[str, Any]) -> bool:
    """A consumer in these settings pulls at receive (window 0): none on a single active consumer queue."""
    return settings.get("window_bytes") == 0 or settings.get("window_messages") == 0


def mode_round(caps: frozenset[str], index: int, choices: int) -> int:
    """How often `index` wrapped around the allowed modes, modulo `choices`: a second choice drawn with
    the mode (DELIVERY-25/26: a consumer priority, a single active consumer queue) that leaves the
    draws of every run as they were and shrinks to 0 with the mode."""
    allowed = sum(1 for needs, _ in CONSUMER_MODES if all(n in caps for n in needs))
    return (index // max(allowed, 1)) % choices
