"""Frozen declarations: addresses, queues, consumers and messages, with the scenario defaults.

Defaults: PAGING-4 (page-size 10 MiB, policy PAGE, max -1), RING-1 (ring-size -1),
REDELIVERY-6/7 (max attempts 10, delay 0, multiplier 1.0, cap 10 x delay), DELIVERY window 1 MiB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

FullPolicy = Literal["PAGE", "DROP", "BLOCK", "FAIL"]
FULL_POLICIES: tuple[FullPolicy, ...] = ("PAGE", "DROP", "BLOCK", "FAIL")
DEFAULT_PAGE_SIZE = 10 * 1024 * 1024
DEFAULT_WINDOW_BYTES = 1024 * 1024
PRIORITY_LEVELS = 10
DEFAULT_PRIORITY = 4


def _freeze(value: Mapping[str, object] | None) -> Mapping[str, object]:
    return dict(value or {})


@attrs.frozen
class AddressConfig:
    """An address and its paging store (PAGING-1, PAGING-4): limits are per address."""

    name: str
    max_size_bytes: int = -1
    max_size_messages: int = -1
    page_size_bytes: int = DEFAULT_PAGE_SIZE
    full_policy: FullPolicy = "PAGE"
    #: PAGING-10: per-queue depage budget; None means 2 x page_size_bytes (the Artemis default).
    max_read_page_bytes: int | None = None
    max_read_page_messages: int = -1

    @property
    def read_budget_bytes(self) -> int:
        return 2 * self.page_size_bytes if self.max_read_page_bytes is None else self.max_read_page_bytes


@attrs.frozen
class QueueConfig:
    """A queue bound to an address (RING-1, REDELIVERY-5..7)."""

    name: str
    address: str | None = None
    ring_size: int = -1
    filter: str | None = None
    max_delivery_attempts: int = 10
    redelivery_delay_ms: int = 0
    redelivery_multiplier: float = 1.0
    max_redelivery_delay_ms: int | None = None
    dead_letter: str | None = None

    @property
    def address_name(self) -> str:
        return self.address if self.address is not None else self.name


@attrs.frozen
class ConsumerConfig:
    """A consumer with its window (DELIVERY, REDELIVERY-11): bytes (-1 unbounded, 0 no buffering)."""

    name: str
    queue: str
    window_bytes: int = DEFAULT_WINDOW_BYTES
    window_messages: int | None = None
    max_unacked: int | None = None
    selector: str | None = None
    browser: bool = False


@attrs.frozen
class Message:
    """One message as sent: id, size in bytes, priority 0-9 (DELIVERY-3), optional schedule (SCHED-1)."""

    id: str
    size: int = 100
    priority: int = DEFAULT_PRIORITY
    scheduled_at_ms: int | None = None
    properties: Mapping[str, object] = attrs.field(factory=dict, converter=_freeze)
