"""Logical sizes on a real Artemis: what a message of logical size s weighs in the broker's paging store.

Artemis does not count a message's body length against an address limit but its memory estimate
(PagingStoreImpl#addSize from QueueImpl#refUp: the message's estimate once, plus
MessageReferenceImpl#getMemoryEstimate per queue reference; PAGING-2). For an AMQP message that
estimate is a fixed offset plus its encoded length (AMQPStandardMessage#getMemoryEstimate), measured
on the broker by :func:`calibrate` (2.40.0: 424 + encoded + 72 per queue).

So the adapter sends a message of logical size s as a body whose estimate with every queue's reference
is exactly ``s * UNIT`` bytes, and maps each logical byte limit of an address to a broker threshold
half a grain below the first multiple of the grain that reaches it (:func:`threshold`). Every
logical size sent to a limited address must be a multiple of ``GRAIN``; the amounts the broker adds
beyond the estimate in some counts (a reference acknowledged by one of two queues, the page record of
a paged message, the persistent size it counts for delivering messages, PagingStoreImpl#directWritePage,
QueueImpl#needsDepage) stay below half a grain for up to GRAIN * UNIT / 2 / 600 ~ 13 messages, so a
threshold the model computes on logical sizes lands on the broker on the same side.
"""

from __future__ import annotations

import math

import attrs
from proton import Message as AmqpMessage

#: broker bytes per logical byte (250 logical bytes: 80 000 bytes, below the AMQP large-message
#: threshold amqpMinLargeMessageSize: 102400 by default, 1 MiB on the adapter's own broker)
UNIT = 320
#: logical sizes sent to a limited address are multiples of this
GRAIN = 50
#: page-size-bytes and max-read-page-bytes are Java ints: a mapped value above this is capped (the
#: default page size of 10 MiB logical; no example fills a page of 2**30 / UNIT logical bytes)
INT_CAP = 2**30


@attrs.frozen
class Sizing:
    """The broker's estimate of an AMQP message: ``offset + len(encoded) + per_ref * queues``."""

    offset: int
    per_ref: int

    def body_for(self, size: int, queues: int, make: type[AmqpMessage] | None = None,
                 **fields: object) -> str:
        """A body that makes a message built with `fields` weigh ``size * UNIT`` bytes on an address
        with `queues` queues; ValueError when the message is too small to carry its own headers."""
        build = make or AmqpMessage
        target = size * UNIT - self.offset - self.per_ref * queues
        length = target - len(build(body="", **fields).encode())
        for candidate in (length, length - 3, length - 4, length - 1, length - 2):  # str8 -> str32
            if candidate >= 0 and len(build(body="x" * candidate, **fields).encode()) == target:
                return "x" * candidate
        raise ValueError(f"a message of logical size {size} cannot weigh {size * UNIT} bytes on the broker")


def threshold(limit: int) -> int:
    """The broker threshold (bytes) for logical byte limit `limit` reached when size >= limit: half a
    grain below the first multiple of the grain that reaches it (at most INT_CAP)."""
    return min(math.ceil(limit / GRAIN) * GRAIN * UNIT - GRAIN * UNIT // 2, INT_CAP)


def over_threshold(limit: int) -> int:
    """The broker threshold (bytes) for a logical limit exceeded when size > limit (page files)."""
    return threshold(limit + 1)
