"""Shared operations of the queue machines: send, receive, ack, nack, rollback, close, browse, time.

Every queue machine opens 1-3 consumers per queue (the first in its set-up, more through `open_consumer`,
each in a mode of :func:`.consumers.consumer_settings`), exercised one by one. `ack_invalid` sends the acks
DELIVERY-8 says fail; batch steps (up to 25 messages) reach long queues within a short counterexample;
ack_batch purges now and then (RING-29), ack nacks with a far delay (REDELIVERY-28). Checks: QUEUE_CHECKS.
Each delivery's count is a ``delivery_count`` observation ``{"id", "count"}`` (monotonic: a report check)."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from mqconform.adapters.contract import COUNTERS
from mqconform.reference_model.redelivery import PULL_TAG_ORDER_LIMIT

from .base import COUNTER_CHECKS
from .checks import Checks, check
from .consumers import MODE_INDEX
from .queue_drain import DRAIN_CHECKS, QueueDrain
from .stream_state import STREAM_STATE_CHECKS, compare_stream_state

WHICH = st.integers(min_value=0, max_value=7)
BATCH = st.sampled_from([3, 8, 17, 25])
MAX_CONSUMERS = 3
#: the invalid acknowledgements ack_invalid generates (DELIVERY-8)
INVALID_ACKS = ("second_ack", "never_delivered", "wrong_consumer", "after_close", "nack_acked")
#: RING-29: the `which` of ack_batch that purges the queue instead (capability purge); DELIVERY-31..33:
#: the `index` of ack that deletes a message by id instead (capability delete)
PURGE_WHICH, DELETE_INDEX = 7, 6
#: REDELIVERY-28: the `index` of ack that nacks instead, with a delay beyond any example's time
NACK_LATER_INDEX, NAK_DELAY_BEYOND_MS = 7, 3_600_000
#: SCHED-13: the `size_index` of send that sends with a delivery time (logical ms) instead
SCHEDULED_SEND_INDEX, UNSUPPORTED_DELIVERY_TIME_MS = 7, 60_000

#: the checks of every queue machine's steps (an area's machine cites its own rules with .citing)
QUEUE_CHECKS = Checks(
    check("send.result", "DELIVERY-2"), check("send.accepted", "DELIVERY-2"),  # do_send
    check("receive.id", "DELIVERY-3", "DELIVERY-4"), check("receive.accepted", "DELIVERY-4"),  # receive
    check("ack.result", "DELIVERY-8"), check("ack.accepted", "DELIVERY-8"),  # ack, ack_batch
    check("close.accepted", "REDELIVERY-8"), check("consumer.accepted", "DELIVERY-5"),
    check("queue.accepted", "RING-1"), check("address.accepted", "PAGING-1"),  # the machines' setup
    check("delivery.sent_only", "DELIVERY-6"), check("delivery.acked_not_redelivered", "DELIVERY-7"),
    COUNTER_CHECKS, check("pending.order", "DELIVERY-3", needs=("pending_order",)),  # counters_agree
    check("delivery_count", "REDELIVERY-1", "REDELIVERY-2", "REDELIVERY-38", needs=("delivery_count",)),
    check("ring.unacked_never_evicted", "RING-5", needs=("counter:delivering_count",)),  # counters_agree
    check("window.dispatched", "REDELIVERY-11", needs=("window_bytes", "counter:delivering_count")),
    check("browse.ids", "PAGING-12", needs=("browse",)),  # the delivery and paging machines' browse
    # ack_invalid: the acks DELIVERY-8 says fail, answered per broker (DELIVERY-22), or refused by an
    # adapter without invalid_ack (ack.refused): failed, and nothing changes
    check("ack.invalid", "DELIVERY-8", "DELIVERY-22", needs=("invalid_ack",)),
    check("ack.failed_no_effect", "DELIVERY-8", "DELIVERY-22", needs=("invalid_ack",)),
    check("ack.refused", "DELIVERY-8"), check("ack.refused_no_effect", "DELIVERY-8"),
    check("nack.result", "DELIVERY-8", needs=("nack",)), check("nack.accepted", "DELIVERY-8"),
    STREAM_STATE_CHECKS, check("purge.result", "RING-29", needs=("purge",)),  # ack_batch purging instead
    check("nack.delay", "REDELIVERY-28", needs=("nack", "nack_delay")),  # nack_later
    check("delivery.one_place", "DELIVERY-15"),  # received and check_one_place (DELIVERY-15)
    check("pending.one_place", "DELIVERY-15", needs=("pending_order",)), DRAIN_CHECKS,
    check("send.no_schedule", "SCHED-13", "DELIVERY-2", needs=("scheduling",)))  # send_with_delivery_time
#: delete, drawn within `ack` where the machine has DRAWS_DELETE (DELIVERY-31..33)
DELETE_CHECKS = Checks(check("delete.result", "DELIVERY-31", "DELIVERY-32", "DELIVERY-33", needs=("delete",)))


class QueueMachine(QueueDrain):
    """One address, its queues (QUEUES) and one consumer per queue named c-<queue>."""

    QUEUES: ClassVar[tuple[str, ...]] = ("q",)
    SIZES: ClassVar[tuple[int, ...]] = (100,)
    USE_PRIORITIES: ClassVar[bool] = False
    ADDRESS: ClassVar[str] = "q"
    #: the check a send's answer is compared under (a ring's overflow policy has its own, RING-27/28)
    send_check: str = "send.result"
    #: DELIVERY-25/26: draw consumer priorities and single active consumers (CONSUMER_ORDER_CHECKS)
    CONSUMER_ORDER: ClassVar[bool] = False
    #: DELIVERY-8: send the acks that must fail also to an adapter without invalid_ack (the contract:
    #: it answers `failed` and nothing changes; the model it meets refuses them, contract.model_for)
    REFUSED_ACKS: ClassVar[bool] = False
    #: DELIVERY-31..33: draw deletes by id within `ack` where offered (DELETE_CHECKS)
    DRAWS_DELETE: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0
        self.sent: set[str] = set()
        #: (queue, message id) pairs acknowledged: one message reaches every queue of its address
        self.acked: set[tuple[str, str]] = set()
        self.consumer_args: dict[str, dict[str, Any]] = {}
        self.open_consumers: set[str] = set()
        #: (consumer, id) the implementation acknowledged (ok), and what each consumer held at its close
        self.acked_by: list[tuple[str, str]] = []
        self.held_at_close: list[tuple[str, str]] = []
        self.ready = False
        #: DELIVERY-26 queues declared single_active_consumer, DELIVERY-25 queues with a consumer priority
        self.single_active: set[str] = set()
        self.prioritised: set[str] = set()
        #: DELIVERY-21: ids whose send the implementation accepted (or paged), and per queue the ids
        #: the implementation delivered at least once
        self.accepted: list[str] = []
        self.delivered: dict[str, set[str]] = {}
        #: DELIVERY-21/31: (queue, id) a delete removed (the profile's delete_counts says which counter
        #: it bumped, so the drain does not look for it among replaced + killed + expired)
        self.deleted: set[tuple[str, str]] = set()

    # ------------------------------------------------------------------ helpers
    def _broker(self) -> Any:
        return self.d.model.world.broker

    def consumer_of(self, queue: str) -> str:
        return f"c-{queue}"

    def consumers_on(self, queue: str) -> list[str]:
        return sorted(c for c, a in self.consumer_args.items() if a["queue"] == queue)

    def declare_consumer(self, queue: str, name: str | None = None, **settings: Any) -> None:
        name = name or self.consumer_of(queue)
        args = {"name": name, "queue": queue, **settings}
        self.consumer_args[name] = args
        self.d.both("consumer", args)
        self.open_consumers.add(name)

    def _held(self, consumer: str) -> Any:
        """The model's unacknowledged ids of an open consumer, not copied (read, never change it)."""
        return self._broker().consumers[consumer].received

    def _delivering(self, consumer: str) -> set[str]:
        """DELIVERY-15: the ids delivering to an open consumer in the model: dispatched to its buffer,
        received and unacknowledged, or acknowledged in its open transaction."""
        state = self._broker().consumers[consumer]
        return set(state.buffer) | set(state.received) | {ref.id for ref in state.tx_acked}

    def _shares_listing(self, queue: str) -> bool:
        """DELIVERY-12: a non-destructive or last-value queue keeps delivered messages listed (each
        consumer walks the whole list), so DELIVERY-15's one-place checks do not apply to it."""
        config = self._broker().queues[queue].config
        return bool(config.non_destructive or config.last_value_key is not None)

    def nack_unmodelled(self) -> bool:
        """True where the model has no nack (a non-destructive queue: QueueImpl#cancel resets every
        iterator, not modelled): the machine sends none."""
        return any(q.config.non_destructive for q in self._broker().queues.values())

    def identity_holds(self, queue: str) -> bool:
        """DELIVERY-12: a non-destructive queue counts a delivering message twice (pending and
        delivering), a last-value queue leaves delivering out of messageCount: no identity there."""
        return queue not in self._broker().queues or not self._shares_listing(queue)

    def unacked(self, consumer: str) -> list[str]:
        if consumer not in self.open_consumers:
            return []
        ids: list[str] = self._broker().unacked_ids(consumer)  # a fresh list
        return ids

    def any_unacked(self) -> bool:
        consumers = self._broker().consumers
        return any(consumers[c].received for c in self.open_consumers)

    def pick_consumer(self, which: int) -> str:
        names = sorted(self.consumer_args)
        return names[which % len(names)]

    def next_id(self) -> str:
        self.counter += 1
        return f"m{self.counter}"

    # ------------------------------------------------------------------ operations
    def do_send(self, size: int, priority: int, scheduled_at: int | None = None) -> None:
        msg_id = self.next_id()
        args: dict[str, Any] = {"to": self.ADDRESS, "id": msg_id, "size": size}
        if priority != 4:
            args["priority"] = priority
        if scheduled_at is not None:
            args["scheduled_at_ms"] = scheduled_at
        for key in ("subject", "group"):  # RING-31: per-subject limits; DELIVERY-49: message groups
            if (value := getattr(self, f"send_{key}", None)) is not None:
                args[key] = value
        properties = self.message_properties()
        if properties:
            args["properties"] = properties
        self.sent.add(msg_id)
        _, answer = self.d.both_values("send", args, compare=self.send_check)
        self.note_send(msg_id, answer)

    def message_properties(self) -> dict[str, str] | None:
        """The properties of the next single send (none here; a last-value ring gives its key)."""
        return None

    def note_send(self, msg_id: str, answer: Any) -> None:
        """DELIVERY-21: remember a send the implementation accepted (it must come out again)."""
        if answer in ("accepted", "paged"):
            self.accepted.append(msg_id)

    @precondition(lambda self: self.ready)
    @rule(size_index=WHICH, priority=st.sampled_from([4, 4, 0, 9, 5]))
    def send(self, size_index: int, priority: int) -> None:
        if (size_index == SCHEDULED_SEND_INDEX and not self.options.has("scheduling")
                and "scheduling" in self.adapter.capabilities):
            self.send_with_delivery_time()
            return
        self.do_send(self.SIZES[size_index % len(self.SIZES)],
                     priority if self.USE_PRIORITIES and self.can("priorities") else 4)

    def send_with_delivery_time(self) -> None:
        """SCHED-13 (drawn within `send`, only where the claimed profile has no scheduled delivery but
        the adapter offers scheduling, so the exploration of the others is as before; an adapter
        without it is answered unsupported by the driver, see docs/contract.md): a send with a
        delivery time is answered unsupported, as the model answers it, and changes nothing
        (counters, pending order); its id never counts as sent, so a later delivery of it fails
        delivery.sent_only."""
        msg_id = self.next_id()
        args = {"to": self.ADDRESS, "id": msg_id, "size": 100,
                "scheduled_at_ms": UNSUPPORTED_DELIVERY_TIME_MS}
        queues = self._address_queues()
        before = [self._state_of(q) for q in queues]
        answer = self.d.both_refused("send", args)
        refused = answer.type == "fail" and (answer.error or "").startswith("unsupported")
        self.d.check("send.no_schedule", refused,
                     lambda: f"send {args!r} with a delivery time under profile {self.options.name}, which "
                             f"has no scheduled delivery: expected unsupported, the implementation gave "
                             f"{answer.value if answer.is_ok else answer.error!r}")
        after = [self._state_of(q) for q in queues]
        self.d.check("send.no_schedule", before == after,
                     lambda: f"send {args!r} answered unsupported but queues {queues} went from {before} "
                             f"to {after} (counters, pending)")

    def _address_queues(self) -> list[str]:
        """The model's queues bound to the machine's address, in declaration order."""
        address = self._broker().addresses.get(self.ADDRESS)
        return list(address.queues) if address is not None else []

    def gets_left(self, consumer: str) -> int:
        """How many more receives the consumer may make: under pull_return_order tag_text a pull
        consumer holds at most PULL_TAG_ORDER_LIMIT gets (beyond it no model predicts the order of
        their return, REDELIVERY-31); otherwise no limit (a large number)."""
        if self.options.pull_return_order != "tag_text":
            return 1 << 30
        state = self._broker().consumers[consumer]
        if not state.no_buffering:
            return 1 << 30
        return max(0, PULL_TAG_ORDER_LIMIT - len(state.received))

    @precondition(lambda self: self.ready and self.open_consumers)
    @rule(which=WHICH)
    def receive(self, which: int) -> None:
        consumer = self.pick_consumer(which)
        if consumer not in self.open_consumers or not self.gets_left(consumer):
            return
        expected, actual = self.d.both_values("receive", consumer, compare=self.receive_check(consumer))
        self.received(consumer, expected, actual)

    def receive_check(self, consumer: str) -> str:
        """The check a receive is compared under: DELIVERY-26 / DELIVERY-25 where the consumer's queue
        has a single active consumer or a consumer priority, else receive.id."""
        queue = self.consumer_args[consumer]["queue"]
        if queue in self.single_active:
            return "receive.single_active"
        return "receive.priority" if queue in self.prioritised else "receive.id"

    def received(self, consumer: str, expected: str | None, actual: str | None) -> None:
        """Model-free checks of what the implementation delivered, and the delivery count it shows."""
        queue = self.consumer_args[consumer]["queue"]
        if actual is not None:
            self.d.check("delivery.sent_only", actual in self.sent,
                         lambda: f"{consumer} received {actual!r}, which was never sent")
            if not self._shares_listing(queue):  # DELIVERY-12: each consumer walks the whole list
                self.d.check("delivery.acked_not_redelivered", (queue, actual) not in self.acked,
                             lambda: f"{consumer} received {actual!r} again after it was acknowledged")
            self.delivered.setdefault(queue, set()).add(actual)
            if not self._shares_listing(queue):
                others = [c for c in self.consumers_on(queue) if c != consumer and c in self.open_consumers]
                other = next((c for c in others if actual in self._delivering(c)), None)
                self.d.check("delivery.one_place", other is None,
                             lambda: f"{consumer} received {actual!r} while it is still delivering to "
                                     f"{other}")
        if expected is not None and self.can("delivery_count"):
            observed = self.d.observe_if_observable("delivery_count", queue, expected)
            if observed is not None:  # None: the adapter cannot see this message's count now
                want, got = observed
                # the implementation's count, for the history's delivery-count monotonicity check
                self.d.observe("delivery_count", queue, {"id": expected, "count": got})
                self.d.expect_equal("delivery_count", want, got, f"delivery count of {expected}: ")

    def _ack_target(self, which: int, index: int) -> tuple[str, str] | None:
        candidates = [c for c in sorted(self.open_consumers) if self._held(c)]
        if not candidates:
            return None
        consumer = candidates[which % len(candidates)]
        ids = self._held(consumer)
        return consumer, list(ids)[index % len(ids)]

    @precondition(lambda self: self.ready and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def ack(self, which: int, index: int) -> None:
        target = self._ack_target(which, index)
        if target is None:
            return
        consumer, msg_id = target
        if index == DELETE_INDEX and self.DRAWS_DELETE and self.can("delete"):
            self.delete(consumer, msg_id, which)
            return
        if index == NACK_LATER_INDEX and self.can("nack", "nack_delay"):
            self.nack_later(consumer, msg_id)
            return
        cumulative = bool(self.consumer_args[consumer].get("cumulative_ack"))
        _, answer = self.d.both_values("ack", {"consumer": consumer, "id": msg_id},
                                       compare="ack.cumulative" if cumulative else "ack.result")
        self._acked(consumer, msg_id, answer)
        if cumulative:  # DELIVERY-11: every earlier delivery of the consumer is acknowledged too
            self.compare_counter("ack.cumulative", self.consumer_args[consumer]["queue"], "delivering_count",
                                 "acknowledged", "message_count")

    def delete(self, consumer: str, msg_id: str, which: int) -> None:
        """DELIVERY-31..33 (drawn within `ack`: no new rule, so adapters without delete explore as
        before): delete one message by id, the held one (`which` even: found under a `stored` scope,
        not found under `listed`) or the last one sent (often still pending, or already gone); the
        answer is compared, and what it removed by every later step (counters, pending order, what is
        received, an ack of the deleted message, the final drain's accounting)."""
        queue = self.consumer_args[consumer]["queue"]
        target = msg_id if which % 2 == 0 else f"m{self.counter}"
        _, answer = self.d.both_values("delete", {"queue": queue, "id": target}, compare="delete.result")
        if answer is True:  # DELIVERY-21: it left by the delete (killed, or acknowledged on Artemis)
            self.deleted.add((queue, target))

    def nack_later(self, consumer: str, msg_id: str) -> None:
        """REDELIVERY-28 (drawn within `ack`: no new rule, so adapters without nack_delay explore
        exactly as before): -NAK a held message with a delay beyond any example (a real broker's
        clock runs ahead of the model's, so a boundary inside the example would race), then receive:
        the message stays pending acknowledgement and out of the redelivery queue, so the receive
        does not give it back (a broker that ignored the delay would)."""
        self.d.both("nack", {"consumer": consumer, "id": msg_id, "delay_ms": NAK_DELAY_BEYOND_MS},
                    compare="nack.delay")
        expected, actual = self.d.both_values("receive", consumer, compare="nack.delay")
        self.received(consumer, expected, actual)

    def _acked(self, consumer: str, msg_id: str, answer: Any) -> None:
        if answer == "ok":  # only what the implementation says it acknowledged (DELIVERY-7)
            self.acked.add((self.consumer_args[consumer]["queue"], msg_id))
            self.acked_by.append((consumer, msg_id))

    # ------------------------------------------------------------------ several consumers
    def can_open_consumer(self) -> bool:
        """Another consumer fits: the machine has one to copy and fewer than three per queue."""
        return bool(self.ready and self.consumer_args
                    and len(self.consumer_args) < MAX_CONSUMERS * len(self.QUEUES))

    @precondition(can_open_consumer)
    @rule(which=WHICH, mode=MODE_INDEX)
    def open_consumer(self, which: int, mode: int) -> None:
        """Another consumer on a queue that has one (up to three), in a mode of its own; with
        CONSUMER_ORDER and the capability, a consumer priority 0-2 (DELIVERY-25, from the mode's
        round: :func:`.consumers.mode_round`)."""
        from .consumers import consumer_settings, mode_round, pulls

        queues = sorted({a["queue"] for a in self.consumer_args.values()})
        queue = queues[which % len(queues)]
        taken = self.consumers_on(queue)
        settings = consumer_settings(self.caps, mode)
        independent = self.can("independent_consumers") or (
            queue in self.single_active and self.can("independent_single_active"))  # DELIVERY-26
        if taken and not independent:
            # e.g. JetStream: the consumers of a queue share one durable, whose max_ack_pending caps
            # them together; the model can say that only of consumers without a max_unacked
            settings = {k: v for k, v in self.consumer_args[taken[0]].items() if k not in ("name", "queue")}
            if settings.get("max_unacked") is not None:
                return
        if len(taken) >= MAX_CONSUMERS or settings is None:
            return
        if queue in self.single_active and pulls(settings):
            return  # DELIVERY-26: no pull consumers on a single active consumer queue
        if self.CONSUMER_ORDER and self.can("consumer_priority"):
            priority = mode_round(self.caps, mode, 3)
            if priority:
                settings["priority"] = priority
                self.prioritised.add(queue)
        self.declare_consumer(queue, f"c-{queue}-{len(taken) + 1}", **settings)

    # ------------------------------------------------------------------ invalid acknowledgements
    def _state_of(self, queue: str) -> tuple[Any, Any]:
        """What the implementation shows of a queue (counters, pending order), where observable."""
        counters = self.adapter.counters(queue) if any(self.can(f"counter:{c}") for c in COUNTERS) else None
        pending = self.adapter.pending_ids(queue) if self.can("pending_order") else None
        return (counters.value if counters is not None and counters.is_ok else None,
                pending.value if pending is not None and pending.is_ok else None)

    def _invalid_target(self, kind: str, which: int, index: int) -> tuple[str, str, str] | None:
        """(op, consumer, id) of an acknowledgement DELIVERY-8 says fails, or None if none exists."""
        open_ = sorted(self.open_consumers)
        if not open_:
            return None
        consumer = open_[which % len(open_)]
        if kind == "second_ack" or kind == "nack_acked":
            done = [(c, m) for c, m in self.acked_by if c in self.open_consumers]
            if not done:
                return None
            consumer, msg_id = done[index % len(done)]
            return ("ack" if kind == "second_ack" else "nack"), consumer, msg_id
        if kind == "never_delivered":
            held = set(self._held(consumer)) | {m for c, m in self.acked_by if c == consumer}
            # DELIVERY-22 by_sequence: a stale token's ack of a message now in a consumer's buffer
            # (dispatched, not yet received) is not modelled (reference_model.invalid_ack)
            states = self._broker().consumers
            buffered = {m for state in states.values() for m in state.buffer} & states[consumer].tokens
            never = sorted(self.sent - held - buffered)
            return "ack", consumer, never[index % len(never)] if never else f"x{index}"
        if kind == "wrong_consumer":
            queue = self.consumer_args[consumer]["queue"]
            mine = set(self._held(consumer))
            others = [(c, m) for c in self.consumers_on(queue) if c != consumer and c in self.open_consumers
                      for m in self._held(c) if m not in mine]
            if not others:
                return None
            return "ack", consumer, others[index % len(others)][1]
        # as never_delivered: a message the reopened consumer now has buffered is not modelled
        states = self._broker().consumers
        before = [(c, m) for c, m in self.held_at_close
                  if c in self.open_consumers and m not in self._held(c)
                  and not (m in states[c].buffer and m in states[c].tokens)]
        if not before:
            return None
        consumer, msg_id = before[index % len(before)]
        return "ack", consumer, msg_id

    def sends_invalid_acks(self) -> bool:
        """With the capability invalid_ack the answer is the profile's (DELIVERY-22); without it, in a
        machine with REFUSED_ACKS: `failed`, nothing changes (the model is held to invalid_ack refused
        for such an adapter, whatever its profile: adapters.contract.model_for)."""
        if self.can("invalid_ack"):
            return True
        return self.REFUSED_ACKS and self.options.invalid_ack == "refused"

    @precondition(lambda self: self.ready and self.open_consumers and self.sends_invalid_acks())
    @rule(kind=st.sampled_from(INVALID_ACKS), which=WHICH, index=WHICH)
    def ack_invalid(self, kind: str, which: int, index: int) -> None:
        """DELIVERY-8: an acknowledgement that should fail; a failed one changes nothing. With the
        capability invalid_ack the adapter sends it to the implementation and reports the broker's
        answer and its consequences (DELIVERY-22, checks ack.invalid, ack.failed_no_effect); without
        it (REFUSED_ACKS, a refusing profile) the adapter may refuse it itself, but the answer must
        be `failed` and nothing may change (checks ack.refused, ack.refused_no_effect): an adapter
        or implementation that accepts a second ack fails either way."""
        if kind == "nack_acked" and (not self.can("nack") or self.nack_unmodelled()):
            kind = "second_ack"
        target = self._invalid_target(kind, which, index)
        if target is None:
            return
        op, consumer, msg_id = target
        queue = self.consumer_args[consumer]["queue"]
        # DELIVERY-22: where a refused ack has consequences (RabbitMQ's 406 closes the channel and
        # returns its messages) the counters compare them with the model instead
        refused_is_inert = self.options.invalid_ack == "refused"
        answered, no_effect = (("ack.invalid", "ack.failed_no_effect") if self.can("invalid_ack") else
                               ("ack.refused", "ack.refused_no_effect"))
        before = self._state_of(queue) if refused_is_inert else None
        _, answer = self.d.both_values(op, {"consumer": consumer, "id": msg_id}, compare=answered)
        if answer != "failed":
            if op == "ack":
                self._acked(consumer, msg_id, answer)
            return
        if not refused_is_inert:
            return
        after = self._state_of(queue)
        self.d.check(no_effect, before == after,
                     lambda: f"{op} of {msg_id!r} by {consumer} answered failed but queue {queue} went from "
                             f"{before} to {after} (counters, pending)")

    # ------------------------------------------------------------------ batches (long queues)
    @precondition(lambda self: self.ready)
    @rule(count=BATCH)
    def send_batch(self, count: int) -> None:
        ids = [self.next_id() for _ in range(count)]
        self.sent.update(ids)
        pairs = self.d.both_batch("send_batch", {"to": self.ADDRESS, "ids": ids, "size": 100},
                                  self.send_check)
        for msg_id, (_, answer) in zip(ids, pairs, strict=False):
            self.note_send(msg_id, answer)

    @precondition(lambda self: self.ready and self.open_consumers)
    @rule(which=WHICH, count=BATCH)
    def receive_batch(self, which: int, count: int) -> None:
        consumer = self.pick_consumer(which)
        if consumer not in self.open_consumers:
            return
        count = min(count, self.gets_left(consumer))
        if not count:
            return
        self.d.both_batch("receive_batch", {"consumer": consumer, "count": count}, "receive.id",
                          after=lambda expected, actual: self.received(consumer, expected, actual))

    @precondition(lambda self: self.ready and self.any_unacked())
    @rule(which=WHICH)
    def ack_batch(self, which: int) -> None:
        """Acknowledge everything one consumer has received (the model's view), as one step."""
        candidates = [c for c in sorted(self.open_consumers) if self._held(c)]
        if not candidates:
            return
        consumer = candidates[which % len(candidates)]
        if which == PURGE_WHICH and self.can("purge"):
            # RING-29 (drawn within ack_batch: no new rule, so adapters without purge explore exactly
            # as before): purge the queue instead; its answer (the number removed) is compared, and
            # what it removed by every later step (counters, consumer state, what is received)
            self.d.both("purge", self.consumer_args[consumer]["queue"], compare="purge.result")
            return
        ids = list(self._held(consumer))
        for msg_id, (_, answer) in zip(ids, self.d.both_batch(
                "ack_batch", {"consumer": consumer, "ids": ids}, "ack.result"), strict=False):
            self._acked(consumer, msg_id, answer)

    @precondition(lambda self: self.ready and self.open_consumers)
    @rule(which=WHICH)
    def close_and_reopen(self, which: int) -> None:
        consumer = self.pick_consumer(which)
        if consumer in self.open_consumers:
            self.reopen(consumer, which)

    def reopen(self, consumer: str, which: int) -> None:
        """Close the open `consumer` (close_consumer: `which` may choose its session's close) and open
        it again with its arguments."""
        self.held_at_close.extend((consumer, m) for m in self._held(consumer))
        self.close_consumer(consumer, which)
        self.open_consumers.discard(consumer)
        self.d.both("consumer", self.consumer_args[consumer])
        self.open_consumers.add(consumer)

    def _byte_window(self, queue: str) -> bool:
        """REDELIVERY-11: an open consumer of `queue` dispatches by byte credit (capability
        window_bytes; a window of n > 0 bytes, the default one included, and no message window)."""
        if not self.can("window_bytes"):
            return False
        return any(self.consumer_args[c].get("window_bytes", 1) > 0
                   and self.consumer_args[c].get("window_messages") is None
                   for c in self.consumers_on(queue) if c in self.open_consumers)

    def close_consumer(self, consumer: str, which: int) -> None:
        """The close of close_and_reopen (the ring and redelivery machines also close sessions)."""
        self.d.both("close", consumer)

    def compare_counter(self, check: str, queue: str, *names: str) -> None:
        """Compare counters of `queue` under `check` (those the adapter shows, in this state)."""
        shown = [name for name in names if self.can(f"counter:{name}")]
        if not shown:
            return
        observed = self.d.observe_if_observable("counters", queue)
        if observed is not None:
            for name in shown:
                self.d.expect_equal(check, observed[0][name], observed[1].get(name),
                                    f"queue {queue} {name}: ", field=name)

    def compare_delivery_counts(self, check: str, queue: str, ids: list[str]) -> None:
        """Compare the delivery counts of `ids` in `queue` under `check` (capability delivery_count)."""
        if not self.can("delivery_count"):
            return
        for msg_id in ids:
            observed = self.d.observe_if_observable("delivery_count", queue, msg_id)
            if observed is not None:
                self.d.expect_equal(check, observed[0], observed[1], f"delivery count of {msg_id}: ")

    # ------------------------------------------------------------------ invariants
    @invariant()
    def counters_agree(self) -> None:
        if not self.ready:
            return
        for queue in self.QUEUES:
            shown = self.compare_counters(queue)
            if shown is not None and "delivering_count" in shown and self._byte_window(queue):
                # REDELIVERY-11: what a byte window let the implementation dispatch (credit)
                self.d.expect_equal("window.dispatched", self._broker().counters(queue).delivering_count,
                                    shown["delivering_count"], f"queue {queue} delivering_count: ",
                                    field="delivering_count")
            if shown is not None and "delivering_count" in shown and not self.options.evict_unacked:
                held = sum(len(self._held(c)) for c in self.open_consumers
                           if self.consumer_args[c]["queue"] == queue)
                self.d.check("ring.unacked_never_evicted", shown["delivering_count"] >= held,
                             lambda q=queue, n=shown["delivering_count"], h=held:
                                 f"queue {q} shows {n} delivering but consumers hold {h} unacknowledged "
                                 "messages")
        if self.can("consumer_state"):  # DELIVERY-27..30: a JetStream profile's observations
            for queue in self.QUEUES:
                compare_stream_state(self.d, self.caps, queue)
        if self.can("pending_order"):
            for queue in self.QUEUES:
                observed = self.d.observe_if_observable("pending_ids", queue)
                if observed is not None:
                    self.check_one_place(queue, observed[1])
                    self.d.expect_equal("pending.order", *observed, f"pending of {queue}: ")

    def check_one_place(self, queue: str, pending: list[str]) -> None:
        """DELIVERY-15, model-free on what the implementation lists as pending (before it is compared
        with the model): no id twice, and none that a consumer of the queue holds."""
        if self._shares_listing(queue):
            return
        listed = set(pending)
        twice = sorted({m for m in pending if pending.count(m) > 1}) if len(listed) < len(pending) else []
        self.d.check("pending.one_place", not twice,
                     lambda: f"queue {queue} lists {twice} as pending more than once: {pending}")
        held = [(c, m) for c in self.consumers_on(queue) if c in self.open_consumers
                for m in sorted(self._delivering(c) & listed)]
        self.d.check("pending.one_place", not held,
                     lambda: f"queue {queue} lists as pending {[m for _, m in held]}, which "
                             f"{sorted({c for c, _ in held})} hold(s) delivering: {pending}")
