"""Which spec rules a run can cover for an adapter, and for each rule it cannot, the capability missing.

Derived, not hand-written per adapter: a rule is evidenced by the checks that name it (:mod:`.rules`);
a check runs only inside its area's machine (the machine's ``REQUIRES`` / ``ANY_OF``) and behind the
capability gate of the machine code that makes it (:data:`CHECK_NEEDS`, one entry per gate). The
capabilities a run has are those of the claimed profile (model features plus the contract's extra
capabilities) that the adapter offers, exactly as :class:`~.base.ConformanceMachine` computes them.

A rule of the claimed profile is *coverable* when at least one of its checks can run; otherwise its
reason lists, per check that could evidence it, the capabilities that check lacks (the cheapest
first). ``<op>.accepted`` checks only ever fail (an operation the implementation refused), so they
never evidence a rule on their own. A run covers at most the coverable rules; whether it reaches each
one depends on the examples drawn (``mqconform run`` prints what it reached on its last line).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from mqconform.adapters.contract import COUNTERS, EXTRA_CAPABILITIES
from mqconform.reference_model.options import ModelOptions

from ..exploring.registry import MACHINES
from .rules import TABLES

#: check name -> the capabilities of the gate in the machine code that makes the check (none listed:
#: the check runs whenever its area runs). Kept next to the gates: queue_machine.py (delivery_count,
#: pending_order, counters via base.compare_counters), ring.py (ring.bound, nack, transactions,
#: set_ring_size), delivery.py / paging.py (browse, paging_flag), scheduling.py (advance_time).
OVERFLOW_POLICY = "overflow:<policy>"
CHECK_NEEDS: dict[str, tuple[str, ...]] = {
    **{f"counters.{name}": (f"counter:{name}",) for name in COUNTERS},
    "counters.identity": tuple(f"counter:{name}" for name in
                               ("message_count", "pending_count", "delivering_count", "scheduled_count",
                                "paged_count")),
    "ring.unacked_never_evicted": ("counter:delivering_count",),
    "window.dispatched": ("window_bytes", "counter:delivering_count"),
    "ring.bound": ("ring", "counter:pending_count"),
    "ring.pending_bound": ("ring", "counter:pending_count"),
    "pending.order": ("pending_order",),
    "delivery_count": ("delivery_count",),
    "browse.ids": ("browse",),
    "nack.result": ("nack",),
    "set_ring_size.accepted": ("set_ring_size",),
    "paging.flag": ("paging_flag",),
    "paging.flag_shared": ("paging_flag",),
    # machines/paging.py: the send check of the address's policy
    "send.blocked": ("block_policy",),
    "send.dropped": ("drop_policy",),
    "send.failed_full": ("fail_policy",),
    "send.page_full": ("paging", "page_limits"),
    # machines/paging.py: a consumer with a selector (PAGING-12)
    "receive.selector": ("selectors",),
    # the restart step (mqconform/conformance/exploring/restart.py) and the stream state it compares
    **{check: ("restart",) for check in ("restart.counters", "restart.delivery_count", "restart.reopen",
                                         "restart.kill.counters", "restart.kill.delivery_count")},
    "restart.stream_state": ("restart", "stream_state"),
    "restart.kill.stream_state": ("restart", "stream_state"),
    # queue_machine.counters_agree -> stream_state.compare_stream_state (DELIVERY-27..30)
    **{check: ("consumer_state",) for check in ("consumer_state.counts", "consumer_state.delivered",
                                                "consumer_state.ack_floor")},
    "stream_state.stream": ("consumer_state", "stream_state"),
    # queue_machine.ack_invalid (DELIVERY-22)
    "ack.invalid": ("invalid_ack",),
    "ack.failed_no_effect": ("invalid_ack",),
    # ring.py: OVERFLOW_POLICY = any `overflow:<policy>` of the claimed profile's policies
    "send.overflow": (OVERFLOW_POLICY,),
    "send.refuse_new": (OVERFLOW_POLICY,),
    "purge.result": ("purge",),
    "nack.delay": ("nack", "nack_delay"),
    "send.byte_bound": ("max_length_bytes",),
    # ring.py: per-subject limits (RING-34; the nats adapter offers max_per_subject from 2.14.0, as it
    # offers set_ring_size from 2.10.6: known once connected, so the send.subject_* checks name no need)
    "set_subject_limit.accepted": ("max_per_subject",),
    "nack.reject": ("nack", "nack_reject"),
    "nack.multiple": ("nack", "nack_multiple"),
    "nack.reject_multiple": ("nack", "nack_reject", "nack_multiple"),
    "delivery.redelivered": ("redelivered_flag",),
    # machines/expiry.py: the counts after an advance
    "expiry.counts": ("counter:message_count",),
    # queue_machine.receive_check behind the delivery machine's gates (DELIVERY-25/26)
    "receive.priority": ("consumer_priority",),
    "receive.single_active": ("single_active_consumer",),
    # machines/admission.py: the component step by step
    **{check: ("admission",) for check in TABLES["admission"]},
    # queue_machine: DELIVERY-15 on the pending order shown; DELIVERY-21 and SCHED-13 run wherever a
    # queue machine runs (the drain through its consumers; the send where the profile has no scheduling)
    "pending.one_place": ("pending_order",),
    # SCHED-13: evidence only from an adapter that offers scheduling under a profile without it (the
    # driver itself answers unsupported for one that does not offer it)
    "send.no_schedule": ("scheduling",),
    "delete.result": ("delete",),
    # machines/redelivery.py: limit_check, and the timed examples (wait_out, in_progress)
    "redelivery.limit": ("delivery_count",),
    "receive.ack_wait": ("ack_wait", "advance_time"),
    "receive.backoff": ("ack_wait", "advance_time", "backoff"),
    "receive.backoff_wpi": ("ack_wait", "advance_time", "backoff"),
    "receive.backoff_nak": ("ack_wait", "advance_time", "backoff", "nack", "nack_delay"),
    "in_progress.result": ("ack_wait", "advance_time"),
    # machines/ring.py close_consumer and end_tx (REDELIVERY-4, 29, 30, RING-13)
    "rollback.delivery_count": ("transactions", "delivery_count"),
    "close.tx_kept": ("transactions",),
    "close_session.counters": ("sessions",),
    "close.ring_returns": ("ring",),
    "counters.non_destructive": ("non_destructive",),
    "counters.last_value": ("last_value",),
    "ack.cumulative": ("cumulative_ack",),
    "advance.ring_due": ("ring",),
    "send.scheduled_paged": ("scheduling", "counter:paged_count"),
    "counters.ring_paged": ("ring", "paging"),
    "expiry.to_address": ("expiry_address", "counter:message_count"),
    "queue.retroactive": ("retroactive", "counter:message_count"),
    # machines/lastvalue.py: the pending order and counters after the step (LASTVALUE-1..10)
    **{check: ("last_value",) for check in ("lastvalue.supersede", "lastvalue.no_key", "lastvalue.delivering",
                                            "lastvalue.returned")},
    "lastvalue.count": ("last_value", "counter:message_count"),
    "lastvalue.non_destructive": ("last_value", "non_destructive"),
    "lastvalue.scheduled": ("last_value", "scheduling", "advance_time"),
    # machines/retention.py: each queue's durable consumer counts (RETENTION-11)
    "consumer.counts": ("consumer_state",),
    # machines/retention.py fetch (DELIVERY-38..40): the nats adapter offers pull_batch from 2.9.0, known
    # once connected (as max_per_subject above), so the fetch.* checks name no need
}
#: checks that can only fail (the `fail` answer of an operation): they never evidence a pass
NEVER_EVIDENCE = "an operation refused"


@attrs.frozen
class RuleCoverage:
    rule: str
    coverable: bool
    #: per check that could evidence the rule: (area.check, capabilities it lacks), cheapest first
    lacking: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def reason(self) -> str:
        if self.coverable:
            return "coverable"
        if not self.lacking:
            return "no conformance check evidences it (model and scenario tests only)"
        fewest = len(self.lacking[0][1])  # the cheapest ways to cover it: fewest capabilities missing
        shown = [", ".join(caps) for _, caps in self.lacking if len(caps) == fewest]
        return "needs " + " | ".join(dict.fromkeys(shown))


def run_capabilities(claimed: ModelOptions, adapter_caps: Iterable[str]) -> frozenset[str]:
    """The capabilities a run has: the claimed profile's (and the contract's extras) the adapter offers;
    OVERFLOW_POLICY where it offers an overflow policy of the profile (ring.py queue_vocabulary)."""
    policies = {f"overflow:{name}" for name, _ in claimed.overflow_policies} | {OVERFLOW_POLICY}
    caps = (frozenset(claimed.features) | EXTRA_CAPABILITIES | policies) & frozenset(adapter_caps)
    if caps & policies:  # idempotent: the capabilities of a run are those of a run
        caps |= {OVERFLOW_POLICY}
    return caps


def _lacks(area: str, check: str, caps: frozenset[str]) -> tuple[str, ...] | None:
    """What `check` of `area` lacks under `caps` (empty: it can run); None: it never evidences."""
    if check.endswith(".accepted") and check not in CHECK_NEEDS:
        return None
    machine = MACHINES[area]
    missing = [c for c in machine.REQUIRES if c not in caps]
    if machine.ANY_OF and not any(c in caps for c in machine.ANY_OF):
        missing.append("|".join(machine.ANY_OF))
    missing += [c for c in CHECK_NEEDS.get(check, ()) if c not in caps and c not in missing]
    return tuple(missing)


def rule_coverage(rules: Iterable[str], claimed: ModelOptions,
                  adapter_caps: Iterable[str]) -> dict[str, RuleCoverage]:
    """rule id -> whether a run of an adapter with `adapter_caps` under `claimed` can cover it."""
    caps = run_capabilities(claimed, adapter_caps)
    result: dict[str, RuleCoverage] = {}
    for rule in rules:
        lacking: list[tuple[str, tuple[str, ...]]] = []
        coverable = False
        for area, table in TABLES.items():
            if area not in MACHINES:
                continue  # a table mixed into the areas' own (the restart step's, RESTART_AREAS)
            for check, ids in table.items():
                if rule not in ids:
                    continue
                missing = _lacks(area, check, caps)
                if missing is None:
                    continue
                if not missing:
                    coverable = True
                lacking.append((f"{area}.{check}", missing))
        lacking.sort(key=lambda item: (len(item[1]), item[1]))
        result[rule] = RuleCoverage(rule, coverable, () if coverable else tuple(lacking))
    return result
