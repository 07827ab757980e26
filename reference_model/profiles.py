"""Profiles: each fixes every model option to one implementation's documented semantics.

A profile is data (a :class:`~.options.ModelOptions` value), not a subclass. Sources:
artemis-semantics.md (artemis, hornetq) and broker-semantics.md (the others).
"""

from __future__ import annotations

from .errors import ModelMisuse
from .options import (
    ARTEMIS_ONLY,
    CONSUMER_STATE_FEATURE,
    EXPIRY_FEATURES,
    FEATURES,
    RESTART_FEATURE,
    ModelOptions,
    Overflow,
)

#: RING-28: the x-overflow values of a RabbitMQ 3.10 queue and what each does. A classic queue has
#: all three (RING-3, RING-22, RING-24); a quorum queue accepts reject-publish-dlx at declaration
#: but falls back to drop-head (rabbit_quorum_queue:overflow/3), RING-28.
_CLASSIC_OVERFLOW: tuple[tuple[str, Overflow], ...] = (
    ("drop-head", "drop_head"), ("reject-publish", "reject_new"), ("reject-publish-dlx", "reject_new_dlx"))
_QUORUM_OVERFLOW: tuple[tuple[str, Overflow], ...] = (
    ("drop-head", "drop_head"), ("reject-publish", "reject_new"), ("reject-publish-dlx", "drop_head"))
#: RING-18 / RING-24: a JetStream stream's discard policy (old evicts, new refuses).
_JETSTREAM_OVERFLOW: tuple[tuple[str, Overflow], ...] = (
    ("discard-old", "drop_head"), ("discard-new", "reject_new"))


def _without(*names: str, artemis_only: frozenset[str] = ARTEMIS_ONLY) -> frozenset[str]:
    """FEATURES minus `names` and minus the Artemis-only features (PAGING-13, RING-15, RING-16,
    DELIVERY-11, DELIVERY-12): a non-Artemis profile lacks those unless `artemis_only` keeps some."""
    unknown = set(names) - FEATURES
    if unknown:
        raise ModelMisuse(f"unknown features {sorted(unknown)}")
    return FEATURES - frozenset(names) - artemis_only


#: EXPIRY-1/2: a queue TTL and a message's own TTL, without Artemis's expiry address.
_TTL = frozenset({"message_ttl", "per_message_ttl"})

#: The seeds' semantics: ActiveMQ Artemis 2.44 (artemis-semantics.md C, R, P, D, S rules); message
#: expiry (EXPIRY-1..7) with expiry-delay, expiry-address and the expiry scanner (the defaults).
ARTEMIS = ModelOptions(features=FEATURES | EXPIRY_FEATURES
                       | {"delete", RESTART_FEATURE, "single_active_consumer", "consumer_priority",
                          # SCHED-16: QueueControl#deliverScheduledMessage(id) (ARTEMIS-3872, 2.25.0)
                          "deliver_scheduled",
                          # DELIVERY-48: QueueControl#moveMessage(id, otherQueueName)
                          "move",
                          # EXPIRY-8: _AMQ_DUPL_ID; an expiry copy is never rejected (ARTEMIS-3529)
                          "duplicate_id",
                          # DELIVERY-49: message groups (QueueImpl#groups)
                          "message_groups"},
                       # DELIVERY-24: a new consumer restarts the rotation (QueueConsumersImpl#add)
                       cursor_restarts_on_add=True,
                       # DELIVERY-25: a cursor per consumer priority level (PriorityCollection)
                       cursor_per_priority=True,
                       # DELIVERY-26: an exclusive queue's active consumer is the one its first
                       # dispatch serves (QueueImpl#handleMessageGroup), again after it closes
                       single_active_next="dispatch",
                       # DELIVERY-31: removeMessage(id) acks NORMAL (QueueImpl#deleteReference)
                       delete_counts="acknowledged",
                       # DELIVERY-48: moveMessage(id) reaches scheduled and paged messages (2.53.0+,
                       # ARTEMIS-5376; an older release is held to False, adapters.contract)
                       move_listed=True,
                       # PAGING-12: the browsing page cursor lists held paged messages too
                       browse_held_paged=True,
                       # RESTART-6: a restart reloads the journal (PostOfficeJournalLoader)
                       restart_consumers="reloaded",
                       # RESTART-6: a held message's count after SIGTERM is a race (4 of 6 runs)
                       restart_graceful_exact=False)

#: HornetQ 2.2: no ring queues (added in Artemis 2.10), no FAIL policy (H4), cancelled messages
#: return with addHead (D10), whole pages depage while memory allows (H1), selectors and browsers see
#: only in-memory messages (H2). Page limits (2.28), non-destructive queues, retroactive addresses (2.11)
#: are Artemis additions; HornetQ's last-value queue acked the superseded message NORMAL (not
#: REPLACED, RING-15); its core acks are cumulative (DELIVERY-11).
HORNETQ = ModelOptions(
    name="hornetq",
    return_placement="head",
    depage_rule="address_memory",
    paged_visible_to_browsers=False,
    paged_visible_to_selectors=False,
    features=_without("ring", "set_ring_size", "fail_policy",
                      artemis_only=ARTEMIS_ONLY - {"cumulative_ack"}),
)

#: HornetQ 2.4 (page cursors since 2.3): each queue depages on its own while its pending in-memory
#: bytes are below max-size-bytes, delivering messages not counted (PAGING-29, QueueImpl#needsDepage);
#: the FAIL policy exists (PAGING-22). Browsing and selectors over paged messages are not settled for
#: 2.4 (no adapter observes them): the 2.2 values are kept.
HORNETQ_24 = HORNETQ.evolve(name="hornetq-2.4", depage_rule="pending_budget",
                            features=HORNETQ.features | {"fail_policy"})

#: RabbitMQ 3.10 classic queue: x-max-length counts ready messages only, drop-head enforced after a
#: requeue, no priorities without x-max-priority, no delay, no delivery counter (redelivered flag).
#: RING-14: a requeue puts the message back by seq_id (the head), drops heads over x-max-length, and
#: only then delivers (rabbit_amqqueue_process v3.10.8 requeue_and_run L864-869, maybe_drop_head
#: L804-821; rabbit_variable_queue requeue L823-844), so a requeued message over the bound is dropped.
RABBITMQ_CLASSIC = ModelOptions(
    consumer_rotation="active_queue",  # DELIVERY-24: rabbit_queue_consumers (quorum: the service queue)
    name="rabbitmq-classic",
    priority_levels=1,
    dispatch_before_bound=True,
    requeue_trims_first=True,
    return_over_bound="drop_head",
    nack_bypasses_ring=False,
    nack_keeps_delivery_count=False,
    delay_on_rollback=False,
    delay_on_nack=False,
    features=_without("scheduling", "paging", "redelivery_delay", "window_bytes", "delivery_count",
                      "transactions", "selectors", "fail_policy", "block_policy", "drop_policy",
                      "set_ring_size") | {"max_length_bytes", "nack_reject", "nack_multiple", "purge",
                                          "consumer_priority", "single_active_consumer"} | _TTL,
    # EXPIRY-3..5: the lower TTL wins, only the head expires, dead-lettered with reason expired
    ttl_combination="min",
    expiry_scope="head",
    expired_to="dead_letter",
    # DELIVERY-26: rabbit_queue_consumers:get_consumer takes the highest x-priority, then the earliest
    single_active_next="priority",
    # RING-26: what x-max-length drops is dead-lettered (reason maxlen); RING-28: x-overflow
    dead_letter_dropped=True,
    overflow_policies=_CLASSIC_OVERFLOW,
    # DELIVERY-22: an unknown delivery tag is a channel error that returns the channel's messages
    invalid_ack="closes_channel",
    # DELIVERY-23: basic.deliver redelivered once the message was ever delivered
    redelivered_flag="ever",
)

#: RabbitMQ 3.10 quorum queue: x-delivery-count +1 on every return, nack without a delivery limit
#: goes to the tail and with one to the returns queue served first (rabbit_fifo L1756-1779); a
#: channel close returns everything to that FIFO returns queue in delivery order;
#: x-delivery-limit allows limit + 1 deliveries (none unless declared). reject-publish overshoots by
#: one and accepts again at or below 80 % of the limit (RING-23).
RABBITMQ_QUORUM = RABBITMQ_CLASSIC.evolve(
    consumer_rotation="service_queue",  # DELIVERY-24: rabbit_fifo drops a consumer without credit at once
    pull_return_order="tag_text",  # REDELIVERY-31: basic.get returns on a close, in tag-text order
    name="rabbitmq-quorum",
    requeue_trims_first=False,
    cancel_undoes_delivery_count=False,
    nack_keeps_delivery_count=True,
    return_placement="returns",
    return_order="oldest_first",
    nack_placement="returns_if_limited",
    dla_threshold="gt",
    features=_without("scheduling", "paging", "redelivery_delay", "window_bytes", "transactions",
                      "selectors", "fail_policy", "block_policy", "drop_policy", "set_ring_size")
    | {"max_length_bytes", "nack_reject", "nack_multiple", "purge", "consumer_priority",
       "single_active_consumer"} | _TTL,
    # DELIVERY-26: rabbit_fifo activates the earliest registered waiting consumer, whatever x-priority
    single_active_next="registration",
    # DELIVERY-26: the cancel activates and serves the next consumer before the channel's down returns
    # what the closed one held (rabbit_fifo cancel_consumer consumer_cancel, then handle_down)
    single_active_handover_first=True,
    # RING-23: reject-publish is evaluated after the enqueue, accepting again at 80 % of the limit
    reject_check="after",
    unblock_ratio=0.8,
    overflow_policies=_QUORUM_OVERFLOW,
    # REDELIVERY-26: no x-delivery-limit unless declared (3.10); 0 dead-letters at the first return
    default_delivery_limit=-1,
    zero_delivery_limit="immediate",
)

#: NATS JetStream 2.9: max_msgs counts every stored message and discard=old deletes the oldest even
#: when unacked; unacked messages come back after the consumer's ack_wait_ms (REDELIVERY-27; the
#: queue's redelivery delay stands for it on a close), before new ones; -NAK may carry a delay
#: (REDELIVERY-28); acks name the stream sequence (DELIVERY-22); a purge removes everything stored;
#: returned and -NAKed messages join a FIFO redelivery queue ahead of new ones, in the order they were
#: given back (REDELIVERY-20, checked live on 2.9.10 and 2.15.1); num_delivered is never undone.
JETSTREAM = ModelOptions(
    name="jetstream",
    priority_levels=1,
    bound_counts="stored",
    evict_unacked=True,
    ring_update_trims=True,  # RING-30: a stream update with a lower max_msgs trims (discard old)
    # RING-30: a close, -NAK or expired ack wait re-checks no stream limit (the message never left
    # the stream; consumer.go processNak -> addToRedeliverQueue): a stream left over a lowered
    # max_msgs under discard new stays over it
    return_over_bound="keep",
    return_placement="returns",
    nack_placement="returns",
    cancel_undoes_delivery_count=False,
    delay_on_close=True,
    delay_on_nack=False,
    features=_without("scheduling", "paging", "transactions", "window_bytes", "selectors", "dead_letter",
                      "fail_policy", "block_policy", "drop_policy")
    | {"nack_reject", "ack_wait", "nack_delay", "backoff", "purge", "delete", RESTART_FEATURE,
       CONSUMER_STATE_FEATURE, "max_length_bytes",  # RING-27: max_bytes beside max_msgs
       "consumer_pause",  # DELIVERY-34
       "max_per_subject",  # RING-31..33
       "retention",  # RETENTION-1..11
       "pull_batch",  # DELIVERY-38..40
       "priority_overflow",  # DELIVERY-41..44
       "priority_pinned"}  # DELIVERY-45..47
    | _TTL,
    # DELIVERY-32: STREAM.MSG.DELETE removes a delivered, unacknowledged message too
    delete_scope="stored",
    overflow_policies=_JETSTREAM_OVERFLOW,
    # EXPIRY-3..5: max_age and Nats-TTL both apply; the stream deletes an expired message whatever
    # its consumers hold; nothing receives it
    ttl_combination="min",
    expiry_scope="stored",
    expired_to="drop",
    # REDELIVERY-26: max_deliver -1 (unlimited) is the consumer default; REDELIVERY-21: a message at
    # max_deliver stays stored and is never delivered again
    default_delivery_limit=-1,
    delivery_limit_action="keep",
    # DELIVERY-22: +ACK/-NAK/+TERM name the stream sequence; a stale or repeated one is answered
    invalid_ack="by_sequence",
    # RING-29: a stream purge removes delivered, unacknowledged messages too
    purge_removes="stored",
    # RESTART-2..4: file-store durable consumers survive a restart; their redelivery queue does not;
    # consumer state is flushed about every 100 ms (filestore.go consumerFileStore.flushLoop)
    restart_consumers="kept",
    restart_returns="parked",
    restart_flush_ms=100,
)

#: Redis 7.0 streams: MAXLEN trims the oldest entries whatever their PEL state; nothing returns on its
#: own (entries stay in the PEL until claimed).
REDIS_STREAMS = ModelOptions(
    name="redis-streams",
    priority_levels=1,
    bound_counts="stored",
    evict_unacked=True,
    close_returns=False,
    cancel_undoes_delivery_count=False,
    features=_without("scheduling", "paging", "transactions", "redelivery_delay", "dead_letter", "nack",
                      "window_bytes", "selectors", "fail_policy", "block_policy", "drop_policy",
                      "set_ring_size") | {"delete"},
    # DELIVERY-32: XDEL removes an entry in a PEL too (the PEL entry stays until XACK)
    delete_scope="stored",
)

#: ActiveMQ Classic 5.17 over STOMP: no queue count limit, no priorities by default, returned
#: messages go to a redelivery list ahead of others, STOMP NACK is a poison ack (DLQ), scheduled
#: messages are re-sent to the destination (tail), STOMP shows only the redelivered flag. A close
#: increments the redelivery counter of delivered messages (REDELIVERY-17) and never dead-letters:
#: maximumRedeliveries is an OpenWire client policy (REDELIVERY-18).
ACTIVEMQ_CLASSIC = ModelOptions(
    consumer_rotation="move_to_end",  # DELIVERY-24: Queue#doActualDispatch rotates the consumer list
    name="activemq-classic",
    priority_levels=1,
    # REDELIVERY-10: what a closed subscription held joins the tail of redeliveredWaitingDispatch, in
    # dispatch order, which is served before the messages never dispatched (Queue#removeSubscription
    # -> QueueDispatchPendingList#addForRedelivery: addMessageLast unless strictOrderDispatch)
    return_placement="returns",
    return_order="oldest_first",
    # RESTART-2: after a restart the queue is paged in from KahaDB by sequence
    restart_order="stored",
    cancel_undoes_delivery_count=False,
    dead_letter_on_return=False,
    nack_action="dead_letter",
    delay_on_rollback=False,
    scheduled_placement="tail",
    close_keeps_tx=False,
    features=_without("ring", "set_ring_size", "paging", "redelivery_delay", "window_bytes",
                      "delivery_count", "selectors", "fail_policy", "block_policy", "drop_policy")
    # RESTART-1, RESTART-2: KahaDB, consumers end with their connection; DELIVERY-25: the consumer
    # list is kept sorted by priority (Queue#addToConsumerList, useConsumerPriority); DELIVERY-26:
    # exclusive consumers (activemq.exclusive) as a single active consumer queue
    | {RESTART_FEATURE, "consumer_priority", "single_active_consumer"},
    # DELIVERY-26: Queue#removeSubscription hands over to the first exclusive consumer of the highest
    # priority; Queue#addSubscription lets a higher priority one take over at once
    single_active_next="priority_takeover",
)

#: Mosquitto 2.0: max_queued_messages counts queued and in-flight together and drops the NEWEST
#: message silently (the publisher still gets PUBACK); a persistent session gets its unacked messages
#: again on reconnect, in order.
MOSQUITTO = ModelOptions(
    name="mosquitto",
    priority_levels=1,
    bound_counts="stored",
    overflow="drop_newest",
    silent_overflow=True,
    # REDELIVERY-23: a reconnecting session resends its in-flight messages in original order, ahead
    # of the queued ones, which are all newer (a pull consumer takes the oldest it may): by sequence
    return_placement="sorted",
    cancel_undoes_delivery_count=False,
    features=_without("scheduling", "paging", "transactions", "nack", "redelivery_delay", "dead_letter",
                      "selectors", "browse", "window_bytes", "delivery_count", "fail_policy",
                      "block_policy", "drop_policy", "set_ring_size"),
)

#: beanstalkd 1.12 (doc/protocol.txt, prot.c, conn.c, job.c): a tube's ready jobs are a heap ordered by
#: priority, then job id (job.c job_pri_less), so the model's priority p maps to beanstalkd priority
#: 9 - p (0 is beanstalkd's most urgent) and a job put earlier is reserved first (DELIVERY-35). A job
#: that comes back (``release``, or its connection closing: prot.c enqueue_reserved_jobs ->
#: enqueue_job heapinsert) goes back into that heap at its original place (sorted by sequence), at once,
#: or after a release's delay (whole seconds: the job is delayed meanwhile, REDELIVERY-37); its
#: ``reserves`` counter (stats-job; conn.c conn_reserve_job reserve_ct++) is never undone
#: (REDELIVERY-35). No length limits, no delivery limit or automatic dead-lettering (a job is released
#: for ever unless a client buries it), no scheduled puts in the model (put delays are whole seconds
#: on the server's clock, the scheduling machine's are milliseconds), no transactions, browsing,
#: selectors, paging or push windows. ``bury`` is a reject (REDELIVERY-24/36): the job leaves the queue
#: for the tube's buried list. ``delete <id>`` by a connection that does not hold the job reaches
#: ready, delayed and buried jobs, never a reserved one (prot.c OP_DELETE: remove_reserved_job only for
#: the reserving connection): the model's listed scope (the buried list is outside the queue,
#: DELIVERY-36).
BEANSTALKD = ModelOptions(
    name="beanstalkd",
    priority_levels=10,  # DELIVERY-3: pri 0..9 of 2**32, job_pri_less (pri, then id)
    return_placement="sorted",  # REDELIVERY-10: enqueue_reserved_jobs -> enqueue_job (ready heap)
    nack_placement="sorted",  # release <id> <pri> 0 -> enqueue_job, same heap order
    cancel_undoes_delivery_count=False,  # REDELIVERY-2: reserve_ct is never decremented
    nack_keeps_delivery_count=True,
    delay_on_nack=False,
    delay_on_rollback=False,
    # REDELIVERY-37: release <id> <pri> <delay> makes the job delayed (prot.c OP_RELEASE -> enqueue_job
    # with a delay: tube->delay heap, state Delayed); when due it joins the ready heap (pri, id)
    nack_delay_wait="scheduled",
    scheduled_placement="sorted",
    default_delivery_limit=-1,  # REDELIVERY-26: beanstalkd never dead-letters by itself
    features=_without("ring", "set_ring_size", "scheduling", "paging", "redelivery_delay", "dead_letter",
                      "transactions", "selectors", "browse", "window_bytes", "fail_policy",
                      "block_policy", "drop_policy")
    # REDELIVERY-24/36: bury; DELIVERY-31..33/36: delete <id>; REDELIVERY-37: release with a delay
    | {"nack_reject", "delete", "nack_delay"},
    delete_scope="listed",  # DELIVERY-31: ready and delayed jobs, never a reserved one
)

#: Apache Kafka 4.4 share groups (KIP-932; SharePartition.java at 4.4.0): a queue is a share group on
#: a one-partition topic, a consumer a member that pulls (ShareFetch acquires the lowest available
#: offsets). A record's delivery count goes up at each acquisition and is never undone (REDELIVERY-38):
#: RELEASE, a lock that runs out and a member that leaves all make it available again at its offset
#: (REDELIVERY-39), at once (no redelivery delay); REJECT archives it (REDELIVERY-24). A record released,
#: timed out or given back at the group's delivery count limit (share.delivery.count.limit, default 5)
#: is archived (REDELIVERY-40): the model's dead letter without an address (no DLQ before KIP-1191).
#: The acquisition lock (share.record.lock.duration.ms) is the consumer's ack wait, one per group
#: (REDELIVERY-41). No priorities, bounds, scheduling, transactions, selectors, browsing or counters.
#: RocketMQ's broker fast failure (seed 002): the seeds' admission semantics, the only area the
#: `rocketmq` adapter drives (ADMISSION-*; its rules name this profile)
ROCKETMQ = ARTEMIS.evolve(
    name="rocketmq",
    features=frozenset({"admission"}),
    # REDELIVERY-42: what a pop consumer gives back is revived into the group's retry topic, a FIFO
    # of returns that a receive reads before the topic (PopReviveService#reviveRetry)
    return_placement="returns",
    return_order="oldest_first",
)

KAFKA_SHARE = ModelOptions(
    name="kafka-share",
    priority_levels=1,
    cancel_undoes_delivery_count=False,
    nack_keeps_delivery_count=True,
    delay_on_nack=False,
    delay_on_rollback=False,
    default_delivery_limit=5,
    min_delivery_limit=2,
    features=_without("ring", "set_ring_size", "scheduling", "paging", "redelivery_delay", "transactions",
                      "selectors", "browse", "window_bytes", "fail_policy", "block_policy", "drop_policy")
    | {"nack_reject", "ack_wait"},
)

PROFILES: dict[str, ModelOptions] = {
    p.name: p
    for p in (ARTEMIS, HORNETQ, HORNETQ_24, RABBITMQ_CLASSIC, RABBITMQ_QUORUM, JETSTREAM, REDIS_STREAMS,
              ACTIVEMQ_CLASSIC, MOSQUITTO, BEANSTALKD, KAFKA_SHARE, ROCKETMQ)
}


def profile(name: str) -> ModelOptions:
    """The options of profile `name`; ModelMisuse naming the known profiles otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ModelMisuse(f"unknown profile {name!r} (known: {', '.join(PROFILES)})") from None
