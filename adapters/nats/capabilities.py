"""What the nats adapter can do against a nats-server release: its base capabilities, the JetStream
features by the first release that has them, and the release behaviours the adapter adapts to."""

from __future__ import annotations

import re
from collections.abc import Mapping

#: what the adapter can do and observe exactly (see the module docstring for what is left out)
CAPABILITIES = frozenset({
    "queues", "ring", "priorities", "nack", "delivery_count", "consumer_pull", "max_unacked",
    "advance_time", "counter:message_count", "counter:added",
    # the stream's discard policy per queue (RING-28), +TERM for nack requeue=false
    "overflow:discard-old", "overflow:discard-new", "nack_reject",
    # DELIVERY-22: acks of messages a consumer no longer holds reach the server
    "invalid_ack",
    # REDELIVERY-27: a consumer's ack_wait_ms is the durable's AckWait, in_progress is +WPI;
    # REDELIVERY-28: nack delay_ms is -NAK {"delay": ns}
    "ack_wait", "nack_delay",
    # REDELIVERY-32..35: a consumer's backoff_ms is the durable's BackOff (nats-server >= 2.7.1)
    "backoff",
    # RING-29: stream purge (every stored message, delivered ones too); DELIVERY-31..33: delete of one
    # message by stream sequence
    "purge", "delete",
    # DELIVERY-23: the redelivered flag (num_delivered > 1) of a held message
    "redelivered_flag",
    # the stream and durable consumer state as counters (RESTART-5, DELIVERY-30), the
    # durable consumer's counters and sequence pairs (DELIVERY-27..29)
    "stream_state", "consumer_state",
    # EXPIRY-1/3/4: a queue's message_ttl_ms is the stream's max_age (every release; at least
    # MIN_MAX_AGE_MS); a message's ttl_ms is per_message_ttl, from 2.11 only (MIN_VERSION)
    "message_ttl",
    # RING-27: a queue's byte bound is the stream's max_bytes (in BYTE_UNIT: see _payload)
    "max_length_bytes",
    # RETENTION-1..11: an address with a retention is a stream, its queues durable consumers
    # (adapters/nats/retention.py)
    "retention",
})


#: JetStream features by the first nats-server release that has them (the research notes
#: on the nats-server history: PR numbers in the comments). A feature of a newer server than the
#: one the adapter talks to is left out of its capabilities: not applicable, never a failure.
#: Capability names ``js:<feature>``; a machine or driver step that uses one gates on it.
MIN_VERSION: Mapping[str, tuple[int, int, int]] = {
    "js:nak_delay": (2, 7, 0),              # -NAK {"delay"} (#2812)
    "js:discard_new_per_subject": (2, 9, 0),  # StreamConfig.discard_new_per_subject
    "js:limit_update_keeps_discard_new": (2, 10, 6),  # lowering max_msgs trims only discard old (#4802)
    # RING-30: set_ring_size is a stream update of max_msgs; before 2.10.6 discard new trimmed too
    "set_ring_size": (2, 10, 6),
    # DELIVERY-38..40: pull requests with max_bytes (409 Message Size Exceeds MaxBytes, 2.9.0)
    "pull_batch": (2, 9, 0),
    "js:backoff_len_eq_max_deliver": (2, 10, 23),  # len(BackOff) == MaxDeliver accepted (#6154)
    "js:message_ttl": (2, 11, 0),            # allow_msg_ttl, Nats-TTL (#6272, #6319, #6400)
    "per_message_ttl": (2, 11, 0),           # EXPIRY-2: the contract's send ttl_ms as Nats-TTL
    "js:consumer_pause": (2, 11, 0),         # pause_until, $JS.API.CONSUMER.PAUSE (#5066)
    "consumer_pause": (2, 11, 0),            # DELIVERY-34: call("pause", queue, until_ms)
    "js:max_deliver_one_not_redelivered": (2, 11, 4),  # num_redelivered 0 with MaxDeliver 1 (#6877)
    "js:message_schedules": (2, 12, 0),      # Nats-Schedule @at (#7170)
    "js:schedule_repeat": (2, 14, 0),        # @every, cron, time zones (#7504)
    # DELIVERY-41..44: ADR-42 priority groups, the overflow policy (min_pending, min_ack_pending)
    "priority_overflow": (2, 11, 0),
    # DELIVERY-45..47: ADR-42 priority groups, the pinned_client policy (Nats-Pin-Id, 423, UNPIN)
    "priority_pinned": (2, 11, 0),
    # DELIVERY-43: both thresholds given, either suffices (before 2.12.5 both had to hold: 43071fa5b)
    "js:overflow_either_threshold": (2, 12, 5),
    # RING-31..33: max_msgs_per_subject with discard_new_per_subject; from 2.14.0 only, where a
    # discard-new max_bytes check refuses a store only when it would exceed max_bytes (before
    # 8311cde5c "Only use store's DiscardNew error for R1 & off-by-ones" it compared with >=)
    "max_per_subject": (2, 14, 0),
}



def parse_version(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a nats-server version such as ``2.10.25`` or ``v2.12.0-RC.1``;
    None when it is not one."""
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", version.strip())
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


#: the releases in which a queued no_wait pull request without an expiry ends with "404 No Messages"
#: as soon as the consumer finds nothing it may deliver to it (consumer.go processWaiting at the end
#: of the stream, nats-server #7466 "Consumer send 404 No Messages on EOS": 2.11.11 on the 2.11 line,
#: 2.12.2 on the 2.12 line). Before it such a request that delivered nothing was only ended by its
#: expiry: a request the server queues (a pin held by another client, overflow thresholds not met)
#: then needs an expiry, and its empty answer comes when that expiry has passed.
NOWAIT_ENDS_AT_EOS = ((2, 11, 11), (2, 12, 0), (2, 12, 2))


def nowait_ends_at_eos(version: str) -> bool:
    """Whether a nats-server of `version` ends a queued no_wait pull request without an expiry at
    once with a 404 when it has nothing for it (NOWAIT_ENDS_AT_EOS); False for an unknown version."""
    parsed = parse_version(version)
    if parsed is None:
        return False
    fixed_11, line_12, fixed_12 = NOWAIT_ENDS_AT_EOS
    return fixed_11 <= parsed < line_12 or parsed >= fixed_12


def capabilities_for(version: str) -> frozenset[str]:
    """Capabilities against a server of `version`: the base set plus every ``MIN_VERSION`` feature
    the release has (an unknown version gets none of them). Message schedules are still not used
    by the machines: they fire on the server's clock, which `advance` cannot move."""
    parsed = parse_version(version)
    if parsed is None:
        return CAPABILITIES
    return CAPABILITIES | frozenset(f for f, first in MIN_VERSION.items() if parsed >= first)


