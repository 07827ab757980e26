"""The rabbitmq adapter's records of its queues, consumers and held deliveries, and what it reads from
a delivery (its message id, x-delivery-count, redelivered flag and x-first-death-reason) or needs of a
queue's declaration; closing a consumer's channel as a client going away does."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any, TypeAlias

import attrs
from pika.adapters.blocking_connection import BlockingChannel

from mqconform.reference_model.config import QueueConfig

from .._base import Refused


@attrs.define
class _ServiceOrder:
    """The ids of a quorum queue's ready messages in the order the broker serves them: its returns
    first, then the rest as sent (rabbit_fifo v3.10.8 checkout_one takes the returns queue first).
    Kept so the adapter knows which message is at the head (EXPIRY-4): what leaves unseen (expiry,
    drop-head, dead-lettering) leaves from the head, so `trim` to the broker's ready count
    reconciles it."""

    returns: list[str] = attrs.Factory(list)
    sent: list[str] = attrs.Factory(list)

    def add(self, msg_id: str) -> None:
        self.sent.append(msg_id)

    def returned(self, msg_id: str) -> None:
        self.returns.append(msg_id)

    def taken(self, msg_id: str) -> None:
        for part in (self.returns, self.sent):
            if msg_id in part:
                part.remove(msg_id)
                return

    def clear(self) -> None:
        self.returns.clear()
        self.sent.clear()

    def trim(self, ready: int) -> None:
        """Forget messages from the head until as many remain as the broker has ready."""
        excess = max(0, len(self.returns) + len(self.sent) - ready)
        cut = min(excess, len(self.returns))
        del self.returns[:cut]
        del self.sent[:excess - cut]

    def leading(self, past: Callable[[str], bool]) -> int:
        """How many messages from the head in a row are `past` (their TTL has run out)."""
        count = 0
        for msg_id in (*self.returns, *self.sent):
            if not past(msg_id):
                break
            count += 1
        return count


@attrs.define
class _Queue:
    name: str
    physical: str
    address: str
    max_length: int
    delivery_limit: int
    dead_letter: str | None
    overflow: str = "drop-head"
    max_bytes: int = -1
    #: DELIVERY-26: x-single-active-consumer (only one consumer is ever pushed to)
    single_active: bool = False
    #: EXPIRY-1: x-message-ttl
    message_ttl_ms: int | None = None
    #: EXPIRY-4: the ready messages in service order (kept for quorum queues)
    order: _ServiceOrder = attrs.Factory(_ServiceOrder)


#: what _settle waits for: ready + pushed counts per queue, or alternatives of which one holds whole
Expectation: TypeAlias = "dict[str, int] | list[dict[str, int]]"


@attrs.define
class _Held:
    tag: int
    #: x-delivery-count of this delivery (0 when absent: the first delivery)
    returns: int
    #: DELIVERY-23: basic.deliver / basic.get-ok redelivered, x-first-death-reason
    redelivered: bool = False
    reason: str | None = None
    msg_id: str = ""


@attrs.define
class _Consumer:
    name: str
    queue: str
    channel: BlockingChannel
    prefetch: int | None
    #: received and not yet settled, in delivery order
    received: dict[str, _Held] = attrs.Factory(dict)
    #: pushed by the broker and not yet taken by receive() (prefetch consumers)
    buffer: collections.deque[tuple[str, _Held]] = attrs.Factory(collections.deque)
    #: DELIVERY-22: delivery tags this channel issued for messages already settled
    settled: dict[str, int] = attrs.Factory(dict)
    #: DELIVERY-25: the basic.consume arguments (x-priority), again on a re-subscribe
    arguments: dict[str, Any] | None = None

    def held(self) -> int:
        return len(self.received) + len(self.buffer)

    def full(self) -> bool:
        return self.prefetch is not None and self.held() >= self.prefetch


def _limit(config: QueueConfig) -> int:
    """REDELIVERY-26: the declared delivery limit, -1 for none (0 is a limit: dead-letter at the
    first return)."""
    limit = config.max_delivery_attempts
    return -1 if limit is None or limit < 0 else limit


def _over_limit(queue: _Queue, held: _Held) -> bool:
    """REDELIVERY-26: a return of `held` passes the queue's delivery limit (it is dead-lettered)."""
    return queue.delivery_limit >= 0 and held.returns + 1 > queue.delivery_limit


def _close_channel(channel: BlockingChannel) -> None:
    """Close a consumer channel the way a client going away does: basic.cancel and channel.close
    back to back, and the broker returns everything the channel holds, each message once.

    Not ``BlockingChannel.close()``: pika 1.x first cancels every consumer, *rejecting with requeue*
    each delivery it has read but not yet dispatched, and waits for cancel-ok (rejecting what arrives
    meanwhile). On a quorum queue each such reject is a return of its own (x-delivery-count + 1,
    delivery-limit check, to the tail without a limit: rabbit_fifo v3.10.8 L976-1005) and the message
    can even reach the same consumer again before the cancel lands and be rejected once more, so the
    broker counts more returns than the close it stands for. The underlying channel's
    close sends basic.cancel without rejecting and ignores deliveries once closing.
    """
    channel._impl.close()
    channel._flush_output(lambda: channel.is_closed)
    channel._cleanup()


def _message_id(props: Any) -> str:
    msg_id = getattr(props, "message_id", None)
    if msg_id is None:
        raise Refused("rabbitmq: receive: a message without a message_id")
    return str(msg_id)


def _held(method: Any, props: Any) -> _Held:
    return _Held(method.delivery_tag, _returns(props), bool(method.redelivered), _reason(props),
                 _message_id(props))


def _reason(props: Any) -> str | None:
    """DELIVERY-23: the x-first-death-reason header (the first reason it was dead-lettered for)."""
    reason = (getattr(props, "headers", None) or {}).get("x-first-death-reason")
    return reason.decode() if isinstance(reason, bytes) else reason


def _returns(props: Any) -> int:
    headers = getattr(props, "headers", None) or {}
    return int(headers.get("x-delivery-count", 0))
