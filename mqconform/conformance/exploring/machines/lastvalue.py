"""Last-value queues: which message of a value is kept, where, and what the counters say (LASTVALUE-1..10).

Queue q has the last-value key ``lvk``, and is non-destructive as well where the set-up draws it and
the adapter has the feature (LASTVALUE-8, 9). A single send carries one of three values of the key,
or none (LASTVALUE-3); a batch sends messages without the key. Consumers receive, ack and close as
in every queue machine. After the steps that decide which message of a value is kept, the pending
order and the counters the implementation shows are compared with the model under a check of the
step's own:

- a keyed send: `lastvalue.supersede` (LASTVALUE-1, 2, 4), on a non-destructive queue
  `lastvalue.non_destructive` (LASTVALUE-8, 9); a send without the key: `lastvalue.no_key`;
- an ack of a held message whose value has a newer message: `lastvalue.delivering` (LASTVALUE-5);
- a consumer close (what it held returns): `lastvalue.returned` (LASTVALUE-6), or
  `lastvalue.non_destructive`;
- where the adapter has scheduling and a clock: a keyed send due later, and an advance that fires it:
  `lastvalue.scheduled` (LASTVALUE-10).

Every counter reading also compares messageCount without the delivering messages (`lastvalue.count`,
LASTVALUE-7). Nothing here is drawn by another area: their examples are unchanged.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ..checks import Checks, check
from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import QUEUE_CHECKS, WHICH, QueueMachine

KEY = "lvk"
#: the values a keyed send draws from (v0..v2); the draw VALUES itself sends without the key
VALUES = 3
#: the counters each lastvalue.* check compares (those the adapter shows)
COUNTED = ("message_count", "pending_count", "delivering_count", "scheduled_count", "added", "acknowledged",
           "killed", "replaced")
#: the logical set-up time of an example with a clock, and the delays of a scheduled keyed send
START_MS = 1000
SCHEDULE_DELAYS_MS = (10, 20)

#: the pending order and counters after each step that decides which message of a value is kept
LASTVALUE_CHECKS = Checks(
    check("lastvalue.supersede", "LASTVALUE-1", "LASTVALUE-2", "LASTVALUE-4", "RING-15",
          needs=("last_value",)),
    check("lastvalue.no_key", "LASTVALUE-3", needs=("last_value",)),
    check("lastvalue.delivering", "LASTVALUE-5", needs=("last_value",)),
    check("lastvalue.returned", "LASTVALUE-6", "LASTVALUE-4", needs=("last_value",)),
    check("lastvalue.count", "LASTVALUE-7", needs=("last_value", "counter:message_count")),
    check("lastvalue.non_destructive", "LASTVALUE-8", "LASTVALUE-9", "LASTVALUE-1", "DELIVERY-12",
          needs=("last_value", "non_destructive")),
    check("lastvalue.scheduled", "LASTVALUE-10", "LASTVALUE-1",
          needs=("last_value", "scheduling", "advance_time")))


class LastValueMachine(QueueMachine):
    area = "lastvalue"
    CHECKS = QUEUE_CHECKS.citing({
        "receive.id": ("DELIVERY-3", "DELIVERY-4", "LASTVALUE-1", "LASTVALUE-3"),
        "pending.order": ("DELIVERY-3", "LASTVALUE-1", "LASTVALUE-2", "LASTVALUE-3"),
        "counters.message_count": ("DELIVERY-1", "LASTVALUE-7"),
        "counters.replaced": ("RING-15", "LASTVALUE-4")}) | LASTVALUE_CHECKS
    USE_PRIORITIES = True
    REQUIRES = ("queues", "last_value")

    @initialize(non_destructive=st.booleans(), mode=MODE_INDEX)
    def setup(self, non_destructive: bool, mode: int) -> None:
        queue: dict[str, Any] = {"name": "q", "last_value_key": KEY}
        self.non_destructive = non_destructive and self.can("non_destructive")
        if self.non_destructive:
            queue["non_destructive"] = True
        self.value: int | None = None
        self.d.both("queue", queue)
        settings = consumer_settings(self.caps, mode)
        if settings is not None:
            self.declare_consumer("q", **settings)
        self.timed = self.can("scheduling", "advance_time")
        if self.timed:
            self.d.both("advance", START_MS)
        self.ready = True

    # ------------------------------------------------------------------ helpers
    def message_properties(self) -> dict[str, str] | None:
        """The key's value drawn for the send under way (none: a message without the key)."""
        return None if self.value is None else {KEY: f"v{self.value}"}

    def compare_queue(self, check: str) -> None:
        """The pending order and the counters of q, under `check` (what the adapter shows)."""
        if self.can("pending_order"):
            observed = self.d.observe_if_observable("pending_ids", "q")
            if observed is not None:
                self.d.expect_equal(check, *observed, "pending of q: ")
        self.compare_counter(check, "q", *COUNTED)

    def superseded(self, msg_id: str) -> bool:
        """LASTVALUE-5: the model's message `msg_id` of q carries a value whose current message is
        another one (a newer message of its value arrived while it was delivering)."""
        queue = self._broker().queues["q"]
        ref = queue.refs.get(msg_id)
        if ref is None:
            return False
        value = queue.last_value(ref)
        return value is not None and queue.last_values.get(value) is not ref

    # ------------------------------------------------------------------ steps
    @precondition(lambda self: self.ready)
    @rule(value=st.integers(min_value=0, max_value=VALUES), priority=st.sampled_from([4, 4, 0, 9]))
    def send(self, value: int, priority: int) -> None:
        """A send with one of the key's values (or none): LASTVALUE-1..4, 8, 9."""
        self.value = value if value < VALUES else None
        self.do_send(100, priority if self.can("priorities") else 4)
        if self.value is None:
            self.compare_queue("lastvalue.no_key")
        else:
            self.compare_queue("lastvalue.non_destructive" if self.non_destructive else "lastvalue.supersede")
        self.value = None

    @precondition(lambda self: self.ready and self.timed)
    @rule(value=st.integers(min_value=0, max_value=VALUES - 1), delay=st.sampled_from(SCHEDULE_DELAYS_MS))
    def send_scheduled(self, value: int, delay: int) -> None:
        """A keyed send due `delay` ms from now (LASTVALUE-10: not current before it is due)."""
        self.value = value
        self.do_send(100, 4, scheduled_at=int(self._broker().now_ms) + delay)
        self.value = None
        self.compare_queue("lastvalue.scheduled")

    @precondition(lambda self: self.ready and self.timed)
    @rule(ms=st.sampled_from([10, 25]))
    def advance(self, ms: int) -> None:
        """Time moves: the keyed messages that fall due become their values' current ones."""
        self.d.both("advance", ms)
        self.compare_queue("lastvalue.scheduled")

    @precondition(lambda self: self.ready and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def ack(self, which: int, index: int) -> None:
        """An ack; of a message a newer one of its value superseded while it was held: LASTVALUE-5."""
        target = self._ack_target(which, index)
        stale = target is not None and self.superseded(target[1])
        super().ack(which, index)
        if self.non_destructive:
            self.compare_queue("lastvalue.non_destructive")
        elif stale:
            self.compare_queue("lastvalue.delivering")

    def close_consumer(self, consumer: str, which: int) -> None:
        """A close: what the consumer held returns (LASTVALUE-6; on a non-destructive queue it never
        left, LASTVALUE-8)."""
        super().close_consumer(consumer, which)
        self.compare_queue("lastvalue.non_destructive" if self.non_destructive else "lastvalue.returned")

    def check_accounted(self, queue: str) -> None:
        """DELIVERY-21 as in every queue machine, with what the drain left stored counted as kept:
        messageCount leaves delivering messages out here (LASTVALUE-7), while a consumer that takes
        one message per round may still hold one after the drain's rounds."""
        delivered = self.delivered.get(queue, set())
        lost = [m for m in self.accepted if m not in delivered and (queue, m) not in self.deleted]
        model = self._broker().counters(queue)
        gone = {"replaced": model.replaced, "killed": model.killed, "expired": model.expired}
        if lost and all(self.can(f"counter:{name}") for name in gone):
            shown = self.adapter.counters(queue)
            if shown.is_ok:
                gone = {name: int(shown.value.get(name, 0)) for name in gone}
        kept = model.pending_count + model.delivering_count + model.scheduled_count + model.paged_count
        accounted = sum(gone.values()) + kept
        self.d.check("drain.accounted", len(lost) <= accounted,
                     lambda: f"after the final drain of queue {queue}, {len(lost)} accepted message(s) never "
                             f"came out ({lost[:10]}) but only {accounted} are accounted for ({gone}, "
                             f"{kept} still stored)")

    def compare_counters(self, queue: str) -> dict[str, int] | None:
        """As every machine; also LASTVALUE-7 on the same reading (messageCount without delivering)."""
        shown = super().compare_counters(queue)
        if shown is not None and "message_count" in shown:
            expected, actual = self.last_counters
            for name in ("message_count", "delivering_count"):
                if name in actual:
                    self.d.expect_equal("lastvalue.count", expected[name], actual[name],
                                        f"queue {queue} {name}: ", field=name)
        return shown
