"""Retention: one stream address with several durable consumers under Limits, Interest or WorkQueue.

Each example declares the address ``s`` with a retention drawn once, joins up to three queues (one
pull consumer each), sends, receives, acknowledges, NAKs and terminates, and lets queues leave. After
every step it compares the stream's stored messages (``call("retention_state", address=...)``) under
a check of the retention (RETENTION-1/5/10, after a leave RETENTION-2/7, after a terminate RETENTION-8,
after a send with no consumer RETENTION-4) and each queue's consumer counts (RETENTION-11). With
``pull_batch`` a consumer also pulls batches within a byte budget (DELIVERY-38..40): messages have
sizes of 1 to 3 units. With ``priority_overflow`` a queue may join with the overflow priority policy
(ADR-42), and its fetches name ``min_pending`` or ``min_ack_pending`` thresholds (DELIVERY-41..44;
both at once only where the server takes either, ``js:overflow_either_threshold``); with
``priority_pinned`` one with the pinned_client policy, which gets a second pull client, and is now and
then unpinned (DELIVERY-45..47).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..base import ConformanceMachine
from ..checks import Checks, check
from ..driver import Inconclusive

ADDRESS = "s"
MAX_QUEUES = 3
MAX_MESSAGES = 12
WHICH = st.integers(min_value=0, max_value=7)
SIZES = st.sampled_from((1, 1, 2, 3))
#: DELIVERY-38..40: a fetch's batch and byte budget (0: none), in the message sizes' units
BATCHES = st.integers(min_value=1, max_value=4)
BUDGETS = st.sampled_from((0, 1, 2, 3, 5))
#: DELIVERY-41..44: an overflow fetch's thresholds (0: none)
THRESHOLDS = st.sampled_from((0, 0, 1, 2, 3, 5))
#: DELIVERY-43: the nats adapter's gate of both thresholds at once (either suffices from 2.12.5)
EITHER_GATE = "js:overflow_either_threshold"
#: DELIVERY-41..47: the priority policy a queue joins with (None: none), each with its capability
PRIORITIES = st.sampled_from((None, "overflow", "pinned_client"))
NEEDS = {"overflow": "priority_overflow", "pinned_client": "priority_pinned"}
#: what the consumer counts are compared on (their sequences are per queue in the model, per stream in
#: JetStream: not compared here)
COUNT_FIELDS = ("num_pending", "num_ack_pending", "num_redelivered")

#: one stream address with several durable consumers: the stream's stored messages under the check of
#: the step before (stream.<policy>, leave.<policy>), each consumer's counts (consumer.counts); a pull
#: request for a batch within a byte budget (DELIVERY-38..40; the nats adapter offers pull_batch from
#: 2.9.0, known once connected, so these name no need), an overflow queue's thresholds (DELIVERY-41..44)
#: and the clients of a pinned_client queue (DELIVERY-45..47)
RETENTION_CHECKS = Checks(
    check("send.result", "DELIVERY-2"), check("send.accepted", "DELIVERY-2"),
    check("join.result", "RETENTION-3"), check("join.accepted", "RETENTION-3"),
    check("join.workqueue", "RETENTION-9"), check("consumer.accepted", "DELIVERY-5"),
    check("receive.id", "RETENTION-3"), check("receive.late", "RETENTION-6", "RETENTION-3"),
    check("receive.accepted", "RETENTION-3"),
    check("ack.result", "DELIVERY-8"), check("ack.accepted", "DELIVERY-8"),
    check("nack.result", "DELIVERY-8", needs=("nack",)), check("nack.accepted", "DELIVERY-8"),
    check("close.accepted", "RETENTION-3"), check("leave.accepted", "RETENTION-7", "RETENTION-2"),
    check("stream.limits", "RETENTION-1"), check("stream.interest", "RETENTION-5", "RETENTION-6"),
    check("stream.workqueue", "RETENTION-10"), check("stream.workqueue_join", "RETENTION-9", "RETENTION-10"),
    check("send.no_interest", "RETENTION-4"),
    check("leave.limits", "RETENTION-2", "RETENTION-1"), check("leave.interest", "RETENTION-7"),
    check("term.interest", "RETENTION-8", "RETENTION-5"),
    check("consumer.counts", "RETENTION-11", needs=("consumer_state",)),
    check("fetch.batch", "DELIVERY-38"), check("fetch.budget", "DELIVERY-39", "DELIVERY-38"),
    check("fetch.too_large", "DELIVERY-40", "DELIVERY-39"), check("fetch.accepted", "DELIVERY-38"),
    check("fetch.min_pending", "DELIVERY-41", "DELIVERY-44"),
    check("fetch.min_ack_pending", "DELIVERY-42", "DELIVERY-44"),
    check("fetch.either_threshold", "DELIVERY-43", "DELIVERY-41", "DELIVERY-42"),
    check("receive.pinned", "DELIVERY-46", "DELIVERY-45", "DELIVERY-47"),
    check("fetch.pinned", "DELIVERY-46", "DELIVERY-45", "DELIVERY-47"),
    check("unpin.accepted", "DELIVERY-45"))


class RetentionMachine(ConformanceMachine):
    area = "retention"
    CHECKS = RETENTION_CHECKS
    REQUIRES = ("retention", "consumer_pull")

    def __init__(self) -> None:
        super().__init__()
        self.ready = False
        self.policy = "limits"
        self.joined = 0
        self.sent = 0
        #: queue -> its consumer; queues that joined after a send (RETENTION-6)
        self.queues: dict[str, str] = {}
        #: DELIVERY-41..47: each queue's priority policy (absent: none); a pinned_client queue's
        #: second pull client
        self.priority: dict[str, str] = {}
        self.second: dict[str, str] = {}
        self.late: set[str] = set()
        #: the check the next stream comparison reports under (the step that ran before it)
        self.stream_check = ""

    def _broker(self) -> Any:
        return self.d.model.world.broker

    @initialize(policy=st.sampled_from(("limits", "interest", "workqueue")),
                queues=st.integers(min_value=0, max_value=2), priority=PRIORITIES)
    def setup(self, policy: str, queues: int, priority: str | None) -> None:
        """The stream and its first queues (a WorkQueue stream's one consumer joins first: a send
        before it is not modelled), of the overflow priority policy or none."""
        self.policy = policy
        self.d.both("address", {"name": ADDRESS, "retention": policy})
        self.ready = True
        for _ in range(max(queues, int(policy == "workqueue"))):
            self._join(priority)

    @precondition(lambda self: self.ready and self.joined < MAX_QUEUES + 1)
    @rule(priority=PRIORITIES)
    def join(self, priority: str | None) -> None:
        self._join(priority)

    def _join(self, priority: str | None) -> None:
        """RETENTION-9: a second consumer of a WorkQueue stream is refused; else a new queue with its
        pull consumer (RETENTION-6: after sends it starts at the next message); with the capability of
        `priority` the queue has that priority policy (DELIVERY-41..47)."""
        self.joined += 1
        name = f"q{self.joined}"
        check = "join.workqueue" if self.policy == "workqueue" else "join.result"
        args = {"name": name, "address": ADDRESS}
        if priority is not None and not self.can(NEEDS[priority]):
            priority = None
        if priority is not None:
            args["priority"] = priority
        answer = self.d.both("join", args, compare=check)
        self.stream_check = "stream.workqueue_join" if self.policy == "workqueue" else ""
        if answer != "created":
            return
        consumer = f"c-{name}"
        self.d.both("consumer", {"name": consumer, "queue": name, "window_bytes": 0})
        self.queues[name] = consumer
        if priority is not None:
            self.priority[name] = priority
        if priority == "pinned_client":
            self.second[name] = f"c-{name}-b"
            self.d.both("consumer", {"name": self.second[name], "queue": name, "window_bytes": 0})
        if self.sent:
            self.late.add(name)

    @precondition(lambda self: self.ready and self.sent < MAX_MESSAGES)
    @rule(size=SIZES)
    def send(self, size: int) -> None:
        self.sent += 1
        self.d.both("send", {"to": ADDRESS, "id": f"m{self.sent}", "size": size}, compare="send.result")
        self.stream_check = "send.no_interest" if self.policy == "interest" and not self.queues else ""

    def _consumer(self, which: int) -> tuple[str, str]:
        clients = [*sorted(self.queues.items()), *sorted(self.second.items())]
        return clients[which % len(clients)]

    @precondition(lambda self: self.ready and self.queues)
    @rule(which=WHICH)
    def receive(self, which: int) -> None:
        """RETENTION-3 (RETENTION-6 for a queue that joined after sends): each consumer receives the
        messages sent after it joined, in order."""
        queue, consumer = self._consumer(which)
        check = ("receive.pinned" if self.priority.get(queue) == "pinned_client"
                 else "receive.late" if queue in self.late else "receive.id")
        self.d.both("receive", consumer, compare=check)
        self.stream_check = ""

    @precondition(lambda self: self.ready and self.queues and self.can("pull_batch"))
    @rule(which=WHICH, batch=BATCHES, max_bytes=BUDGETS, min_pending=THRESHOLDS,
          min_ack_pending=THRESHOLDS)
    def fetch(self, which: int, batch: int, max_bytes: int, min_pending: int, min_ack_pending: int) -> None:
        """DELIVERY-38 (a batch), DELIVERY-39 (within a byte budget), DELIVERY-40 (the next message
        larger than the budget: nothing); on an overflow queue, thresholds instead of a budget:
        DELIVERY-41 (min_pending), DELIVERY-42 (min_ack_pending), DELIVERY-43 (both: either)."""
        queue, consumer = self._consumer(which)
        args: dict[str, Any] = {"consumer": consumer, "batch": batch, "max_bytes": max_bytes}
        check = "fetch.batch"
        if self.priority.get(queue) == "pinned_client":
            # DELIVERY-45..47 (2.14 gives a pin back when max_bytes refuses the message it came with)
            args["max_bytes"] = max_bytes = 0
            check = "fetch.pinned"
        elif self.priority.get(queue) == "overflow" and (min_pending or min_ack_pending):
            offered = frozenset(self.adapter.capabilities)  # a server older than the gate: one only
            if min_pending and EITHER_GATE not in offered and any(c.startswith("js:") for c in offered):
                min_ack_pending = 0
            args.update(max_bytes=0, min_pending=min_pending, min_ack_pending=min_ack_pending)
            check = ("fetch.either_threshold" if min_pending and min_ack_pending
                     else "fetch.min_pending" if min_pending else "fetch.min_ack_pending")
        elif max_bytes:
            if self._broker().queues[queue].pending.returned_ids:
                # a budget spent to the unit leaves the server the padding's few bytes, so it weighs
                # one message more: a redelivery it does not fit goes to the back (DELIVERY-44), where
                # the model, spent exactly, stops; one message per request keeps them apart
                args["batch"] = batch = 1
            size = self._broker().next_size(consumer)
            check = "fetch.too_large" if size is not None and size > max_bytes else "fetch.budget"
        self.d.both("fetch", args, compare=check)
        self.stream_check = ""

    @precondition(lambda self: self.ready and "pinned_client" in self.priority.values())
    @rule(which=WHICH)
    def unpin(self, which: int) -> None:
        """DELIVERY-45: the pin of a pinned_client queue is cleared."""
        pinned = sorted(q for q, p in self.priority.items() if p == "pinned_client")
        self.d.both("unpin", pinned[which % len(pinned)])
        self.stream_check = ""

    def _held(self, consumer: str) -> list[str]:
        return list(self._broker().unacked_ids(consumer))

    @precondition(lambda self: self.ready and self.queues)
    @rule(which=WHICH, index=WHICH, how=st.sampled_from(("ack", "ack", "nak", "term", "nak_all")))
    def settle(self, which: int, index: int, how: str) -> None:
        """An ack, a NAK or a terminate (RETENTION-8) of a message the consumer holds, or a NAK of
        each one it holds (several waiting for redelivery at once: DELIVERY-44)."""
        _, consumer = self._consumer(which)
        held = self._held(consumer)
        if not held:
            return
        if how == "nak_all":
            for msg in held:
                self.d.both("nack", {"consumer": consumer, "id": msg}, compare="nack.result")
            self.stream_check = ""
            return
        msg = held[index % len(held)]
        if how == "ack":
            self.d.both("ack", {"consumer": consumer, "id": msg}, compare="ack.result")
            self.stream_check = ""
        else:
            self.d.both("nack", {"consumer": consumer, "id": msg, "requeue": how == "nak"},
                        compare="nack.result")
            self.stream_check = "term.interest" if how == "term" and self.policy == "interest" else ""

    @precondition(lambda self: self.ready and self.queues and self.policy != "workqueue")
    @rule(which=WHICH)
    def leave(self, which: int) -> None:
        """RETENTION-2 / RETENTION-7: the queue's consumer closes and its durable is deleted."""
        queue, _ = self._consumer(which)
        self.d.both("close", self.queues.pop(queue))
        if queue in self.second:
            self.d.both("close", self.second.pop(queue))
        self.d.both("leave", queue)
        self.late.discard(queue)
        self.priority.pop(queue, None)
        self.stream_check = f"leave.{self.policy}"

    @precondition(lambda self: self.ready and not self.queues and self.sent >= MAX_MESSAGES
                  and self.joined > MAX_QUEUES)
    @rule()
    def idle(self) -> None:
        """Nothing more happens (every queue left and every message sent: the example may end)."""

    # ------------------------------------------------------------------ invariants
    @invariant()
    def stream_agrees(self) -> None:
        """The stream's stored messages (under the check of the step before) and each queue's consumer
        counts (RETENTION-11)."""
        if not self.ready:
            return
        check = self.stream_check or f"stream.{self.policy}"
        expected = self.d.model.call("retention_state", address=ADDRESS)
        actual = self.adapter.call("retention_state", address=ADDRESS)
        if not actual.is_ok:
            raise Inconclusive(f"retention_state: the adapter could not answer: {actual.error}")
        self.d.observe("retention_state", ADDRESS, actual.value)
        self.d.expect_equal(check, expected.value["messages"], actual.value.get("messages"),
                            f"stream {ADDRESS} ({self.policy}) messages: ", field="messages")
        if not self.can("consumer_state"):
            return
        for queue in sorted(self.queues):
            want = self.d.model.call("consumer_state", queue=queue)
            got = self.adapter.call("consumer_state", queue=queue)
            if not got.is_ok:
                raise Inconclusive(f"consumer_state: the adapter could not answer: {got.error}")
            self.d.observe("consumer_state", queue, got.value)
            for field in COUNT_FIELDS:
                self.d.expect_equal("consumer.counts", want.value[field], got.value.get(field),
                                    f"queue {queue} consumer {field}: ", field=field)
