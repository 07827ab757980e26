"""Ring queues: the bound counts pending only, one head evicted per add, returns never evict.

The queue declaration draws its overflow policy among the claimed profile's own
(`overflow_policies`, RING-28) that the adapter can honour, and a byte bound beside the count
bound where both have `max_length_bytes` (RING-27); nack draws its forms, requeue=false
(REDELIVERY-24) and multiple (REDELIVERY-25), where both have them.

Each of these is compared under a check of its own, so a run evidences the rule: the sends to a
queue with a declared policy (`send.overflow`) or a binding byte bound (`send.byte_bound`) compare
their answers and the queue's stored count; a nack of a non-default form compares its answer and
then the counters its form changes (`nack.reject`: message_count and replaced, `nack.multiple`:
delivering_count).
None of this draws anything new (a new rule would change every profile's exploration), so purge
(RING-29), ack wait (REDELIVERY-27) and nack delay (REDELIVERY-28) are not generated here.
Where the adapter has `max_per_subject` (JetStream), odd set-up seeds give the queue a
per-subject limit, whose set-up sends one more message on one subject than the limit, and every send
one of two subjects (from the send's own size draw; a batch: the queue's own subject), compared with
the stored count and replaced under `send.subject_limit` (RING-31), `send.subject_refused` (RING-32)
or `send.subject_replaces` (RING-33); on such a queue an odd drawn ring size sets the per-subject
limit instead (`set_subject_limit.counters`, RING-34).
After each delivery the redelivered flag the implementation shows is compared (`delivery.redelivered`,
DELIVERY-23).
From the same seed, where the adapter has the feature: a retroactive address whose three messages
sent before the queue exists reach it as copies of the last two (`queue.retroactive`, RING-16).
RING-17 (model-free, `ring.pending_bound`): whenever the counters are read, the pending count the
implementation shows is at most the ring size, unless a nack (an individual cancel, RING-9) or a
ring-size decrease (RING-2) happened since it last was; checked where the rule applies to the claimed
profile and the queue evicts its head.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from mqconform.reference_model.profiles import PROFILES

from ..checks import OVERFLOW_POLICY, Checks, check, rule_applies
from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import BATCH, DELETE_CHECKS, QUEUE_CHECKS, WHICH, QueueMachine

#: the set-up seeds ((ring + 5 x mode) % 7) of a non-destructive ring, a last-value ring and a first
#: consumer with cumulative acks, where the adapter has the feature
NON_DESTRUCTIVE_SEED, LAST_VALUE_SEED, CUMULATIVE_SEED = 3, 5, 6
#: ... and a retroactive address (RING-16)
RETROACTIVE_SEED = 1

#: the ring machine's own steps: send (ring.bound), check_pending_bound (RING-17), set_ring_size (with
#: a per-subject limit: set_subject_limit), end_tx
RING_CHECKS = Checks(
    check("ring.bound", "RING-3", "RING-4", needs=("ring", "counter:pending_count")),
    check("ring.pending_bound", "RING-17", needs=("ring", "counter:pending_count")),
    check("set_ring_size.accepted", "RING-2", "RING-30", needs=("set_ring_size",)),
    check("set_ring_size.counters", "RING-2", "RING-30"),
    check("set_subject_limit.accepted", "RING-34", needs=("max_per_subject",)),
    check("set_subject_limit.counters", "RING-34"),
    check("rollback.accepted", "RING-8"), check("commit.accepted", "DELIVERY-8"))
#: shared with the redelivery machine: end_tx and close_consumer (REDELIVERY-4: a rollback keeps the
#: increment of the messages acked in the transaction only; REDELIVERY-29: what the consumer acked in
#: its open transaction stays delivering at a close; REDELIVERY-30: a session close returns the
#: consumer's messages, then rolls back; RING-13: a close returns its messages to a full ring, the
#: oldest returned ones replaced), special_queue (a non-destructive or last-value ring's counts, an ack
#: with cumulative acks) and setup (a retroactive address)
RETURN_CHECKS = Checks(
    check("rollback.delivery_count", "REDELIVERY-4", "REDELIVERY-3",
          needs=("transactions", "delivery_count")),
    check("close.tx_kept", "REDELIVERY-29", "REDELIVERY-8", needs=("transactions",)),
    check("close_session.counters", "REDELIVERY-30", "REDELIVERY-8", needs=("sessions",)),
    check("close.ring_returns", "RING-13", "RING-7", "RING-8", needs=("ring",)),
    check("counters.non_destructive", "DELIVERY-12", "RING-12", needs=("non_destructive",)),
    check("counters.last_value", "RING-15", needs=("last_value",)),
    check("ack.cumulative", "DELIVERY-11", "DELIVERY-8", needs=("cumulative_ack",)),
    check("queue.retroactive", "RING-16", needs=("retroactive", "counter:message_count")))
#: the brokers' vocabulary (vocabulary_check, queue_vocabulary), each compared under a check of its
#: own that also evidences the generic check's rules: a send to a queue with a declared overflow policy
#: (RING-28; RING-24 a JetStream discard-new stream, RING-22/23 RabbitMQ reject-publish) or a byte bound
#: (RING-27), with per-subject limits (RING-31..33; the nats adapter offers max_per_subject from 2.14.0,
#: known once connected, so these name no need)
SEND_VOCABULARY = Checks(
    check("send.overflow", "RING-28", needs=(OVERFLOW_POLICY,), extends="send.result"),
    check("send.refuse_new", "RING-28", "RING-24", "RING-22", "RING-23", needs=(OVERFLOW_POLICY,),
          extends="send.result"),
    check("send.byte_bound", "RING-27", needs=("max_length_bytes",), extends="send.result"),
    check("send.subject_limit", "RING-31", extends="send.result"),
    check("send.subject_refused", "RING-32", "RING-31", "RING-24", extends="send.result"),
    check("send.subject_replaces", "RING-33", "RING-31", "RING-24", extends="send.result"))
#: ... a nack with requeue=false (REDELIVERY-24; beanstalkd's bury, REDELIVERY-36) or multiple=true
#: (REDELIVERY-25) and the counter it changes; a delivery's redelivered flag (received, DELIVERY-23)
NACK_VOCABULARY = Checks(
    check("nack.reject", "REDELIVERY-24", "REDELIVERY-36", needs=("nack", "nack_reject"),
          extends="nack.result"),
    check("nack.multiple", "REDELIVERY-25", needs=("nack", "nack_multiple"), extends="nack.result"),
    check("nack.reject_multiple", "REDELIVERY-24", "REDELIVERY-25", "REDELIVERY-36",
          needs=("nack", "nack_reject", "nack_multiple"), extends="nack.result"),
    check("delivery.redelivered", "DELIVERY-23", needs=("redelivered_flag",)))


class RingMachine(QueueMachine):
    area = "ring"
    CHECKS = (QUEUE_CHECKS.citing({
        "send.result": ("RING-3",), "receive.id": ("RING-6", "RING-8", "RING-7"),
        "counters.replaced": ("RING-3", "RING-7", "RING-8"), "counters.pending_count": ("RING-4", "RING-3"),
        "counters.delivering_count": ("RING-5", "DELIVERY-1"),
        # a stored count below the model's after an add to a full ring: an unacked message was evicted
        "counters.message_count": ("RING-5", "DELIVERY-1"),
        "nack.result": ("RING-9",), "nack.accepted": ("RING-9",), "pending.order": ("RING-8", "RING-6")})
        | RING_CHECKS | DELETE_CHECKS | RETURN_CHECKS | SEND_VOCABULARY | NACK_VOCABULARY)
    USE_PRIORITIES = True
    REQUIRES = ("queues", "ring")
    DRAWS_DELETE = True  # and the redelivery machine, its subclass

    @initialize(ring=st.integers(min_value=0, max_value=4), mode=MODE_INDEX)
    def setup(self, ring: int, mode: int) -> None:
        queue: dict[str, Any] = {"name": "q", "ring_size": self.ring_size(ring)}
        queue.update(self.queue_vocabulary(ring + 5 * mode))
        special = (ring + 5 * mode) % 7  # the set-up's own draws again: no new draw
        queue.update(self.special_queue(special))
        ring = self.ring_size(ring)
        self.ring = ring
        retroactive = special == RETROACTIVE_SEED and self.can("retroactive")
        if retroactive:  # RING-16: the address keeps its last messages for a queue created later
            self.d.both("address", {"name": "q", "retroactive_message_count": 2})
            for _ in range(3):
                msg_id = self.next_id()
                self.sent.add(msg_id)  # not `accepted`: no queue stores it, the copies are extra
                self.d.both("send", {"to": self.ADDRESS, "id": msg_id, "size": 100}, compare="send.result")
        self.d.both("queue", queue)
        if retroactive:
            self.compare_counter("queue.retroactive", "q", "message_count", "pending_count", "replaced")
        self.send_check = self.vocabulary_check(queue)
        # RING-17: the implementation's pending count stays within the ring, where the rule applies
        self.pending_bound = (rule_applies("RING-17", self.options.name) and self.overflow == "drop_head"
                              and self.options.bound_counts == "pending" and not self.subjects)
        self.bound_excused = False
        self.bound_seen = 0
        settings = consumer_settings(self.caps, mode)
        if settings is not None and special == CUMULATIVE_SEED and self.can("cumulative_ack"):
            settings["cumulative_ack"] = True  # DELIVERY-11 (ack.cumulative)
        if settings is not None:
            self.declare_consumer("q", **settings)
        if self.subjects:  # RING-31..33: one subject filled to its limit, then one more
            for _ in range(queue["max_per_subject"] + 1):
                self.send_subject = "s0"
                self.do_send(100, 4)
                self.compare_counter(self.send_check, "q", "message_count", "replaced")
        self.ready = True

    def queue_vocabulary(self, seed: int) -> dict[str, Any]:
        """RING-28 / RING-27: an overflow policy among the profile's the adapter has (or none: the
        profile's default) and a byte bound where both have one, chosen from `seed` (the set-up's
        own draws: no new draw, so profiles without them explore exactly as before). Sets
        self.overflow, the model overflow the queue follows."""
        extra: dict[str, Any] = {}
        offered = self.adapter.capabilities  # overflow:<policy> is no model feature: the adapter's own
        names: list[str | None] = [None]
        known = PROFILES.get(self.options.name)
        if known is not None and known.overflow == self.options.overflow:  # a run that pins one
            names += [name for name, _ in self.options.overflow_policies  # overflow keeps it
                      if f"overflow:{name}" in offered]
        chosen = names[seed % len(names)]
        self.subjects = self.can("max_per_subject") and seed % 2 == 1
        if self.subjects and chosen is None:  # RING-32/33 need a policy that refuses new messages
            chosen = next((name for name in names[1:]
                           if self.options.overflow_for(name) == "reject_new"), None)
        if chosen is not None:
            extra["overflow"] = chosen
        self.overflow = self.options.overflow_for(chosen)
        if self.can("max_length_bytes") and seed % 3 == 2:
            extra["max_length_bytes"] = 250
        if self.subjects:  # RING-31..33: per-subject limits of 1 or 2, sends on two subjects
            extra["max_per_subject"] = 1 + (seed // 5) % 2
            if self.overflow == "reject_new" and (seed // 6) % 2 == 1:
                extra["discard_new_per_subject"] = True  # RING-32
        return extra

    def special_queue(self, seed: int) -> dict[str, Any]:
        """From `seed` (0..6), where the adapter has the feature: a non-destructive ring (DELIVERY-12,
        RING-12: its counts after every step under `counters.non_destructive`) or a last-value ring
        whose single sends carry one of three key values (RING-15: `counters.last_value`)."""
        self.special_check: str | None = None
        self.lv_key: str | None = None
        if seed == NON_DESTRUCTIVE_SEED and self.can("non_destructive"):
            self.special_check = "counters.non_destructive"
            return {"non_destructive": True}
        if seed == LAST_VALUE_SEED and self.can("last_value"):
            self.special_check = "counters.last_value"
            self.lv_key = "lvk"
            return {"last_value_key": self.lv_key}
        return {}

    def message_properties(self) -> dict[str, str] | None:
        """RING-15: a single send to a last-value ring carries one of three values of its key."""
        key = getattr(self, "lv_key", None)
        return {key: f"v{self.counter % 3}"} if key else None

    def vocabulary_check(self, queue: dict[str, Any]) -> str:
        """The check a send to `queue` is compared under: send.byte_bound where its byte bound binds
        before its count bound (RING-27: 250 bytes hold two 100-byte messages, a ring of 3 or more
        three), send.overflow where it names an overflow policy (RING-28; send.refuse_new where that
        policy refuses new messages, RING-24), else send.result."""
        ring = queue.get("ring_size", -1)
        if queue.get("max_per_subject", -1) != -1:  # RING-31..33
            if queue.get("discard_new_per_subject"):
                return "send.subject_refused"
            refuses = self.options.overflow_for(queue.get("overflow")) == "reject_new"
            return "send.subject_replaces" if refuses else "send.subject_limit"
        if queue.get("max_length_bytes", -1) != -1 and (ring < 0 or ring >= 3):
            return "send.byte_bound"
        if queue.get("overflow") is None:
            return "send.result"
        # RING-24: a policy that refuses new messages at the bound (JetStream discard-new)
        refuses = self.options.overflow_for(queue["overflow"]) == "reject_new"
        return "send.refuse_new" if refuses else "send.overflow"

    def ring_size(self, drawn: int) -> int:
        """A drawn ring size, at least 1 where the implementation cannot have a ring of 0."""
        return drawn if self.can("ring_zero") else max(drawn, 1)

    def _pending(self) -> int | None:
        if not self.can("counter:pending_count"):
            return None
        result = self.adapter.counters("q")
        return result.value["pending_count"] if result.is_ok else None

    @precondition(lambda self: self.ready and self.can("ring"))
    @rule(size_index=WHICH, priority=st.sampled_from([4, 4, 0, 9]))
    def send(self, size_index: int, priority: int) -> None:
        opts = self.options
        overflow = getattr(self, "overflow", opts.overflow)  # the queue's own policy (RING-28)
        if getattr(self, "subjects", False):  # RING-31..33: the subject comes from the size draw
            self.send_subject = f"s{size_index % 2}"
            super().send(size_index, priority)
            self.compare_counter(self.send_check, "q", "message_count", "replaced")
            return
        if overflow != "drop_head" or opts.bound_counts != "pending":  # no ring.bound check
            super().send(size_index, priority)
            return
        before = self._pending()
        super().send(size_index, priority)
        if self.send_check != "send.result":  # the stored count after a send under the declaration
            self.compare_counter(self.send_check, "q", "message_count")
        after = self._pending()
        if before is None or after is None:
            return
        bound = max(self.ring, before)
        self.d.check("ring.bound", after <= bound,
                     lambda: f"pending went from {before} to {after} on a send to a ring of {self.ring}")

    @precondition(lambda self: self.ready)
    @rule(count=BATCH)
    def send_batch(self, count: int) -> None:
        """As QueueMachine.send_batch; on a queue with per-subject limits (its messages on the
        queue's own subject) the stored and replaced counts after it under the send's check."""
        super().send_batch(count)
        if getattr(self, "subjects", False):
            self.compare_counter(self.send_check, "q", "message_count", "replaced")

    @precondition(lambda self: self.ready and self.can("transactions") and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def ack_in_tx(self, which: int, index: int) -> None:
        target = self._ack_target(which, index)
        if target is not None:
            self.d.both("ack", {"consumer": target[0], "id": target[1], "tx": True}, compare="ack.result")

    @precondition(lambda self: self.ready and self.can("transactions") and self.open_consumers)
    @rule(which=WHICH, commit=st.booleans())
    def end_tx(self, which: int, commit: bool) -> None:
        consumer = self.pick_consumer(which)
        if consumer not in self.open_consumers:
            return
        if commit:
            tx_acked = [r.id for r in self._broker().consumers[consumer].tx_acked]
            self.d.both("commit", consumer)
            self.acked.update((self.consumer_args[consumer]["queue"], m) for m in tx_acked)
        else:
            held = [*self._held(consumer), *(r.id for r in self._broker().consumers[consumer].tx_acked)]
            self.d.both("rollback", consumer)
            # REDELIVERY-4: what a rollback returned keeps the increment only where it was acked in
            # the transaction (Session.recover acks the oldest into it first)
            self.compare_delivery_counts("rollback.delivery_count", self.consumer_args[consumer]["queue"],
                                         held)

    def _in_open_tx(self) -> list[str]:
        """The open consumers whose session holds acknowledgements in an open transaction."""
        consumers = self._broker().consumers
        return [c for c in sorted(self.open_consumers) if c in consumers and consumers[c].tx_acked]

    @precondition(lambda self: self.ready and self.can("transactions") and self._in_open_tx())
    @rule(which=WHICH)
    def close_in_open_tx(self, which: int) -> None:
        """REDELIVERY-29 / REDELIVERY-30: a consumer (or its session) closed while its session's
        transaction holds acknowledgements, a state close_and_reopen reaches only by chance."""
        consumers = self._in_open_tx()
        self.reopen(consumers[which % len(consumers)], which)

    def close_consumer(self, consumer: str, which: int) -> None:
        """A consumer close, or with `sessions` (one `which` in four) its session's close, and the
        counts after it: REDELIVERY-30 a session close (`close_session.counters`: the consumer's
        unacknowledged messages back at once, counts undone, then the transaction rolled back with the
        redelivery delay, counts kept); REDELIVERY-29 a close with messages acknowledged in the open
        transaction (`close.tx_kept`: those stay delivering); RING-13 / RING-7 / RING-8 a close that
        returns messages to a ring (`close.ring_returns`: the oldest returned ones are replaced)."""
        queue = self.consumer_args[consumer]["queue"]
        state = self._broker().consumers[consumer]
        tx = [ref.id for ref in state.tx_acked]
        held = [*state.received, *state.buffer, *tx]
        counts = ("message_count", "pending_count", "delivering_count", "scheduled_count", "replaced")
        if self.can("sessions") and which % 4 == 3:
            self.d.both("close_session", consumer)
            self.compare_counter("close_session.counters", queue, *counts)
            self.compare_delivery_counts("close_session.counters", queue, held)
            return
        super().close_consumer(consumer, which)
        if tx:
            self.compare_counter("close.tx_kept", queue, *counts)
            self.compare_delivery_counts("close.tx_kept", queue, tx)
        if held and getattr(self, "ring", -1) >= 0:
            self.compare_counter("close.ring_returns", queue, *counts)

    @precondition(lambda self: self.ready and self.can("nack") and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def nack(self, which: int, index: int) -> None:
        if self.nack_unmodelled():
            return
        target = self._ack_target(which, index)
        if target is not None:
            args: dict[str, Any] = {"consumer": target[0], "id": target[1]}
            # the forms come from the rule's own draws (no new draw: other profiles explore as before)
            if self.can("nack_reject") and (which + index) % 3 == 2:
                args["requeue"] = False  # REDELIVERY-24
            if self.can("nack_multiple") and which % 2 == 1:
                args["multiple"] = True  # REDELIVERY-25
            check = {(False, False): "nack.result", (True, False): "nack.reject",
                     (False, True): "nack.multiple", (True, True): "nack.reject_multiple"}[
                ("requeue" in args, "multiple" in args)]
            self.d.both("nack", args, compare=check)
            # the effect of the form: a rejected message leaves the queue, a multiple nack returns
            # every earlier delivery of the consumer
            if "requeue" in args:  # requeued instead, it would count again, or push out a head
                self.compare_counter(check, self.consumer_args[target[0]]["queue"],
                                      "message_count", "replaced")
            elif "multiple" in args:
                self.compare_counter(check, self.consumer_args[target[0]]["queue"], "delivering_count")

    @precondition(lambda self: self.ready and self.can("set_ring_size"))
    @rule(size=st.integers(min_value=0, max_value=4))
    def set_ring_size(self, size: int) -> None:
        if getattr(self, "subjects", False) and size % 2 == 1:  # RING-34 instead (no new draw)
            self.d.both("set_subject_limit", {"queue": "q", "limit": (size + 1) // 2})
            self.compare_counter("set_subject_limit.counters", "q", "message_count", "pending_count",
                                  "delivering_count", "replaced")
            return
        size = self.ring_size(size)
        if self.ring < 0 or size < self.ring:  # RING-2: a decrease leaves pending above the new size
            self.bound_excused = True
        self.ring = size
        args: dict[str, Any] = {"queue": "q", "size": size}
        self.d.both("set_ring_size", args)
        # RING-2 nothing is purged / RING-30 a live update that trims at once
        self.compare_counter("set_ring_size.counters", "q", "message_count", "pending_count",
                              "delivering_count", "replaced")

    # ------------------------------------------------------------------ observations
    def compare_counters(self, queue: str) -> dict[str, int] | None:
        """As ConformanceMachine.compare_counters; on the ring queue also RING-17 on the counts shown."""
        shown = super().compare_counters(queue)
        if shown is not None and queue == "q" and getattr(self, "pending_bound", False):
            self.check_pending_bound(shown)
        check = getattr(self, "special_check", None)
        if shown is not None and queue == "q" and check is not None:  # DELIVERY-12, RING-12, RING-15
            expected, actual = self.last_counters
            for name in ("message_count", "pending_count", "delivering_count", "replaced"):
                if name in actual:
                    self.d.expect_equal(check, expected[name], actual[name], f"queue q {name}: ", field=name)
        return shown

    def check_pending_bound(self, shown: dict[str, int]) -> None:
        """RING-17: pending <= ring size, unless an individual cancel (a nack, RING-9) or a ring-size
        decrease (RING-2) happened since the bound was last seen to hold (then the queue shrinks only
        through consumption: the check waits until it holds again)."""
        pending = shown.get("pending_count")
        if pending is None or self.ring < 0:
            return
        steps = self.d.steps
        if any(step.op == "nack" for step in steps[self.bound_seen:]):
            self.bound_excused = True
        self.bound_seen = len(steps)
        if pending <= self.ring:
            self.bound_excused = False
            self.d.check("ring.pending_bound", True, str)
            return
        if not self.bound_excused:
            self.d.check("ring.pending_bound", False,
                         lambda: f"queue q shows {pending} pending on a ring of {self.ring}, with no nack or "
                                 "ring-size decrease since the bound last held", field="pending_count",
                         expected=f"<= {self.ring}", actual=pending)

    def received(self, consumer: str, expected: str | None, actual: str | None) -> None:
        """Also DELIVERY-23: the redelivered flag of the delivery the implementation shows."""
        super().received(consumer, expected, actual)
        if expected is None or actual != expected or not self.can("redelivered_flag"):
            return
        queue = self.consumer_args[consumer]["queue"]
        observed = self.d.observe_if_observable("message_info", queue, expected)
        if observed is not None and observed[0] is not None:
            self.d.expect_equal("delivery.redelivered", observed[0]["redelivered"],
                                (observed[1] or {}).get("redelivered"), f"redelivered flag of {expected}: ")
