"""The nats adapter's record of each queue and consumer, and the names and sizes they take in JetStream:
a queue is a work-queue stream ``<prefix>_<queue>`` on the subject ``<prefix>.<address>`` read by one
durable pull consumer; a message is published with its id in the ID_HEADER header."""

from __future__ import annotations

import hashlib
import re

import attrs
from nats.aio.msg import Msg

ID_HEADER = "Mqc-Id"
DURABLE = "mqc"
#: max_ack_pending of a durable whose consumers set no max_unacked (never reached by the suite)
UNBOUNDED_ACK_PENDING = 10_000

#: RING-27: one byte of the model is this many bytes of JetStream's stored size (subject, headers,
#: payload and record overhead, nats-server memStoreMsgSize / fileStoreMsgSize): on a queue with a byte
#: bound the adapter pads a message of size s so that it is stored as exactly s x BYTE_UNIT bytes (the
#: overhead, under 200 bytes for the adapter's subjects and headers, fits in one unit)
BYTE_UNIT = 1024


#: DELIVERY-39: the longest ack reply subject a delivery of a stream address's message may carry,
#: beside the stream's name: "$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivery count>.
#: <stream seq>.<consumer seq>.<timestamp>.<pending>" (consumer.go ackReply; a consumer name of a queue
#: token up to 40 characters, counts up to 10 digits, the timestamp 19 digits, the domain and account
#: hash up to 64 characters). The shortest is "$JS.ACK.<stream>.<c>.1.1.1.<timestamp>.0", 38 bytes
#: beside the stream's name, so a padded message is counted at most ACK_REPLY_SPREAD bytes below its
#: size in units, and a budget of b units admits exactly the messages whose sizes add up to b as long
#: as at most FETCH_MAX_BATCH + 1 messages are weighed (the spreads stay below one unit)
ACK_REPLY_FIXED = len("$JS.ACK.") + 64 + 1 + 40 + 1 + 4 * 11 + 20
ACK_REPLY_SPREAD = ACK_REPLY_FIXED - 38
FETCH_MAX_BATCH = 6


def ack_reply_bound(stream: str) -> int:
    """The longest ack reply of a delivery from `stream` (see ACK_REPLY_FIXED)."""
    return ACK_REPLY_FIXED + len(stream)


def _token(name: str) -> str:
    """A name usable in subjects, stream and consumer names; a hash keeps distinct names distinct."""
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if clean != name or not clean:
        clean = f"{clean}_{hashlib.sha1(name.encode()).hexdigest()[:6]}"
    return clean



def _limits(ring_size: int, max_length_bytes: int) -> dict[str, int]:
    """A stream's max_msgs and max_bytes for a ring size and a byte bound (-1: none). Ring 0: max_msgs
    0 means unlimited, but max_bytes 1 keeps nothing (discard old evicts every message right after
    its PubAck, accepted and counted in last_seq; discard new refuses every one)."""
    return {"max_msgs": ring_size if ring_size > 0 else -1,
            "max_bytes": 1 if ring_size == 0 else (
                max_length_bytes * BYTE_UNIT if max_length_bytes >= 0 else -1)}



@attrs.define
class _Queue:
    name: str
    stream: str
    subject: str
    address: str
    durable: bool = False
    max_ack_pending: int = UNBOUNDED_ACK_PENDING
    #: the durable's AckWait in ms (None: the adapter's ack_wait_s)
    ack_wait_ms: int | None = None
    #: REDELIVERY-32..35: the durable's BackOff in ms (None: none)
    backoff_ms: tuple[int, ...] | None = None
    #: REDELIVERY-21/26: the durable's MaxDeliver (the queue's max_delivery_attempts; -1: none)
    max_deliver: int = -1
    #: message id -> stream sequence (from the PubAck)
    seqs: dict[str, int] = attrs.Factory(dict)
    #: a message was published to the queue since NatsPulls._lagged last looked at the durable's count
    sent_since_look: bool = False
    #: message id -> num_delivered of its last delivery
    delivered: dict[str, int] = attrs.Factory(dict)
    #: RING-27: the stream has max_bytes (messages are stored as size x BYTE_UNIT bytes)
    byte_bound: bool = False
    #: RING-27: the declared byte bound (-1: none), restored when a ring size 0 is lifted (RING-30)
    max_length_bytes: int = -1
    #: DELIVERY-34: the durable's pause_until (RFC 3339, UTC), kept for a durable made again
    pause_until: str | None = None
    #: EXPIRY-1: the stream's max_age in ms (None: none)
    message_ttl_ms: int | None = None
    #: RETENTION-1..11: the durable consumer's name (a queue of a stream address has its own) and the
    #: first stream sequence it delivers (DeliverPolicy New: the stream's last sequence + 1 at join)
    durable_name: str = DURABLE
    start_seq: int = 0
    #: DELIVERY-41..47: the durable's ADR-42 priority policy (None: none); every pull then names the
    #: group PRIORITY_GROUP
    priority_policy: str | None = None


@attrs.define
class _Consumer:
    name: str
    queue: str
    #: message id -> the delivered message, in delivery order
    held: dict[str, Msg] = attrs.Factory(dict)
    #: DELIVERY-22: message id -> its last delivery to this consumer, settled or not (the reply
    #: subject an ack of a message the consumer no longer holds is sent on)
    tokens: dict[str, Msg] = attrs.Factory(dict)
    #: DELIVERY-45..47: the pin id this client names in its pull requests (the Nats-Pin-Id of its
    #: last delivery, forgotten on a 423)
    pin: str | None = None
