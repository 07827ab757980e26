"""Which spec rules each check verifies: check name -> rule ids, per area (one table).

A check that fails reports these ids; a check that ran without failing passes them; ids whose
checks never ran (missing capability) are not applicable.
"""

from __future__ import annotations

import functools

_COMMON = {
    "send.result": ("DELIVERY-2",),
    "send.accepted": ("DELIVERY-2",),
    "receive.id": ("DELIVERY-3", "DELIVERY-4"),
    "receive.accepted": ("DELIVERY-4",),
    "ack.result": ("DELIVERY-8",),
    "ack.accepted": ("DELIVERY-8",),
    "close.accepted": ("REDELIVERY-8",),
    "consumer.accepted": ("DELIVERY-5",),
    "queue.accepted": ("RING-1",),
    "address.accepted": ("PAGING-1",),
    "delivery.sent_only": ("DELIVERY-6",),
    "delivery.acked_not_redelivered": ("DELIVERY-7",),
    "counters.message_count": ("DELIVERY-1",),
    "counters.pending_count": ("DELIVERY-1",),
    "counters.delivering_count": ("DELIVERY-1",),
    "counters.scheduled_count": ("SCHED-6",),
    "counters.paged_count": ("PAGING-2",),
    "counters.added": ("DELIVERY-9",),
    "counters.acknowledged": ("DELIVERY-10",),
    "counters.replaced": ("RING-3",),
    "counters.killed": ("REDELIVERY-6",),
    "counters.identity": ("DELIVERY-1",),
    "pending.order": ("DELIVERY-3",),
    "delivery_count": ("REDELIVERY-1", "REDELIVERY-2", "REDELIVERY-38"),
    "ring.unacked_never_evicted": ("RING-5",),
    # queue_machine.counters_agree: what a consumer's byte window let the broker dispatch
    "window.dispatched": ("REDELIVERY-11",),
    "browse.ids": ("PAGING-12",),
    # DELIVERY-22: an ack the consumer cannot make is answered per broker (queue_machine.ack_invalid);
    # an inert refusal changes nothing (Artemis)
    "ack.invalid": ("DELIVERY-8", "DELIVERY-22"),
    "ack.failed_no_effect": ("DELIVERY-8", "DELIVERY-22"),
    # DELIVERY-8 without the capability invalid_ack (the delivery machine, every profile): the
    # adapter may refuse the ack itself, but it answers failed and nothing changes
    "ack.refused": ("DELIVERY-8",),
    "ack.refused_no_effect": ("DELIVERY-8",),
    "nack.result": ("DELIVERY-8",),
    "nack.accepted": ("DELIVERY-8",),
    # the queue as a JetStream stream and durable consumer, after every step
    # (stream_state.py, gated by consumer_state / stream_state)
    "consumer_state.counts": ("DELIVERY-27",),
    "consumer_state.delivered": ("DELIVERY-28",),
    "consumer_state.ack_floor": ("DELIVERY-29",),
    "stream_state.stream": ("DELIVERY-30",),
    # RING-29: queue_machine.ack_batch purging instead (the number of messages removed)
    "purge.result": ("RING-29",),
    # REDELIVERY-28: queue_machine.nack_later (a delayed -NAK and the receive after it)
    "nack.delay": ("REDELIVERY-28",),
    # DELIVERY-15 (queue_machine.received, check_one_place), DELIVERY-21 (the final
    # drain, queue_machine.drain), SCHED-13 (queue_machine.send_with_delivery_time)
    "delivery.one_place": ("DELIVERY-15",),
    "pending.one_place": ("DELIVERY-15",),
    "drain.accounted": ("DELIVERY-21",),
    "send.no_schedule": ("SCHED-13", "DELIVERY-2"),
}

TABLES: dict[str, dict[str, tuple[str, ...]]] = {
    "delivery": {**_COMMON, "receive.id": ("DELIVERY-3", "DELIVERY-4", "DELIVERY-5", "DELIVERY-24"),
                 # queue_machine.receive_check: a queue with consumer priorities / a single active one
                 "receive.priority": ("DELIVERY-25", "DELIVERY-24", "DELIVERY-3", "DELIVERY-4", "DELIVERY-5"),
                 "receive.single_active": ("DELIVERY-26", "DELIVERY-3", "DELIVERY-4", "DELIVERY-5")},
    "ring": {
        **_COMMON,
        "send.result": ("RING-3",),
        "receive.id": ("RING-6", "RING-8", "RING-7"),
        "counters.replaced": ("RING-3", "RING-7", "RING-8"),
        "counters.pending_count": ("RING-4", "RING-3"),
        "counters.delivering_count": ("RING-5", "DELIVERY-1"),
        # a stored count below the model's after an add to a full ring: an unacked message was evicted
        "counters.message_count": ("RING-5", "DELIVERY-1"),
        "ring.bound": ("RING-3", "RING-4"),
        # machines/ring.py check_pending_bound: pending <= ring size unless a nack or a shrink happened
        "ring.pending_bound": ("RING-17",),
        "nack.result": ("RING-9",),
        "nack.accepted": ("RING-9",),
        "set_ring_size.accepted": ("RING-2", "RING-30"),
        "set_ring_size.counters": ("RING-2", "RING-30"),
        # machines/ring.py: a new per-subject limit on a live stream (JetStream max_msgs_per_subject)
        "set_subject_limit.accepted": ("RING-34",),
        "set_subject_limit.counters": ("RING-34",),
        "rollback.accepted": ("RING-8",),
        "commit.accepted": ("DELIVERY-8",),
        "pending.order": ("RING-8", "RING-6"),
    },
    "redelivery": {
        **_COMMON,
        "receive.id": ("REDELIVERY-8", "REDELIVERY-9", "REDELIVERY-10", "REDELIVERY-39"),
        "delivery_count": ("REDELIVERY-1", "REDELIVERY-2", "REDELIVERY-3", "REDELIVERY-38"),
        "counters.killed": ("REDELIVERY-5", "REDELIVERY-6"),
        "counters.scheduled_count": ("REDELIVERY-7", "REDELIVERY-9"),
        "counters.message_count": ("REDELIVERY-6", "DELIVERY-1"),
        "counters.pending_count": ("REDELIVERY-8", "REDELIVERY-10"),
        "nack.result": ("REDELIVERY-2",),
        "nack.accepted": ("REDELIVERY-2",),
        "rollback.accepted": ("REDELIVERY-8",),
        "commit.accepted": ("REDELIVERY-3",),
        "advance.accepted": ("REDELIVERY-7",),
        "pending.order": ("REDELIVERY-10", "REDELIVERY-9", "DELIVERY-13"),
        "ring.bound": ("RING-3",),
        # machines/redelivery.py limit_check: after redelivery rounds, the message's count and the
        # stored count (a message past the limit: dead-lettered, or kept by JetStream)
        "redelivery.limit": ("REDELIVERY-21", "REDELIVERY-26", "REDELIVERY-40"),
        # timed examples (wait_out): what an ack wait / BackOff / delayed NAK gave back
        "receive.ack_wait": ("REDELIVERY-27", "REDELIVERY-20", "REDELIVERY-41"),
        # DELIVERY-34: a receive of a timed example in or after a pause (machines/redelivery.pause)
        "receive.paused": ("DELIVERY-34", "REDELIVERY-27", "REDELIVERY-20"),
        "pause.accepted": ("DELIVERY-34",),
        "receive.backoff": ("REDELIVERY-32", "REDELIVERY-20"),
        "receive.backoff_wpi": ("REDELIVERY-32", "REDELIVERY-33", "REDELIVERY-20"),
        "receive.backoff_nak": ("REDELIVERY-32", "REDELIVERY-34", "REDELIVERY-28", "REDELIVERY-20"),
        "in_progress.result": ("REDELIVERY-27",),
    },
    "scheduling": {
        **_COMMON,
        "send.result": ("SCHED-1", "SCHED-2"),
        "receive.id": ("SCHED-3", "SCHED-4"),
        "pending.order": ("SCHED-3", "SCHED-4", "SCHED-5"),
        "counters.scheduled_count": ("SCHED-6",),
        "counters.message_count": ("SCHED-6", "DELIVERY-1"),
        "counters.pending_count": ("SCHED-4", "SCHED-2"),
        "counters.replaced": ("SCHED-8", "RING-10"),
        "advance.accepted": ("SCHED-4",),
        # machines/scheduling.py ring_due: a ring queue's counts after an advance
        "advance.ring_due": ("SCHED-14", "SCHED-8", "RING-10"),
    },
    "paging": {
        **_COMMON,
        "send.result": ("PAGING-3", "PAGING-4", "PAGING-5", "PAGING-6", "PAGING-7"),
        "receive.id": ("PAGING-10", "PAGING-7"),
        "paging.flag": ("PAGING-6", "PAGING-7", "PAGING-8", "PAGING-28", "PAGING-1"),
        # machines/paging.py: an address with two queues stays in page mode while one holds messages
        "paging.flag_shared": ("PAGING-17", "PAGING-6", "PAGING-7", "PAGING-8", "PAGING-28", "PAGING-1"),
        "counters.paged_count": ("PAGING-2", "PAGING-9", "PAGING-10"),
        "counters.pending_count": ("PAGING-10", "PAGING-11"),
        "counters.message_count": ("PAGING-2", "DELIVERY-1"),
        "browse.ids": ("PAGING-12",),
        "pending.order": ("PAGING-10",),
        # machines/paging.py: a paged send with a delivery time (SCHED-7); a ring queue's counts (RING-11)
        "send.scheduled_paged": ("SCHED-7",),
        "counters.ring_paged": ("RING-11", "RING-3"),
        # machines/paging.py: a selecting consumer's receive (a selector evaluated at dispatch on
        # depaged messages)
        "receive.selector": ("PAGING-12", "PAGING-10", "PAGING-7"),
    },
    "throttle": {
        "throttle.accepted": ("THROTTLE-1",),
        "throttle.offer": ("THROTTLE-2", "THROTTLE-3", "THROTTLE-17"),
        "offer.accepted": ("THROTTLE-2",),
        "throttle.release": ("THROTTLE-4", "THROTTLE-5", "THROTTLE-8", "THROTTLE-14", "THROTTLE-16"),
        "complete.accepted": ("THROTTLE-4",),
        "throttle.in_flight": ("THROTTLE-2", "THROTTLE-4", "THROTTLE-14", "THROTTLE-16"),
        "throttle.blocked": ("THROTTLE-1", "THROTTLE-3", "THROTTLE-5"),
        "throttle.blocks": ("THROTTLE-9",),
        "throttle.waiting": ("THROTTLE-3", "THROTTLE-8"),
        "throttle.no_queue_while_blocked": ("THROTTLE-3",),
        "throttle.release_at_low": ("THROTTLE-5",),
        "throttle.no_loss": ("THROTTLE-8",),
        "throttle.in_flight_bound": ("THROTTLE-7",),
        "throttle.count_matches_work": ("THROTTLE-2", "THROTTLE-4"),
        "throttle.waiting_only_while_blocked": ("THROTTLE-5", "THROTTLE-10"),
        # machines/throttle.py: the seed's worked example (high 2, low 1), and high 1 under ge
        "throttle.high2_low1": ("THROTTLE-6",),
        "throttle.one_at_a_time": ("THROTTLE-15",),
    },
    "admission": {
        "admission.accepted": ("ADMISSION-1",),
        "admission.submit": ("ADMISSION-8", "ADMISSION-19"),
        "submit.accepted": ("ADMISSION-8",),
        "admission.take": ("ADMISSION-9", "ADMISSION-12"),
        "take.accepted": ("ADMISSION-9",),
        "lock.accepted": ("ADMISSION-6",),
        "advance.accepted": ("ADMISSION-1",),
        "admission.answer": ("ADMISSION-2", "ADMISSION-3", "ADMISSION-5", "ADMISSION-6", "ADMISSION-15",
                             "ADMISSION-18"),
        "admission.single_answer": ("ADMISSION-7",),
        "admission.no_resurrection": ("ADMISSION-7", "ADMISSION-9", "ADMISSION-13"),
        "admission.take_head": ("ADMISSION-9", "ADMISSION-12"),
        "admission.overload_at_capacity": ("ADMISSION-8",),
        "admission.not_before_limit": ("ADMISSION-3",),
        "admission.bounded_wait": ("ADMISSION-10", "ADMISSION-4"),
        "admission.on_tick": ("ADMISSION-1",),
        "admission.remark": ("ADMISSION-2", "ADMISSION-6"),
        "admission.pcbusy_gate": ("ADMISSION-6", "ADMISSION-15", "ADMISSION-16", "ADMISSION-17"),
        "admission.disabled_silent": ("ADMISSION-11",),
        "admission.page_cache_guard": ("ADMISSION-19", "ADMISSION-20"),
    },
    "storage": {
        "store.accepted": ("STORAGE-1",),
        "storage.put": ("STORAGE-1", "STORAGE-2", "STORAGE-3", "STORAGE-5"),
        "put.accepted": ("STORAGE-1",),
        "storage.remove": ("STORAGE-1",),
        "remove.accepted": ("STORAGE-1",),
        "open_requester.accepted": ("STORAGE-7",),
        "close_requester.accepted": ("STORAGE-7",),
        "storage.truncate": ("STORAGE-7", "STORAGE-8"),
        "truncate.accepted": ("STORAGE-7",),
        "storage.exact_reuse": ("STORAGE-1", "STORAGE-10"),
        "storage.reuse_before_virgin": ("STORAGE-2",),
        "storage.most_recent_slot": ("STORAGE-2",),
        "storage.virgin_growth": ("STORAGE-3", "STORAGE-10"),
        "storage.virgin_offset": ("STORAGE-3",),
        "storage.virgin_monotone": ("STORAGE-3",),
        "storage.bytes_conserved": ("STORAGE-3",),
        "storage.max_file_iff": ("STORAGE-5", "STORAGE-11"),
        "storage.truncate_conditions": ("STORAGE-7", "STORAGE-8"),
        "storage.truncate_resets": ("STORAGE-9",),
        "storage.index_survives": ("STORAGE-4",),
        "storage.used_bytes": ("STORAGE-3",),
        "storage.live": ("STORAGE-1",),
        "storage.free_slots": ("STORAGE-2", "STORAGE-4"),
        "storage.index_entries": ("STORAGE-4",),
        "storage.blocks_used": ("STORAGE-5",),
        "storage.last_message": ("STORAGE-13",),
    },
    # the restart step (mqconform/conformance/exploring/restart.py), mixed into queue machines
    "restart": {
        "restart.accepted": ("RESTART-1", "RESTART-6"),
        "restart.counters": ("RESTART-1", "RESTART-2", "RESTART-3", "RESTART-6"),
        "restart.delivery_count": ("RESTART-1", "RESTART-3", "RESTART-6"),
        "restart.reopen": ("RESTART-2", "RESTART-6"),
        "restart.stream_state": ("RESTART-5", "RESTART-3"),
        "restart.kill.counters": ("RESTART-1", "RESTART-2", "RESTART-3", "RESTART-4", "RESTART-6"),
        "restart.kill.delivery_count": ("RESTART-1", "RESTART-3", "RESTART-4", "RESTART-6"),
        "restart.kill.stream_state": ("RESTART-5", "RESTART-3", "RESTART-4"),
    },
}


#: EXPIRY-1..7 (machines/expiry.py): after each advance the queue's and its dead-letter queue's counts
#: (expiry.counts), what a consumer receives after messages expired, and the expired counter.
TABLES["expiry"] = {
    **_COMMON,
    "receive.id": ("DELIVERY-3", "DELIVERY-4", "EXPIRY-4"),
    "expiry.counts": ("EXPIRY-1", "EXPIRY-2", "EXPIRY-3", "EXPIRY-4", "EXPIRY-5"),
    "counters.message_count": ("DELIVERY-1", "EXPIRY-7"),
    "counters.expired": ("EXPIRY-7",),
    # machines/expiry.py: dlq as the queue's expiry address
    "expiry.to_address": ("EXPIRY-6",),
    "nack.result": ("DELIVERY-8", "EXPIRY-4"),
}


#: RETENTION-1..11 (machines/retention.py): one stream address with several durable consumers; the
#: stream's stored messages under the check of the step before, each consumer's counts
TABLES["retention"] = {
    "send.result": ("DELIVERY-2",),
    "send.accepted": ("DELIVERY-2",),
    "join.result": ("RETENTION-3",),
    "join.accepted": ("RETENTION-3",),
    "join.workqueue": ("RETENTION-9",),
    "consumer.accepted": ("DELIVERY-5",),
    "receive.id": ("RETENTION-3",),
    "receive.late": ("RETENTION-6", "RETENTION-3"),
    "receive.accepted": ("RETENTION-3",),
    "ack.result": ("DELIVERY-8",),
    "ack.accepted": ("DELIVERY-8",),
    "nack.result": ("DELIVERY-8",),
    "nack.accepted": ("DELIVERY-8",),
    "close.accepted": ("RETENTION-3",),
    "leave.accepted": ("RETENTION-7", "RETENTION-2"),
    "stream.limits": ("RETENTION-1",),
    "stream.interest": ("RETENTION-5", "RETENTION-6"),
    "stream.workqueue": ("RETENTION-10",),
    "stream.workqueue_join": ("RETENTION-9", "RETENTION-10"),
    "send.no_interest": ("RETENTION-4",),
    "leave.limits": ("RETENTION-2", "RETENTION-1"),
    "leave.interest": ("RETENTION-7",),
    "term.interest": ("RETENTION-8", "RETENTION-5"),
    "consumer.counts": ("RETENTION-11",),
    # DELIVERY-38..40 (capability pull_batch): one pull request for a batch, within a byte budget
    "fetch.batch": ("DELIVERY-38",),
    "fetch.budget": ("DELIVERY-39", "DELIVERY-38"),
    "fetch.too_large": ("DELIVERY-40", "DELIVERY-39"),
    "fetch.accepted": ("DELIVERY-38",),
    # DELIVERY-41..44 (capability priority_overflow): an overflow queue's pull request thresholds
    "fetch.min_pending": ("DELIVERY-41", "DELIVERY-44"),
    "fetch.min_ack_pending": ("DELIVERY-42", "DELIVERY-44"),
    "fetch.either_threshold": ("DELIVERY-43", "DELIVERY-41", "DELIVERY-42"),
    # DELIVERY-45..47 (capability priority_pinned): the clients of a pinned_client queue
    "receive.pinned": ("DELIVERY-46", "DELIVERY-45", "DELIVERY-47"),
    "fetch.pinned": ("DELIVERY-46", "DELIVERY-45", "DELIVERY-47"),
    "unpin.accepted": ("DELIVERY-45",),
}


#: LASTVALUE-1..10 (machines/lastvalue.py): a last-value queue (non-destructive too, where drawn); the
#: pending order and counters after each step that decides which message of a value is kept
TABLES["lastvalue"] = {
    **_COMMON,
    "receive.id": ("DELIVERY-3", "DELIVERY-4", "LASTVALUE-1", "LASTVALUE-3"),
    "pending.order": ("DELIVERY-3", "LASTVALUE-1", "LASTVALUE-2", "LASTVALUE-3"),
    "counters.message_count": ("DELIVERY-1", "LASTVALUE-7"),
    "counters.replaced": ("RING-15", "LASTVALUE-4"),
    "lastvalue.supersede": ("LASTVALUE-1", "LASTVALUE-2", "LASTVALUE-4", "RING-15"),
    "lastvalue.no_key": ("LASTVALUE-3",),
    "lastvalue.delivering": ("LASTVALUE-5",),
    "lastvalue.returned": ("LASTVALUE-6", "LASTVALUE-4"),
    "lastvalue.count": ("LASTVALUE-7",),
    "lastvalue.non_destructive": ("LASTVALUE-8", "LASTVALUE-9", "LASTVALUE-1", "DELIVERY-12"),
    "lastvalue.scheduled": ("LASTVALUE-10", "LASTVALUE-1"),
}


#: DELIVERY-31..33: queue_machine.delete, drawn within `ack` by the machines with DRAWS_DELETE
#: (capability delete)
for _area in ("delivery", "ring", "redelivery"):
    TABLES[_area]["delete.result"] = ("DELIVERY-31", "DELIVERY-32", "DELIVERY-33")

#: machines/ring.py (and the redelivery machine, its subclass): the counts after a rollback, a
#: consumer close and a session close (close_consumer)
for _area in ("ring", "redelivery"):
    TABLES[_area].update({
        # REDELIVERY-4: a rollback keeps the increment of the messages acked in the transaction only
        "rollback.delivery_count": ("REDELIVERY-4", "REDELIVERY-3"),
        # REDELIVERY-29: what the consumer acked in its open transaction stays delivering at a close
        "close.tx_kept": ("REDELIVERY-29", "REDELIVERY-8"),
        # REDELIVERY-30: a session close returns the consumer's messages, then rolls the tx back
        "close_session.counters": ("REDELIVERY-30", "REDELIVERY-8"),
        # RING-13: a close returns its messages to a full ring, the oldest returned ones replaced
        "close.ring_returns": ("RING-13", "RING-7", "RING-8"),
        # machines/ring.py special_queue: the counts of a non-destructive or a last-value ring, and
        # an ack of a consumer with cumulative acks (and the counts after it)
        "counters.non_destructive": ("DELIVERY-12", "RING-12"),
        "counters.last_value": ("RING-15",),
        "ack.cumulative": ("DELIVERY-11", "DELIVERY-8"),
        # machines/ring.py setup: a retroactive address (RING-16)
        "queue.retroactive": ("RING-16",),
    })


#: machines/paging.py: a send compared under its address's policy (PAGING-26 BLOCK never pages,
#: PAGING-27 DROP and FAIL discard before any queue, PAGING-13..16 page limits and page-full, PAGING-30
#: the current page file kept by page cleanup)
for _check, _ids in {"send.blocked": ("PAGING-26",), "send.dropped": ("PAGING-27",),
                     "send.failed_full": ("PAGING-27",),
                     "send.page_full": ("PAGING-13", "PAGING-14", "PAGING-15", "PAGING-16",
                                        "PAGING-30")}.items():
    TABLES["paging"][_check] = _ids + TABLES["paging"]["send.result"]


def _add_spec_evidence() -> None:
    """The broker-profile rules a check also evidences, from the spec (a rule's ``evidenced_by``):
    under a broker's profile the model implements that broker's rule, so the same comparison fails
    when it is broken; merge_outcomes keeps only the rules that apply to the claimed profile."""
    from mqconform.spec import load_catalogue

    for rule in load_catalogue():
        for name in rule.evidenced_by:
            area, _, check = name.partition(".")
            if check not in TABLES.get(area, {}):
                raise ValueError(f"{rule.location}: {rule.id} evidenced_by {name!r}: no such check in "
                                 f"area {area!r} (mqconform/conformance/judging/rules.py)")
            TABLES[area][check] = tuple(dict.fromkeys(TABLES[area][check] + (rule.id,)))


_add_spec_evidence()

#: the areas whose machines mix in the restart step (mqconform/conformance/exploring/restart.py)
RESTART_AREAS = ("delivery", "redelivery")
for _area in RESTART_AREAS:
    TABLES[_area].update(TABLES["restart"])
#: The brokers' vocabulary the ring machine (and the redelivery machine, its subclass)
#: generates, each compared under a check of its own (machines/ring.py), which also evidences what
#: the generic check it stands in for does: a send to a queue with a declared overflow policy
#: (RING-28) or a binding byte bound (RING-27) and the stored count after it; a nack with
#: requeue=false (REDELIVERY-24) or multiple=true (REDELIVERY-25) and the counter it changes; a
#: delivery's redelivered flag (DELIVERY-23).
_VOCABULARY: dict[str, tuple[str, tuple[str, ...]]] = {
    "send.overflow": ("send.result", ("RING-28",)),
    # RING-24: a JetStream discard-new stream (model overflow reject_new) refuses at max_msgs
    # RING-22/23: RabbitMQ reject-publish, before (classic) or after the enqueue (quorum)
    "send.refuse_new": ("send.result", ("RING-28", "RING-24", "RING-22", "RING-23")),
    "send.byte_bound": ("send.result", ("RING-27",)),
    # RING-31..33: a send to a queue with per-subject limits (JetStream max_msgs_per_subject) and the
    # stored and replaced counts after it; RING-32 with discard_new_per_subject, RING-33 discard new
    "send.subject_limit": ("send.result", ("RING-31",)),
    "send.subject_refused": ("send.result", ("RING-32", "RING-31", "RING-24")),
    "send.subject_replaces": ("send.result", ("RING-33", "RING-31", "RING-24")),
    # REDELIVERY-36: beanstalkd's bury is its reject
    "nack.reject": ("nack.result", ("REDELIVERY-24", "REDELIVERY-36")),
    "nack.multiple": ("nack.result", ("REDELIVERY-25",)),
    "nack.reject_multiple": ("nack.result", ("REDELIVERY-24", "REDELIVERY-25", "REDELIVERY-36")),
    "delivery.redelivered": ("", ("DELIVERY-23",)),
}
for _area in ("ring", "redelivery"):
    for _check, (_generic, _ids) in _VOCABULARY.items():
        if _area == "redelivery" and _check.startswith("send."):
            continue  # the redelivery machine declares no overflow policy or byte bound
        TABLES[_area][_check] = tuple(dict.fromkeys(_ids + TABLES[_area].get(_generic, ())))


@functools.cache
def rule_applies(rule: str, profile: str) -> bool:
    """Does spec rule `rule` apply to `profile`? (the catalogue loaded once: machines ask per example)"""
    from mqconform.spec import load_catalogue

    catalogue = load_catalogue()
    return rule in catalogue and catalogue[rule].applies_to(profile)


def rules_for(area: str) -> dict[str, tuple[str, ...]]:
    """The check -> rule ids table of one area."""
    return TABLES[area]


def all_rule_ids() -> set[str]:
    return {rule for table in TABLES.values() for ids in table.values() for rule in ids}


def profile_rule_ids(rules: tuple[str, ...], profile: str) -> tuple[str, ...]:
    """The ids of `rules` that apply to `profile` (a failure line names only those); all of them
    when none does, so a failure never prints an empty rule list."""
    from mqconform.spec import load_catalogue

    catalogue = load_catalogue()
    kept = tuple(r for r in rules if r in catalogue and catalogue[r].applies_to(profile))
    return kept or rules


def failure_rules(rules: tuple[str, ...], profile: str) -> str:
    """The rule list of a failure line: the ids of the claimed profile, comma-separated."""
    return ", ".join(profile_rule_ids(rules, profile))
