"""Exceptions as the one line a user sees (every command prints one line per error, no traceback)."""

from __future__ import annotations


def one_line(exc: BaseException, limit: int | None = None) -> str:
    """The message with white space folded into one line, else the exception's type."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if limit is None else text[:limit]


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """The first non-empty line of a message (a Java stack trace, a Hypothesis report), else the type."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if limit is None else text[:limit]
