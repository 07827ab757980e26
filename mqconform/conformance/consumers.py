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

MODE_INDEX = st.integers(min_value=0, max_value=len(CONSUMER_MODES) - 1)


def consumer_settings(caps: frozenset[str], index: int) -> dict[str, Any] | None:
    """The index-th consumer mode the capabilities allow (wrapping), or None if none is allowed."""
    allowed = [settings for needs, settings in CONSUMER_MODES if all(n in caps for n in needs)]
    if not allowed:
        return None
    return dict(allowed[index % len(allowed)])
