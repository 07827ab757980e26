"""A STOMP header's part of HornetQ's memory estimate of a message."""

from __future__ import annotations


def header_bytes(key: str, value: str) -> int:
    """A STOMP header's part of the memory estimate: a string property (TypedProperties: key
    SimpleString 4 + 2n, StringValue 1 + 4 + 2n, two int references 8)."""
    return 17 + 2 * (len(key) + len(value))
