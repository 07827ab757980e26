"""What the artemis adapter can drive: its capabilities, the oldest release it drives, and the
per-release switches (:class:`Features`)."""

from __future__ import annotations

import attrs

from .server import at_least

#: the oldest release the adapter drives (the oldest one served; the positional addAddressSettings of
#: 58 arguments, ARTEMIS-2810 in 2.14.0, is the same from 2.18.0 to 2.31.2)
MIN_VERSION = "2.18.0"
#: live per-address settings as JSON (Jolokia addAddressSettings(match, json)), ARTEMIS-3932
JSON_SETTINGS_SINCE = "2.32.0"
#: QueueControl#deliverScheduledMessage(id), ARTEMIS-3872 (commit 63966dcc56, first in 2.25.0)
DELIVER_SCHEDULED_SINCE = "2.25.0"
#: DELIVERY-26 on an exclusive queue: a closing consumer's deliveries return before its exclusive turn
#: is released, ServerConsumerImpl#close cancelling before removeItself (ARTEMIS-4410, commit
#: b11945e0c7, 2.31.0) and QueueImpl#removeConsumer releasing after the operation context completes
#: (ARTEMIS-4480, commit 91fd12ad1f, 2.32.0)
SINGLE_ACTIVE_SINCE = "2.32.0"
#: EXPIRY-8: an expiry copy is routed with rejectDuplicates false, ARTEMIS-3529 (commit 1d84800d5a in
#: 2.20.0, da9c8d6830 in 2.19.1); before, the expiry scanner's copy with an id the expiry address had
#: cached marked the scan's transaction rollback-only (QueueImpl#expire(Transaction, MessageReference))
DUPLICATE_ID_SINCE = "2.19.1"
#: DELIVERY-48: QueueControl#moveMessage(id, queue) finds a scheduled or paged message too,
#: QueueImpl#moveReference as an iterQueue action (ARTEMIS-5376, commits 30c8fc7b10 and 15657ce3a2, first
#: in 2.53.0); before, it walked the pending list only
MOVE_LISTED_SINCE = "2.53.0"

CAPABILITIES = frozenset({
    "queues", "ring", "set_ring_size", "priorities", "nack", "dead_letter", "delivery_count",
    # consumer modes: pull (window 0) and prefetch (window -1 with max_unacked). Not
    # independent_consumers: the model frees a prefetch consumer's room in the same instant a nack
    # returns the message, while AMQP needs two frames (disposition, then credit), so the broker may
    # give the returned message to another consumer that has credit (or the next one to this
    # consumer): several consumers of a queue therefore share the first one's mode, and a queue whose
    # first consumer prefetches gets no second one (docs/adapters/artemis.md)
    "consumer_pull", "consumer_prefetch", "pending_order",
    "counter:message_count", "counter:pending_count", "counter:delivering_count",
    "counter:scheduled_count", "counter:paged_count", "counter:added", "counter:acknowledged",
    "counter:killed", "counter:expired",
    # EXPIRY-1..7 on the broker's own clock (the adapter sleeps on advance): address setting
    # expiry-delay (a message without its own expiration), AMQP header ttl, expiry-address
    "advance_time", "message_ttl", "per_message_ttl", "expiry_address",
    # RING-15 last-value queues (QueueConfiguration last-value-key), DELIVERY-12 non-destructive
    # queues, DELIVERY-31..33 delete by id (QueueControl#removeMessage), DELIVERY-48 move by id
    # (QueueControl#moveMessage(long, String), every served release; a scheduled or paged message too
    # from 2.53.0, move_listed: Features), DELIVERY-49 message groups (the AMQP properties group-id,
    # AMQPMessage#getGroupID, every served release)
    "last_value", "non_destructive", "delete", "move", "move_listed", "message_groups",
    # PAGING-12 / browse.ids: management listMessages walks QueueImpl#browserIterator, the iterator a
    # browsing consumer walks (pending in delivery order, then the page cursor); DELIVERY-23 the
    # redelivered flag an AMQP client sees (header delivery-count > 0, i.e. broker count > 1)
    "browse", "redelivered_flag",
    # PAGING-1..16, 28: address limits on logical sizes made exact on the broker's memory estimate
    # (.sizing), address-full policies PAGE, DROP and FAIL, AddressControl Paging
    "paging", "drop_policy", "fail_policy", "block_policy", "paging_flag", "page_limits",
    # SCHED-1..6, 9..11: annotation x-opt-delivery-time; due messages are fired at their logical due
    # time through management (see _fire), in the broker's scheduler order and head placement;
    # SCHED-16 one of them delivered now on request, the same QueueControl#deliverScheduledMessage(id)
    "scheduling", "deliver_scheduled",
    # DELIVERY-26 exclusive queues (QueueConfiguration exclusive): only the consumer the first dispatch
    # served is given messages; the others wait (not pull consumers). Their consumers are independent:
    # a returned message can go to the exclusive consumer only, so the nack race above does not meet
    "single_active_consumer", "independent_single_active",
    # DELIVERY-25 consumer priorities: the receiver's attach property `priority` (every served release:
    # AMQPSessionCallback#createSender reads it from 2.18.0 on); QueueConsumersImpl keeps a cursor per
    # priority level (the profile's cursor_per_priority)
    "consumer_priority",
    # EXPIRY-8 a send's duplicate id: the application property _AMQ_DUPL_ID (2.19.1+, Features)
    "duplicate_id",
})
#: address-full policies offered
POLICIES = ("PAGE", "DROP", "FAIL", "BLOCK")


@attrs.frozen
class Features:
    """What the adapter can drive on one release (one code path; these switches pick the mechanism).

    ``json_settings``: address settings are set live with ``addAddressSettings(match, json)``
    (2.32.0+, ARTEMIS-3932), which carries every setting; before, with the positional operation of
    58 arguments (POSITIONAL_SETTINGS), which has no maxSizeMessages, maxReadPageBytes,
    maxReadPageMessages, prefetchPage*, pageLimit* or pageFullMessagePolicy.
    ``deliver_scheduled``: QueueControl#deliverScheduledMessage (2.25.0+, ARTEMIS-3872), how the
    adapter fires a scheduled message at its logical due time, and SCHED-16's operation.
    ``single_active``: exclusive queues whose closing consumer's deliveries return before the next
    exclusive one is chosen (2.32.0+).
    ``duplicate_id``: an expiry copy is never rejected as a duplicate (2.19.1+, ARTEMIS-3529).
    ``move_listed``: a move by id reaches scheduled and paged messages (2.53.0+, ARTEMIS-5376); without
    it the adapter is held to the model's pending-only move (DELIVERY-48, adapters.contract)."""

    json_settings: bool
    deliver_scheduled: bool
    single_active: bool
    duplicate_id: bool = True
    move_listed: bool = True

    @classmethod
    def of(cls, version: str) -> Features:
        return cls(json_settings=at_least(version, JSON_SETTINGS_SINCE),
                   deliver_scheduled=at_least(version, DELIVER_SCHEDULED_SINCE),
                   single_active=at_least(version, SINGLE_ACTIVE_SINCE),
                   duplicate_id=at_least(version, DUPLICATE_ID_SINCE),
                   move_listed=at_least(version, MOVE_LISTED_SINCE))

    def missing(self) -> dict[str, str]:
        """The capabilities this release cannot have, each with why."""
        why: dict[str, str] = {}
        if not self.json_settings:
            why["paging"] = (
                "the PAGE policy before 2.32 (the read budget maxReadPageBytes the model's depage "
                "follows, PAGING-10, cannot be set live: the positional addAddressSettings has none; "
                "before 2.24 the broker had no read budget, ARTEMIS-3850)")
            why["page_limits"] = ("page limits before 2.32 (pageLimitBytes, pageLimitMessages and "
                                  "pageFullMessagePolicy, ARTEMIS-3178 in 2.28, cannot be set live: the "
                                  "positional addAddressSettings has none)")
        if not self.deliver_scheduled:
            why["scheduling"] = ("scheduling before 2.25 (no QueueControl#deliverScheduledMessage, "
                                 "ARTEMIS-3872: the adapter cannot fire a message at its logical due time)")
            why["deliver_scheduled"] = ("deliver_scheduled before 2.25 (QueueControl#deliverScheduledMessage "
                                        "came with ARTEMIS-3872, commit 63966dcc56)")
        if not self.single_active:
            why["single_active_consumer"] = why["independent_single_active"] = (
                "exclusive queues before 2.32 (a closing consumer's exclusive turn was released before, "
                "or racing with, the return of what it held, ARTEMIS-4410 and ARTEMIS-4480: the next "
                "consumer could be served from the queue first)")
        if not self.duplicate_id:
            why["duplicate_id"] = ("duplicate ids before 2.19.1 (the expiry scanner routed an expiry copy "
                                   "with rejectDuplicates true, so a copy whose id the expiry address had "
                                   "cached rolled back the scan: ARTEMIS-3529, not modelled)")
        if not self.move_listed:
            why["move_listed"] = ("a move of a scheduled or paged message before 2.53 "
                                  "(QueueImpl#moveReference walked the pending list only; ARTEMIS-5376 "
                                  "made it reach the scheduled and paged messages): a move answers false "
                                  "for them, as the model with move_listed off does")
        return why


