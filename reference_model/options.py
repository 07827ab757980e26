"""Named model options: every point where the sources disagree is one field here.

A *profile* (see :mod:`.profiles`) is a frozen :class:`ModelOptions` value that fixes all of them.
"""

from __future__ import annotations

from typing import Literal

import attrs

BoundCounts = Literal["pending", "stored"]
Overflow = Literal["drop_head", "reject_new", "drop_newest", "reject_new_dlx"]
ReturnPlacement = Literal["sorted", "head", "tail", "returns", "returns_if_limited"]
ReturnOverBound = Literal["drop_returning", "drop_head", "keep"]
DepageRule = Literal["read_budget", "address_memory", "pending_budget"]
InvalidAck = Literal["refused", "closes_channel", "by_sequence"]
Rotation = Literal["cursor", "move_to_end", "active_queue", "service_queue"]

FEATURES = frozenset(
    {"ring", "priorities", "scheduling", "paging", "redelivery_delay", "dead_letter", "transactions",
     "nack", "selectors", "browse", "window_bytes", "delivery_count", "fail_policy", "block_policy",
     "drop_policy", "set_ring_size",
     # Artemis-only settings: page limits (PAGING-13..16), last-value queues (RING-15),
     # non-destructive queues (DELIVERY-12, RING-12), core cumulative ack (DELIVERY-11),
     # retroactive addresses (RING-16).
     "page_limits", "last_value", "non_destructive", "cumulative_ack", "retroactive"}
)
#: features only ActiveMQ Artemis has among the profiles (HornetQ has cumulative core acks too).
ARTEMIS_ONLY = frozenset({"page_limits", "last_value", "non_destructive", "cumulative_ack", "retroactive"})
#: features of the brokers' own vocabulary that no profile has unless it names them:
#: queue byte limits (RING-27), nack requeue=false (REDELIVERY-24), nack multiple (REDELIVERY-25),
#: the profile's default delivery limit may be "none" (REDELIVERY-26).
BROKER_FEATURES = frozenset({"max_length_bytes", "nack_reject", "nack_multiple",
                             # REDELIVERY-27 ack wait and in_progress, REDELIVERY-28 nack delay_ms
                             "ack_wait", "nack_delay",
                             # REDELIVERY-32..35 consumer BackOff (JetStream)
                             "backoff",
                             # RING-29 purge; DELIVERY-31..33 delete of one message by id; SCHED-16
                             # deliver one scheduled message now (Artemis management, 2.25.0+);
                             # DELIVERY-48 move of one message by id to another queue (management)
                             "purge", "delete", "deliver_scheduled", "move",
                             # DELIVERY-49 message groups (Artemis JMSXGroupID, AMQP group-id)
                             "message_groups",
                             # EXPIRY-1 queue TTL, EXPIRY-2 per-message TTL, EXPIRY-6 expiry address
                             "message_ttl", "per_message_ttl", "expiry_address",
                             # EXPIRY-8 a message's duplicate id (Artemis _AMQ_DUPL_ID)
                             "duplicate_id",
                             # DELIVERY-25 consumer priority, DELIVERY-26 single active consumer
                             "consumer_priority", "single_active_consumer",
                             # DELIVERY-34 consumer pause (JetStream pause_until)
                             "consumer_pause",
                             # RING-31..33 per-subject limits (JetStream max_msgs_per_subject)
                             "max_per_subject",
                             # RETENTION-1..11 stream retention with several consumers (JetStream)
                             "retention",
                             # DELIVERY-38..40 a pull request for a batch within max_bytes (JetStream)
                             "pull_batch",
                             # DELIVERY-41..44 the overflow priority policy of pull requests, DELIVERY-45..47
                             # the pinned_client one (JetStream priority groups)
                             "priority_overflow", "priority_pinned"})
#: EXPIRY-1..7: message expiry as Artemis has it (expiry-delay, message expiration, expiry-address)
EXPIRY_FEATURES = frozenset({"message_ttl", "per_message_ttl", "expiry_address"})
#: a restart of the implementation as a step (RESTART-1..4): only profiles whose sources say
#: what survives it have it (JetStream file store, ActiveMQ Classic KahaDB).
RESTART_FEATURE = "restart"
#: DELIVERY-27..29, the durable consumer's counters and sequence pairs (JetStream's
#: ConsumerInfo) as an observation; other brokers show only the queue counters (DELIVERY-1)
CONSUMER_STATE_FEATURE = "consumer_state"
BROKER_FEATURES = BROKER_FEATURES | {RESTART_FEATURE, CONSUMER_STATE_FEATURE}


@attrs.frozen
class ModelOptions:
    """Every semantic choice the queue model makes where brokers (or sources) differ.

    Defaults are the seeds' semantics (ActiveMQ Artemis). Rule ids name the spec rule each option
    chooses between.
    """

    name: str = "artemis"
    #: DELIVERY-3: number of priority levels; 1 means priorities are ignored (plain FIFO).
    priority_levels: int = 10
    #: RING-4: what counts toward a ring/max-length bound: pending only, or everything stored
    #: (pending + delivering), as JetStream `max_msgs` and Mosquitto's queue limit do.
    bound_counts: BoundCounts = "pending"
    #: RING-3: on a tail add over the bound: evict the head (ring, drop-head, discard old), reject
    #: the new message (reject-publish, discard new) or drop it silently (Mosquitto).
    overflow: Overflow = "drop_head"
    #: RING-3 (RabbitMQ deliver_or_enqueue, rabbit_fifo): a new message is offered to a consumer with
    #: room before the length limit is checked, so it never counts as ready and a ring of 0 still
    #: delivers to a waiting consumer.
    dispatch_before_bound: bool = False
    #: DELIVERY-24: which consumer of a queue is offered the next message. "cursor" (Artemis): a
    #: position just past the consumer served last, back to the first consumer when one closes;
    #: "move_to_end" (ActiveMQ Classic Queue#doActualDispatch): the consumer served goes to the end of
    #: the list, a full one keeps its place; "active_queue" (RabbitMQ classic rabbit_queue_consumers):
    #: the consumer served goes to the end, a consumer found without room
    #: leaves the rotation and comes back at the end once it has room again; "service_queue"
    #: (RabbitMQ quorum, rabbit_fifo service queue): the same, but a consumer leaves the rotation as
    #: soon as a dispatch uses up its room, not at the next dispatch that finds it full.
    consumer_rotation: Rotation = "cursor"
    #: DELIVERY-24 under "cursor": does a new consumer send the rotation back to the first consumer,
    #: as a closing one does? True (Artemis 2.40): QueueConsumersImpl#add gives the UpdatableIterator a
    #: new ArrayResettableIterator (cursor 0), which the dispatch loop takes at its next reset()
    #: (QueueImpl#deliver calls consumers.reset() first); observed on Artemis 2.40.0. False
    #: keeps the cursor where it was (the model before that observation; HornetQ unverified).
    cursor_restarts_on_add: bool = False
    #: DELIVERY-25 under "cursor": does each consumer priority level keep a cursor of its own? True
    #: (Artemis): QueueConsumersImpl keeps its consumers in a PriorityCollection, one
    #: ArrayResettableIterator per level walked highest first (MultiResettableIterator), each level's
    #: cursor just past the consumer last served at that level, so serving a consumer of another level
    #: leaves it where it was. False: one cursor over all consumers, just past the consumer served
    #: last whatever its level, the levels taken in turn from it.
    cursor_per_priority: bool = False
    #: DELIVERY-26: which waiting consumer of a single_active_consumer queue becomes active when the
    #: active one goes: "registration" (the earliest registered: rabbit_fifo's waiting list) or
    #: "priority" (the highest priority, the earliest registered among equals: RabbitMQ classic);
    #: "priority_takeover" (ActiveMQ Classic exclusive consumers: as "priority", and a new consumer of
    #: higher priority, or 127, takes over at once); "dispatch" (Artemis exclusive queues: no consumer
    #: is active until a message is dispatched, then the first consumer with room in the consumer list,
    #: the highest priority and the earliest registered among equals, takes it and stays active until it
    #: goes: QueueImpl#deliver, #handleMessageGroup, QueueConsumersImpl over a PriorityCollection).
    single_active_next: Literal["registration", "priority", "priority_takeover", "dispatch"] = "registration"
    #: DELIVERY-26: when the active consumer of a single_active_consumer queue closes, is the next one
    #: activated and served *before* what the closed one held returns? False (Artemis, RabbitMQ
    #: classic: the returns come first, at the head); True (RabbitMQ quorum: a client's close is
    #: basic.cancel, then channel.close; rabbit_fifo activates the next consumer at the cancel and
    #: serves it from the queue, and the held messages return only at the channel's `down`).
    single_active_handover_first: bool = False
    #: RING-5: may an eviction remove a delivered but unacknowledged message (JetStream discard=old).
    evict_unacked: bool = False
    #: RING-30: does a lower bound set on a live queue (set_ring_size) trim at once? False: RING-2
    #: (Artemis: later adds shrink it); True: JetStream, a stream update with a lower max_msgs removes
    #: the oldest stored messages until the bound holds, under discard old only.
    ring_update_trims: bool = False
    #: reject_new only: reject when the add WOULD exceed the bound ("before", exact) or only once the
    #: count is already over it ("after": RabbitMQ quorum overshoots by one).
    reject_check: Literal["before", "after"] = "before"
    #: reject_new only: once rejecting, accept again when count <= ratio x bound (quorum: 0.8).
    unblock_ratio: float = 1.0
    #: a silently dropped send is reported to the producer as accepted (Mosquitto PUBACK).
    silent_overflow: bool = False
    #: REDELIVERY-10 / RING-8: where cancelled messages return: by original sequence (Artemis >= 2.18,
    #: RabbitMQ classic), at the head in cancel order (HornetQ addHead), at the tail, or to a FIFO
    #: redelivery queue served before new messages (JetStream, REDELIVERY-20); returns_if_limited: the
    #: returns queue when the queue has a delivery limit, else the tail (RabbitMQ quorum, REDELIVERY-14).
    return_placement: ReturnPlacement = "sorted"
    #: REDELIVERY-31: the order in which a close returns what a pull consumer received (basic.get):
    #: "delivery" (its own delivery order, as for any consumer), or "tag_text" (RabbitMQ quorum
    #: v3.10.8: each basic.get is a one-shot rabbit_fifo consumer tagged with its delivery tag as
    #: decimal text, rabbit_quorum_queue:quorum_ctag/1, and handle_down cancels a channel's consumers
    #: in maps:keys order: "1" < "10" < "11" < ... < "2"; exact for up to 32 held gets, see
    #: redelivery.PULL_TAG_ORDER_LIMIT).
    pull_return_order: Literal["delivery", "tag_text"] = "delivery"
    #: where a nacked (individually cancelled) message returns; quorum without a delivery limit: tail.
    #: RING-8: the order in which a close or rollback gives a consumer's messages back: newest first
    #: (Artemis RefsOperation addFirst) or in delivery order (RabbitMQ quorum returns queue).
    return_order: Literal["newest_first", "oldest_first"] = "newest_first"
    nack_placement: ReturnPlacement = "sorted"
    #: RING-7 / RING-14 / RING-30: what a message given back by a consumer (close, rollback, nack, an
    #: ack wait or NAK delay that runs out) does to the bound.
    #: "drop_returning" (Artemis 2.44.0 QueueImpl#addHead / #addSorted call enforceRing(ref, scheduling,
    #: true) before re-inserting: pending + 1 > ring-size acks the returning ref itself REPLACED);
    #: "drop_head" (RabbitMQ: re-insert, then drop heads down to the bound, RING-14);
    #: "keep" (JetStream: the message never left the stream, so its return re-checks no limit and
    #: removes nothing. nats-server v2.14.5 server/consumer.go processNak only queues the sequence on
    #: the consumer's redelivery queue (addToRedeliverQueue), checkPending does the same for an
    #: expired ack wait; the stream's limits are enforced only on a store and a config update:
    #: memstore.go / filestore.go enforceMsgLimit, called from storeRawMsg and UpdateConfig.)
    return_over_bound: ReturnOverBound = "drop_returning"
    #: RING-14 (with dispatch_before_bound): a requeue trims the ready messages to the bound before a
    #: consumer with room is offered one. RabbitMQ classic requeue_and_run (rabbit_amqqueue_process
    #: v3.10.8 L864-869) runs BQ:requeue, maybe_drop_head, then run_message_queue, and the requeued
    #: message is back at its original (head) position, so it is the one dropped. False: a consumer with
    #: room takes the returned message first (rabbit_fifo checkout before evaluate_limit, L1788-1806).
    requeue_trims_first: bool = False
    #: RING-9: individual cancel (nack) bypasses the ring check (Artemis); False: it is checked.
    nack_bypasses_ring: bool = True
    #: REDELIVERY-2: a cancel of an unacked message undoes its delivery-count increment.
    cancel_undoes_delivery_count: bool = True
    #: REDELIVERY-2 (AMQP Modified deliveryFailed=true): a nack keeps the increment.
    nack_keeps_delivery_count: bool = True
    #: REDELIVERY-8: the redelivery delay applies on session rollback and on nack ...
    delay_on_rollback: bool = True
    delay_on_nack: bool = True
    #: ... and not on a plain consumer close.
    delay_on_close: bool = False
    #: REDELIVERY-5: dead-letter when delivery_count >= max (Artemis) or > max (RabbitMQ quorum
    #: x-delivery-limit: at most limit + 1 deliveries).
    dla_threshold: Literal["ge", "gt"] = "ge"
    #: REDELIVERY-5: the broker checks a returning message against max-delivery-attempts. ActiveMQ
    #: Classic applies maximumRedeliveries only in the OpenWire client (REDELIVERY-18), so a STOMP
    #: consumer's close never dead-letters.
    dead_letter_on_return: bool = True
    #: REDELIVERY-21 / REDELIVERY-26: what a message that has reached the queue's delivery limit
    #: becomes: dead-lettered (or dropped) as REDELIVERY-5 says ("dead_letter"), or kept stored and
    #: never delivered again ("keep": JetStream max_deliver; the work-queue stream keeps it). Under
    #: "keep" a returned message at the limit waits in the redelivery queue, still pending
    #: acknowledgement, until the next dispatch takes it off (consumer.go getNextMsg: dc > maxdc),
    #: while one whose ack wait or NAK delay runs out is kept at once (checkPending ->
    #: hasMaxDeliveries); a kept ("exhausted") message counts as delivering, stays in JetStream's
    #: num_redelivered (o.rdc, except with a limit of 1, nats-server >= 2.11.4) and leaves only by
    #: an ack or +TERM by sequence, a purge, an eviction or its expiry.
    delivery_limit_action: Literal["dead_letter", "keep"] = "dead_letter"
    #: what a nack does: return the message (Artemis individual cancel) or dead-letter it at once
    #: (ActiveMQ Classic STOMP NACK is a poison ack).
    nack_action: Literal["requeue", "dead_letter"] = "requeue"
    #: closing a consumer returns its unacked messages (False: Redis streams keep them in the PEL).
    close_returns: bool = True
    #: SCHED-4: due scheduled messages go to the queue head (Artemis) or its tail; "sorted": by their
    #: original sequence within their priority (beanstalkd: a delayed job whose time has come joins
    #: the ready heap ordered by priority, then job id, REDELIVERY-37).
    scheduled_placement: Literal["head", "tail", "sorted"] = "head"
    #: REDELIVERY-28 / REDELIVERY-37: where a nack with delay_ms waits: "delivering" (JetStream -NAK
    #: with a delay: still pending acknowledgement, counted delivering, out of the redelivery queue
    #: until the delay has passed) or "scheduled" (beanstalkd release <id> <pri> <delay>: the job is
    #: delayed, counted scheduled, held by nobody, and when due joins the queue as
    #: `scheduled_placement` says; its delivery count is kept).
    nack_delay_wait: Literal["delivering", "scheduled"] = "delivering"
    #: PAGING-10 (Artemis read budget per queue), HornetQ H1 (whole pages while address memory < max)
    #: or PAGING-29 (HornetQ 2.4: per queue while its pending in-memory bytes < max-size-bytes).
    depage_rule: DepageRule = "read_budget"
    #: DELIVERY-9, a broker bug and never a profile's choice: HornetQ 2.4.9
    #: (reference_model.bugs.hornetq_messages_added_depaged_delivering, docs/findings/hornetq-2.4-paging.md
    #: finding 4). The queue's added counter counts a message that was paged (its send answered paged)
    #: and depaged once more from its dispatch until it leaves delivering: acknowledged (at the commit
    #: of a transacted ack) or dropped, or back in the queue (a close's or rollback's return).
    #: QueueImpl#getInstantMessagesAdded = messagesAdded + page counter - pagedReferences, and
    #: #refRemoved at dispatch takes it out of pagedReferences. False: each message is counted once.
    messages_added_counts_depaged_delivering: bool = False
    #: PAGING-12 / H2: browsers and selectors see paged messages (Artemis cursors) or only memory.
    paged_visible_to_browsers: bool = True
    paged_visible_to_selectors: bool = True
    #: PAGING-12: a browser's page walk also lists a message read from a page that a consumer holds
    #: unacknowledged (Artemis: the browsing page cursor skips only acknowledged messages and those
    #: it listed from memory, PageSubscriptionImpl CursorIterator, QueueImpl#QueueBrowserIterator).
    browse_held_paged: bool = False
    #: REDELIVERY-29: a consumer close leaves what the consumer acknowledged in its session's open
    #: transaction (Artemis ServerConsumerImpl#close cancels only deliveringRefs); False: the close
    #: returns the tx-acked messages too (the session ends with the consumer).
    close_keeps_tx: bool = True
    #: features the profile has; using a missing one is :class:`~.errors.Unsupported`.
    features: frozenset[str] = FEATURES
    #: RING-26: a message the length limit drops (drop-head eviction, the trim after a requeue) is
    #: dead-lettered (reason maxlen) to the queue's dead-letter address, still counted replaced
    #: (RabbitMQ); False: it is only dropped (Artemis rings, JetStream discard=old).
    dead_letter_dropped: bool = False
    #: RING-3 / RING-22..24, RING-28: the overflow policies a queue declaration may name (`overflow:`
    #: in the broker's own words) and the model overflow each means; empty: the queue always uses
    #: `overflow` (which is also the default when the declaration names none).
    overflow_policies: tuple[tuple[str, Overflow], ...] = ()
    #: REDELIVERY-5 / REDELIVERY-26: the delivery limit of a queue declared without
    #: max_delivery_attempts: 10 (Artemis max-delivery-attempts); -1: none (RabbitMQ quorum
    #: x-delivery-limit unset, JetStream max_deliver -1).
    default_delivery_limit: int = 10
    #: REDELIVERY-40: the smallest delivery limit a queue may have: 1 (any), or 2 (a Kafka share
    #: group's share.delivery.count.limit, ShareGroupConfig group.share.min.delivery.count.limit, at
    #: least 2); the redelivery machine draws no smaller one.
    min_delivery_limit: int = 1
    #: REDELIVERY-26: what a delivery limit of 0 means: no limit (Artemis: maxDeliveries > 0 is
    #: checked) or dead-letter on the first return (rabbit_fifo: delivery_count 1 > 0).
    zero_delivery_limit: Literal["none", "immediate"] = "none"
    #: DELIVERY-22: an ack or nack of a message the consumer does not hold (never received, already
    #: settled, held by another consumer): "refused" (Artemis: the ack fails, nothing changes);
    #: "closes_channel" (RabbitMQ: PRECONDITION_FAILED 406 "unknown delivery tag" closes the
    #: consumer's channel, which returns every message it holds as a close does; the consumer goes on
    #: on a new channel); "by_sequence" (JetStream: an ack names the stream sequence, so a consumer that
    #: was ever given the message settles it wherever it now is, and nothing happens once it is gone).
    invalid_ack: InvalidAck = "refused"
    #: RING-29: what a purge removes: the ready messages (RabbitMQ queue.purge) or every stored one,
    #: delivered and unacknowledged too (JetStream stream purge).
    purge_removes: Literal["pending", "stored"] = "pending"
    #: DELIVERY-31/34: what a delete of one message by id reaches: the messages the queue lists
    #: (pending, scheduled, paged: Artemis removeMessage) or every stored one, delivered and
    #: unacknowledged too (JetStream STREAM.MSG.DELETE, Redis XDEL).
    delete_scope: Literal["listed", "stored"] = "listed"
    #: DELIVERY-31: the counter a delete by id bumps. "acknowledged" (Artemis 2.40.0: QueueControl
    #: #removeMessage(long) -> QueueImpl#deleteReference acks the pending ref with AckReason.NORMAL, L2132;
    #: a scheduled one ScheduledDeliveryHandlerImpl#removeReferenceWithID acks NORMAL too, L178; only
    #: removeMessages(filter) -> deleteMatchingReferences kills; observed by the artemis adapter) or
    #: "killed" (JetStream, Redis, beanstalkd: the model before that observation).
    delete_counts: Literal["killed", "acknowledged"] = "killed"
    #: DELIVERY-48: does a move of one message by id reach a scheduled or paged message too? True
    #: (Artemis 2.53.0+, ARTEMIS-5376: QueueImpl#moveReference is an iterQueue action, which walks the
    #: pending list, then the scheduler, then the page subscription); False (before 2.53.0: the pending
    #: list only, so a scheduled or paged message answers false). The artemis adapter of an older
    #: release lacks capability move_listed and is held to False (adapters.contract.WITHOUT_CAPABILITY).
    move_listed: bool = False
    #: DELIVERY-23: a delivery's redelivered flag: delivery count > 1 (Artemis JMSRedelivered,
    #: JetStream num_delivered > 1) or "delivered before, ever" (RabbitMQ classic: a message once
    #: delivered is redelivered on every later delivery, whatever undid its count).
    redelivered_flag: Literal["count", "ever"] = "count"

    #: EXPIRY-4: which messages whose TTL has passed are removed: "head" (RabbitMQ classic
    #: drop_expired_msgs / BQ:dropwhile, rabbit_fifo expire_msgs: only while the next message to
    #: deliver is expired, so one behind a longer-lived head waits), "ready" (Artemis: any pending
    #: message, by the expiry scanner and at delivery; never one a consumer holds) or "stored"
    #: (JetStream max_age / Nats-TTL: the stream deletes it whatever the consumers hold).
    expiry_scope: Literal["head", "ready", "stored"] = "ready"
    #: EXPIRY-3: a message with its own TTL on a queue with a TTL: the lower one (RabbitMQ
    #: calculate_msg_expiry, JetStream: max_age removes it too) or the message's own ("message_first":
    #: Artemis expiry-delay applies only to messages without an expiration).
    ttl_combination: Literal["min", "message_first"] = "message_first"
    #: EXPIRY-5/6: where an expired message goes: the queue's dead-letter address with reason
    #: expired (RabbitMQ), the queue's expiry address (Artemis), or nowhere (JetStream).
    expired_to: Literal["dead_letter", "expiry_address", "drop"] = "expiry_address"

    #: RESTART-2 / RESTART-3: what a restart of the implementation does to its consumers: "closed"
    #: (the connections end, each consumer's unacknowledged messages return as by a close and the
    #: consumers must be opened again: ActiveMQ Classic) or "kept" (JetStream durable consumers:
    #: the consumer, its pending messages and delivery counts survive and the client acks them after
    #: reconnecting). Stored messages always survive (RESTART-1). "reloaded" (RESTART-6, Artemis):
    #: the broker reads its journal again: the consumers end, each message one held comes back with
    #: the delivery count last written (at its last return: the delivery in flight is not counted),
    #: every queue lists its messages by priority in stored order with no ring or limit applied, and
    #: its statistics start over (added = the messages it holds; acknowledged, replaced, killed and
    #: expired 0).
    restart_consumers: Literal["closed", "kept", "reloaded"] = "closed"
    #: RESTART-6: whether a graceful restart's outcome is determined. False (Artemis): SIGTERM fails
    #: the connections while the journal closes, and whether the cancel of a held message (which
    #: keeps its delivery counted) reaches the journal first is a race, so the model's graceful
    #: restart is one of two outcomes and the machines restart such a profile by SIGKILL only.
    restart_graceful_exact: bool = True
    #: RESTART-3: what happens at a restart to returned messages not yet redelivered: "kept" (the
    #: redelivery order survives) or "parked" (JetStream keeps no redelivery queue on disk: each stays
    #: pending for nobody, counting toward max_ack_pending, until its ack wait runs out).
    restart_returns: Literal["kept", "parked"] = "kept"
    #: RESTART-2: the order of a queue's ready messages after a restart: "kept" (as before it) or
    #: "stored" (re-read from the store by sequence: ActiveMQ Classic's redelivery list is memory only,
    #: REDELIVERY-17).
    restart_order: Literal["kept", "stored"] = "kept"
    #: RESTART-4: after a SIGKILL, state changed within this many ms before the kill may be lost
    #: (JetStream writes consumer state at most ~10 times a second); the machines kill only after
    #: twice this long without an operation. 0: every acknowledged operation is on disk.
    restart_flush_ms: int = 0
    #: DELIVERY-3, a broker bug and never a profile's choice: the model of ARTEMIS-4985's regression
    #: (reference_model.bugs.artemis_4985, Artemis 2.37.0 and later). Consumers walk the pending list
    #: with priority iterators that an add sends back to the top only when its priority differs from
    #: the last add's or exceeds a highest level left at an emptied one, so a consumer whose iterator
    #: moved below p is handed lower-priority messages before one added at p. False: strict priority.
    stale_priority_iterators: bool = False
    #: DELIVERY-3, a broker bug and never a profile's choice: Artemis from 2.24.0
    #: (reference_model.bugs.artemis_priority_removal). A removal below the top priority level (a
    #: last-value prune's iterator) lowers the list's highest level below pending higher-priority
    #: messages, and the next add restarts every consumer's iterator there. False: strict priority.
    priority_removal_lowers_highest: bool = False
    #: DELIVERY-3, a broker bug and never a profile's choice: Artemis from 2.18.0
    #: (reference_model.bugs.artemis_ring_poll_priority). A ring eviction (PriorityLinkedListImpl#poll)
    #: leaves the last add's level and the highest level, so an add at the evicted message's level
    #: resets no iterator and a busy consumer's iterator below it hands out lower priorities first.
    #: False: strict priority.
    priority_poll_keeps_last: bool = False
    #: DELIVERY-3/DELIVERY-12, a broker bug and never a profile's choice: Artemis from 2.18.0
    #: (reference_model.bugs.artemis_non_destructive_priority_same_level). On a non-destructive queue a
    #: delivered message stays listed, so an add at the last add's level resets no consumer's
    #: iterator, and one that moved below it while busy hands out lower priorities first.
    #: False: strict priority.
    non_destructive_same_level_keeps_iterators: bool = False
    #: RESTART-3/RESTART-5, a broker bug and never a profile's choice: nats-server before 2.14.1
    #: (reference_model.bugs.nats_server_78fd547). A restart drops the redelivered count (o.rdc) of
    #: every message kept past max_deliver at or below the ack floor (consumer.go checkRedelivered),
    #: so num_redelivered no longer counts it. False: the count is kept until the message leaves.
    restart_drops_redelivered_below_floor: bool = False
    #: DELIVERY-27, a broker bug and never a profile's choice: nats-server 2.10.25 to 2.14.5
    #: (reference_model.bugs.nats_refused_pull_counts_redelivered). A redelivery put back because no
    #: pull request was given it (DELIVERY-40, 44, 46, 47), delivered once before, keeps a 0 o.rdc entry
    #: (consumer.go decDeliveryCount), so num_redelivered counts it until its ack, removal, next delivery
    #: or a restart. False: a put-back leaves the count as it was.
    put_back_keeps_zero_redelivered: bool = False
    #: DELIVERY-27, a broker bug and never a profile's choice: nats-server before 2.11.4
    #: (reference_model.bugs.nats_server_6877). A consumer with a delivery limit of 1 reports the
    #: messages kept past it in num_redelivered (len(o.rdc)) as with any other limit. False: 0 for a
    #: limit of 1 (consumer.go infoWithSnapAndReply, #6877).
    max_deliver_one_reports_redelivered: bool = False
    #: RING-27/28, a broker bug and never a profile's choice: nats-server before 2.14.0
    #: (reference_model.bugs.nats_server_7608). Discard new with a byte bound refuses a send that
    #: brings the stored bytes exactly to max_bytes (filestore.go storeRawMsg: >=). False: refused
    #: only past it.
    discard_new_refuses_at_max_bytes: bool = False
    #: RING-34, a broker bug and never a profile's choice: nats-server 2.14.0 and 2.14.1
    #: (reference_model.bugs.nats_server_3836d96). A first per-subject limit (from unset, -1) set by
    #: an update trims nothing; a send on the subject or a restart does. False: it trims at once.
    first_subject_limit_not_enforced: bool = False
    #: DELIVERY-43, a broker bug and never a profile's choice: nats-server 2.11.0 to 2.12.4
    #: (reference_model.bugs.nats_server_7795). An overflow pull request naming both min_pending and
    #: min_ack_pending is served only when both hold. False: when either does (ADR-42).
    overflow_needs_every_threshold: bool = False
    #: DELIVERY-34, a broker bug and never a profile's choice: nats-server 2.11.0 to 2.11.10 and 2.12.0
    #: to 2.12.1 (reference_model.bugs.nats_server_7457). A no_wait pull request without an expiry
    #: that finds messages the paused consumer may not deliver yet is queued, not answered, and is
    #: served when the pause ends: a receive while paused gets the message the consumer would get at
    #: once unpaused. False: it gets nothing.
    paused_pull_waits_for_resume: bool = False
    #: DELIVERY-27, a broker bug and never a profile's choice: nats-server before 2.14.1
    #: (reference_model.bugs.nats_server_8102). A message kept past max_deliver that a delete, an
    #: expiry or an eviction removes keeps its o.rdc entry (consumer.go decStreamPending), so
    #: num_redelivered counts it until a purge or a restart with it at or below the ack floor.
    #: False: it leaves the count with the stream.
    removal_keeps_redelivered: bool = False
    #: DELIVERY-16, a broker bug and never a profile's choice: rabbitmq-server#5609, RabbitMQ 3.8 to
    #: 3.10 quorum queues (reference_model.bugs.rabbitmq_server_5609). A nack with requeue that
    #: dead-letters or drops the message at its delivery limit grants the consumer credit twice
    #: (rabbit_fifo return_one completes it, +1, and return adds +1 per returned message), so from then
    #: on the consumer may hold one message more than its prefetch. False: one credit per message.
    nack_at_limit_grants_credit_twice: bool = False
    #: DELIVERY-1/REDELIVERY-6, a broker bug and never a profile's choice: Artemis 2.18 to 2.56
    #: (reference_model.bugs.artemis_cancel_drop_delivering, finding
    #: artemis-drop-at-limit-delivering-negative). An individual cancel (nack) that drops a message at
    #: max-delivery-attempts (no dead-letter address, or one without bindings) takes it off the
    #: queue's delivering count twice (QueueImpl#cancel: decDelivering after sendToDeadLetterAddress
    #: acked it KILLED). False: once.
    cancel_drop_decrements_delivering_twice: bool = False
    #: DELIVERY-10, a broker bug and never a profile's choice: Artemis 2.18 to 2.56
    #: (reference_model.bugs.artemis_non_destructive_delete). A delete by id from a non-destructive
    #: queue takes the message off the queue but counts it nowhere and keeps its bytes in the address:
    #: QueueImpl#deleteReference acks with AckReason.NORMAL, which postAcknowledge leaves at once on a
    #: non-destructive queue (no counter, no refDown, no journal delete). False: an acknowledgement.
    non_destructive_delete_uncounted: bool = False
    #: EXPIRY-1/3/4/7, a broker bug and never a profile's choice: nats-server from 2.11.10
    #: (reference_model.bugs.nats_max_age_after_a_ttl_message, finding nats-max-age-after-a-ttl-message).
    #: A queue with a message TTL (max_age) expires only at its age check; a Nats-TTL store moves a
    #: check that startAgeChk armed (ageChkTime 0) to up to 2 s later, so messages due before then stay
    #: until then. False: every message leaves at its own time.
    ttl_store_postpones_age_check: bool = False
    #: DELIVERY-1/RING-17, a broker bug and never a profile's choice: Artemis 2.18 to 2.56
    #: (reference_model.bugs.artemis_enforce_ring_in_delivery, finding
    #: artemis-non-destructive-ring-evicts-delivered). A non-destructive ring queue's eviction of a head
    #: the broker has in delivery (dispatched and not acknowledged since: a close leaves it so) takes it
    #: off the list but not off the pending count (QueueImpl#enforceRing skips refRemoved), which the
    #: ring's own bound then compares. False: the pending count is the list.
    ring_eviction_keeps_delivered_pending: bool = False
    #: DELIVERY-12/RING-6/LASTVALUE-1, a broker bug and never a profile's choice: Artemis 2.18 to 2.56
    #: (reference_model.bugs.artemis_linked_list_repeat, finding
    #: artemis-non-destructive-ring-repeats-replaced). On a non-destructive queue, a consumer offered a
    #: message without credit (repeat()) whose message then leaves the list (a ring eviction, a
    #: last-value prune) is moved on to the next listed one, which LinkedListImpl.Iterator#next's repeat
    #: branch returns without marking it as last returned: the consumer receives it twice. False: once.
    repeat_after_removal_returns_twice: bool = False
    #: DELIVERY-12/LASTVALUE-8/LASTVALUE-9, a broker bug and never a profile's choice: Artemis 2.18 to
    #: 2.56 (reference_model.bugs.artemis_scheduled_resets_iterators, finding
    #: artemis-non-destructive-scheduled-reoffers). Due scheduled messages go to the queue through
    #: QueueImpl#addHead(List, scheduling), which resets every consumer's iterator: on a non-destructive
    #: queue each consumer walks the whole list again, and is given every listed message once more,
    #: a second copy of those it holds. False: each consumer's iterator keeps its place.
    scheduled_fire_resets_iterators: bool = False
    #: LASTVALUE-5/LASTVALUE-6, a broker bug and never a profile's choice: Artemis 2.24 to 2.56
    #: (reference_model.bugs.artemis_last_value_direct, finding
    #: artemis-last-value-direct-delivery-stays-current). A keyed message that a consumer with room takes
    #: the moment it is sent to a destructive last-value queue with an empty list is delivered directly
    #: (QueueImpl#deliverDirect), never listed, so LastValueQueue#refRemoved never forgets it: it stays
    #: its value's current message (an older message of its value that a close returns is pruned as
    #: stale). False: a delivered message is not current.
    last_value_direct_stays_current: bool = False
    #: LASTVALUE-6, a broker bug and never a profile's choice: Artemis 2.24 to 2.56
    #: (reference_model.bugs.artemis_last_value_nack, finding
    #: artemis-last-value-nack-pruned-before-credit). A nack (QueueImpl#cancel, internalAddSorted) puts a
    #: message back on a destructive last-value queue untracked, not with trackLastValueIfAbsent as a
    #: close does, and the delivery pass it forces (AMQPSessionCallback#cancel -> #forceDelivery) runs
    #: before the nacker's credit returns: a nacked message that is not current (refRemoved forgot it) is
    #: pruned (REPLACED) unless a consumer with room before the nack takes it. False: a nacked message is
    #: its value's current one if the value has none, and the nacker's room counts at once.
    nack_pass_before_credit: bool = False

    def overflow_for(self, policy: str | None) -> Overflow:
        """The model overflow of a queue declared with `policy` (None: the profile's `overflow`);
        KeyError when the profile does not know the policy."""
        if policy is None:
            return self.overflow
        return dict(self.overflow_policies)[policy]

    def has(self, feature: str) -> bool:
        """True when the profile has `feature` (a name from FEATURES)."""
        return feature in self.features

    def evolve(self, **changes: object) -> ModelOptions:
        """A copy with some options changed (used for `options:` in scenarios and for mutants)."""
        return attrs.evolve(self, **changes)  # type: ignore[arg-type]
