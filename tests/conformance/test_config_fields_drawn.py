"""Every field of the model's configuration classes is drawn by some conformance machine.

A field of reference_model/config.py that no machine names is a configuration the suite never
exercises: a broker bug behind it stays unseen (Artemis' max-size-messages leak went unfound while
the paging machine drew no message-count limit). The machine code is mqconform/conformance/
machines/*.py and the package modules they import (queue_machine.py, consumers.py, ...: followed
through their relative imports), read as source. A field counts as named where that code has it as a
string ("max_size_messages") or as a keyword (``max_size_messages=``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import attrs

from mqconform.reference_model import config

PACKAGE = Path(__file__).resolve().parents[2] / "mqconform" / "conformance"

#: fields no machine draws, each with why it is not a configuration draw (keep it short: a field that
#: could be drawn belongs in a machine, not here)
NOT_DRAWN = {
    # the model has no browsing consumer: one opened with browser=True is never subscribed and its
    # receive answers None (reference_model/delivery.py), where a broker's browser receives copies;
    # what a browser sees (PAGING-12) is checked through the browse operation (capability browse).
    # No capability offers browser consumers (the Artemis adapter refuses them).
    ("ConsumerConfig", "browser"),
}


def config_fields() -> list[tuple[str, str]]:
    """(class, field) of every attrs class defined in reference_model/config.py."""
    classes = [c for c in vars(config).values()
               if isinstance(c, type) and attrs.has(c) and c.__module__ == config.__name__]
    return [(c.__name__, f.name) for c in classes for f in attrs.fields(c)]


def machine_modules() -> list[Path]:
    """machines/*.py and every module of the package they import, transitively (relative imports)."""
    todo = sorted((PACKAGE / "exploring" / "machines").glob("*.py"))
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level > 0 and node.module:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                target = base.joinpath(*node.module.split(".")).with_suffix(".py")
                if target.is_file() and PACKAGE in target.parents:
                    todo.append(target)
    return sorted(seen)


def named(field: str, source: str) -> bool:
    return re.search(rf"""["']{field}["']|\b{field}\s*=(?!=)""", source) is not None


def test_machine_modules_are_found() -> None:
    """The scan reads the machines and the queue machine they share (else it proves nothing)."""
    names = {p.name for p in machine_modules()}
    assert {"paging.py", "delivery.py", "queue_machine.py", "consumers.py"} <= names


def test_every_config_field_is_drawn_by_a_machine() -> None:
    source = "\n".join(p.read_text() for p in machine_modules())
    fields = config_fields()
    assert len(fields) >= 48  # AddressConfig, QueueConfig, ConsumerConfig, Message
    missing = [f"{cls}.{name}" for cls, name in fields
               if (cls, name) not in NOT_DRAWN and not named(name, source)]
    assert not missing, (f"fields of reference_model/config.py no conformance machine draws: {missing} "
                         "(draw them behind their capability, or say in NOT_DRAWN why not)")


def test_not_drawn_names_only_fields_that_exist_and_are_not_drawn() -> None:
    """A stale allow-list entry (the field is gone, or a machine now draws it) fails."""
    fields = set(config_fields())
    source = "\n".join(p.read_text() for p in machine_modules())
    assert fields >= NOT_DRAWN
    assert not [f for f in NOT_DRAWN if named(f[1], source)]


def test_the_scan_would_fail_without_the_paging_draws() -> None:
    """The check bites: without machines/paging.py, the message-count limit is named nowhere."""
    source = "\n".join(p.read_text() for p in machine_modules() if p.name != "paging.py")
    assert not named("max_size_messages", source)
    assert not named("max_read_page_messages", source)
