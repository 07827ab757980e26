"""A small message selector language: `key = 'text'`, `key = 12`, `key <> 'x'`, joined by AND.

Used for queue filters (routing) and consumer selectors (dispatch), PAGING-12.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from .errors import ModelMisuse

Predicate = Callable[[Mapping[str, object]], bool]

_TERM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(=|<>)\s*('(?:[^']*)'|-?\d+(?:\.\d+)?|true|false)\s*$",
                   re.IGNORECASE)


def _literal(text: str) -> object:
    if text.startswith("'"):
        return text[1:-1]
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    return float(text) if "." in text else int(text)


def compile_selector(text: str | None) -> Predicate | None:
    """Compile `text` into a predicate over message properties; None for no selector."""
    if text is None or not text.strip():
        return None
    terms: list[tuple[str, bool, object]] = []
    for part in re.split(r"\s+AND\s+", text.strip(), flags=re.IGNORECASE):
        match = _TERM.match(part)
        if match is None:
            raise ModelMisuse(f"unsupported selector term {part!r} (use key = 'value' [AND ...])")
        key, op, lit = match.groups()
        terms.append((key, op == "=", _literal(lit)))

    def predicate(props: Mapping[str, object]) -> bool:
        return all((props.get(key) == value) == equal for key, equal, value in terms)

    return predicate
