"""Frozen declarations: addresses, queues, consumers and messages, with the scenario defaults.

Defaults: PAGING-4 (page-size 10 MiB, policy PAGE, max -1), PAGING-13 (page limits unset),
RING-1 (ring-size -1), RING-15 (no last-value key), RING-16 (retroactive-message-count 0),
DELIVERY-12 (destructive), DELIVERY-11 (individual acks), REDELIVERY-6/7 (max attempts 10, delay 0,
multiplier 1.0, cap 10 x delay), DELIVERY window 1 MiB.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import attrs

FullPolicy = Literal["PAGE", "DROP", "BLOCK", "FAIL"]
FULL_POLICIES: tuple[FullPolicy, ...] = ("PAGE", "DROP", "BLOCK", "FAIL")
PageFullPolicy = Literal["DROP", "FAIL"]
#: RETENTION-1..11: a JetStream stream's retention policy (the address's config key retention)
Retention = Literal["limits", "interest", "workqueue"]
PAGE_FULL_POLICIES: tuple[PageFullPolicy, ...] = ("DROP", "FAIL")
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
    #: PAGING-13..16 (Artemis >= 2.28): page limits; negative = unset. They act only together with a
    #: page_full_policy, and a policy acts only with a limit (either alone is ignored).
    page_limit_bytes: int = -1
    page_limit_messages: int = -1
    page_full_policy: PageFullPolicy | None = None
    #: RING-16: keep the last n messages for queues created later (0 = off).
    retroactive_message_count: int = 0
    #: RETENTION-1..11: the address is a JetStream stream with this retention (None: not a stream);
    #: its queues are the stream's durable consumers (feature retention, :mod:`.retention`)
    retention: Retention | None = None

    @property
    def read_budget_bytes(self) -> int:
        return 2 * self.page_size_bytes if self.max_read_page_bytes is None else self.max_read_page_bytes

    @property
    def page_limits_active(self) -> bool:
        """PAGING-13: a page-full policy together with at least one non-negative limit."""
        limited = self.page_limit_bytes >= 0 or self.page_limit_messages >= 0
        return self.page_full_policy is not None and limited

    @property
    def max_pages(self) -> int | None:
        """PAGING-14: page_limit_bytes // page_size_bytes when the byte limit is in effect."""
        if not self.page_limits_active or self.page_limit_bytes < 0:
            return None
        return self.page_limit_bytes // self.page_size_bytes

    @property
    def message_page_limit(self) -> int | None:
        """PAGING-15: page_limit_messages when in effect."""
        if not self.page_limits_active or self.page_limit_messages < 0:
            return None
        return self.page_limit_messages


@attrs.frozen
class QueueConfig:
    """A queue bound to an address (RING-1, REDELIVERY-5..7)."""

    name: str
    address: str | None = None
    ring_size: int = -1
    filter: str | None = None
    #: REDELIVERY-5 / REDELIVERY-26: None: the profile's default_delivery_limit; -1: no limit.
    max_delivery_attempts: int | None = 10
    redelivery_delay_ms: int = 0
    redelivery_multiplier: float = 1.0
    max_redelivery_delay_ms: int | None = None
    dead_letter: str | None = None
    #: DELIVERY-12 / RING-12: delivered messages stay in the queue (Artemis non-destructive).
    non_destructive: bool = False
    #: RING-15: property whose value names the "last value"; a newer message with the same value
    #: supersedes the pending older one (Artemis last-value-key).
    last_value_key: str | None = None
    #: RING-28: the overflow policy in the broker's own words (drop-head, reject-publish,
    #: reject-publish-dlx, discard-old, discard-new: the profile's overflow_policies); None: the
    #: profile's default overflow.
    overflow: str | None = None
    #: RING-27: a bound on the bytes of the messages the ring bound counts (-1: none; RabbitMQ
    #: x-max-length-bytes), beside ring_size (x-max-length); either one over the bound overflows.
    max_length_bytes: int = -1
    #: EXPIRY-1: the queue's message TTL in ms on the logical clock (None: none; RabbitMQ
    #: x-message-ttl, JetStream max_age, Artemis expiry-delay); with a message's own ttl_ms the
    #: profile's ttl_combination decides (EXPIRY-3).
    message_ttl_ms: int | None = None
    #: EXPIRY-6: where an expired message goes under expired_to="expiry_address" (Artemis
    #: expiry-address; None: it is dropped).
    expiry_address: str | None = None
    #: DELIVERY-26: only one consumer at a time is offered messages (RabbitMQ
    #: x-single-active-consumer); the others wait their turn.
    single_active_consumer: bool = False
    #: RING-31: at most this many stored messages per subject (JetStream max_msgs_per_subject; -1:
    #: none); a store over it removes the subject's oldest message.
    max_per_subject: int = -1
    #: RING-32: with overflow reject_new, refuse a message whose subject is at max_per_subject
    #: (JetStream discard_new_per_subject) instead of replacing the subject's oldest one (RING-33).
    discard_new_per_subject: bool = False

    @property
    def address_name(self) -> str:
        return self.address if self.address is not None else self.name


def _int_tuple(value: Iterable[int] | None) -> tuple[int, ...] | None:
    """A list from a scenario file as a tuple (frozen configs stay hashable)."""
    return None if value is None else tuple(value)


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
    #: DELIVERY-11: core acknowledgement mode: an ack of id m acknowledges every message the
    #: consumer received before m as well (Artemis ServerConsumerImpl#acknowledge).
    cumulative_ack: bool = False
    #: REDELIVERY-27: JetStream AckWait on the logical clock: a message this (pull) consumer received
    #: and has not settled within ack_wait_ms returns to the queue by itself (None: never).
    ack_wait_ms: int | None = None
    #: REDELIVERY-32..35: JetStream consumer BackOff: the ack wait of a message's n-th delivery is
    #: backoff_ms[min(n - 1, len - 1)] (it replaces ack_wait_ms, which may only repeat its first
    #: value); None: ack_wait_ms for every delivery.
    backoff_ms: tuple[int, ...] | None = attrs.field(default=None, converter=_int_tuple)
    #: DELIVERY-25: consumers of higher priority are offered messages first (RabbitMQ x-priority,
    #: ActiveMQ Classic activemq.priority, Artemis the AMQP attach property priority); 0 is the default.
    priority: int = 0


@attrs.frozen
class Message:
    """One message as sent: id, size in bytes, priority 0-9 (DELIVERY-3), optional schedule (SCHED-1),
    TTL (EXPIRY-2) and group (DELIVERY-49)."""

    id: str
    size: int = 100
    priority: int = DEFAULT_PRIORITY
    scheduled_at_ms: int | None = None
    properties: Mapping[str, object] = attrs.field(factory=dict, converter=_freeze)
    #: EXPIRY-2: the message's own TTL in ms from the time it enters a queue (RabbitMQ expiration,
    #: JetStream Nats-TTL, JMS time-to-live); None: none.
    ttl_ms: int | None = None
    #: RING-31: the subject the message is published on below its address (feature
    #: max_per_subject; None: the address itself).
    subject: str | None = None
    #: EXPIRY-8: the duplicate-detection id (Artemis ``_AMQ_DUPL_ID``, feature duplicate_id); None: none.
    duplicate_id: str | None = None
    #: DELIVERY-49: the message group (Artemis JMSXGroupID, over AMQP properties group-id; feature
    #: message_groups; None: no group).
    group: str | None = None
