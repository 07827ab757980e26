"""Message expiry: queue and per-message TTLs on the clock, what leaves, where it goes (EXPIRY-1..7).

Queue q (on address q) has a message TTL or none (a set-up draw), and the dead-letter address dlx
(queue dlq) where the profile dead-letters. Sends carry no TTL, a short or a long one (where the
adapter has per-message TTLs); time moves in steps of ADVANCE_MS. The TTLs sit at least 500 ms from
any multiple of ADVANCE_MS, so a real broker whose clock runs a little ahead of the model's (the
adapter sleeps, and each operation takes its time) removes the same messages: after every advance the
stored counts of q and dlq are compared (`expiry.counts`); consumers receive, ack, nack and close
in between, so held, returned and requeued messages meet their expiry too. Where the adapter has
`expiry_address`, a queue without a queue TTL (per-message TTLs only) sends what expires to dlx as its
expiry address (EXPIRY-6: dlq's counts under `expiry.to_address`); with a queue TTL it has none, and
an expired message is dropped.

Where the adapter has `duplicate_id` (EXPIRY-8), sends with a TTL carry a duplicate id derived, not
drawn (other adapters' draws stay the same): a short TTL's is x0, x1, ... in turn, every second long
TTL's repeats the last one (a duplicate on q: dropped, `send.duplicate`), the others' is their message
id; with an expiry address the set-up sends d0 of id x0 to dlx, so the first short-TTL message's copy
meets an id dlx has routed and must still arrive there (dlq's counts under `expiry.to_address`).

Against an adapter whose clock is real (``real_time``: it sleeps each advance) the examples are paced,
as the redelivery machine's timed examples are: the set-up ends with an advance that lets the broker's
clock meet the model's, an advance comes after at most STEPS_PER_ADVANCE other steps, an example
advances at most MAX_ADVANCES times and then idles, and the run takes a share of the examples
(REAL_TIME_SHARE). On a logical clock none of this applies.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..base import EXPIRED_COUNTER
from ..checks import Checks, check
from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import QUEUE_CHECKS, WHICH, QueueMachine

ADVANCE_MS = 1500
#: the queue TTL: over after two advances, not after one
QUEUE_TTL_MS = 2000
#: a per-message TTL above 2**31 - 1 ms (about 24.9 days: never over in an example): the AMQP header's
#: ttl is an unsigned 32-bit count of milliseconds, so a broker must not read it as a signed int
#: (EXPIRY-2); whole seconds, as a Nats-TTL must be
LARGE_TTL_MS = 2_147_484_000
#: per-message TTLs: over after one advance, or after three, or never in an example (whole seconds: a
#: JetStream Nats-TTL is whole seconds, at least one)
MESSAGE_TTLS = (1000, 4000, LARGE_TTL_MS)
#: batches stay short here: on a broker every send takes real time while the logical clock stands
#: still, and 25 sends with their confirms and observations ate the 500 ms margin (a campaign measured it)
SHORT_BATCH = st.sampled_from([3, 8])
#: against an adapter whose clock is real (``real_time``: it sleeps each advance) an example advances
#: at most this often (7.5 s: a long message TTL sent after two advances still runs out), so an example
#: costs a bounded real time; on a logical clock advances are free and unbounded
MAX_ADVANCES = 5
#: against a real clock an advance comes after at most this many other steps (their real time is not
#: on the logical clock: a message sent late in a long stretch of steps would expire late on the
#: broker), and once MAX_ADVANCES are spent the example idles after as many
STEPS_PER_ADVANCE = 4
#: against a real clock the set-up ends with an advance this long, off the grid by nothing that
#: matters (no message is stored yet): its declarations took real time the broker's clock has run
SETUP_ADVANCE_MS = 500

#: after each advance the queue's and its dead-letter queue's counts (expiry.counts), dlq as the
#: queue's expiry address (expiry.to_address); the expired counter (base.compare_counters)
EXPIRY_CHECKS = Checks(
    check("expiry.counts", "EXPIRY-1", "EXPIRY-2", "EXPIRY-3", "EXPIRY-4", "EXPIRY-5",
          needs=("counter:message_count",)),
    EXPIRED_COUNTER,
    check("expiry.to_address", "EXPIRY-6", needs=("expiry_address", "counter:message_count")),
    check("send.duplicate", "EXPIRY-8", needs=("duplicate_id",)))


class ExpiryMachine(QueueMachine):
    area = "expiry"
    CHECKS = QUEUE_CHECKS.citing({
        "receive.id": ("DELIVERY-3", "DELIVERY-4", "EXPIRY-4"),
        "counters.message_count": ("DELIVERY-1", "EXPIRY-7"),
        "nack.result": ("DELIVERY-8", "EXPIRY-4")}) | EXPIRY_CHECKS
    QUEUES = ("q", "dlq")
    REQUIRES = ("queues", "advance_time")
    ANY_OF = ("message_ttl", "per_message_ttl")
    #: every example sleeps several seconds against a broker: 1/REAL_TIME_SHARE of the examples there
    REAL_TIME_SHARE = 5

    @initialize(queue_ttl=st.booleans(), mode=MODE_INDEX)
    def setup(self, queue_ttl: bool, mode: int) -> None:
        self.d.both("address", {"name": "dlx"})
        self.d.both("queue", {"name": "dlq", "address": "dlx"})
        queue: dict[str, Any] = {"name": "q"}
        if self.can("message_ttl") and (queue_ttl or not self.can("per_message_ttl")):
            queue["message_ttl_ms"] = QUEUE_TTL_MS
        if self.can("dead_letter"):
            queue["dead_letter"] = "dlx"
        self.expiry_address = "message_ttl_ms" not in queue and self.can("expiry_address")
        if self.expiry_address:  # EXPIRY-6
            queue["expiry_address"] = "dlx"
        self.d.both("queue", queue)
        settings = consumer_settings(self.caps, mode)
        if settings is not None:
            self.declare_consumer("q", **settings)
        self.advances = self.since_advance = 0
        self.paced = bool(getattr(self.adapter, "real_time", False))
        self.max_advances = MAX_ADVANCES if self.paced else 10**9
        self.duplicates = self.can("duplicate_id")  # EXPIRY-8
        self.short_ids = self.long_sends = 0
        self.last_duplicate: str | None = None
        if self.duplicates and self.expiry_address:
            self.d.both("send", {"to": "dlx", "id": "d0", "duplicate_id": "x0"}, compare="send.duplicate")
        if self.paced:
            self.d.both("advance", SETUP_ADVANCE_MS)
        self.ready = True

    @property
    def ready(self) -> bool:
        """Set up, and (against a real clock) not due to advance: every other rule waits."""
        return self._ready and not self._must_advance()

    @ready.setter
    def ready(self, value: bool) -> None:
        self._ready = value

    def _must_advance(self) -> bool:
        return getattr(self, "paced", False) and self.since_advance >= STEPS_PER_ADVANCE

    @invariant()
    def paced_steps(self) -> None:
        """Counts the steps since the last advance (against a real clock)."""
        if getattr(self, "paced", False):
            self.since_advance += 1

    @precondition(lambda self: self._ready and self._must_advance() and self.advances >= self.max_advances)
    @rule()
    def idle(self) -> None:
        """Against a real clock, an example whose advances are spent: nothing more happens."""

    @precondition(lambda self: self.ready and self.can("per_message_ttl"))
    @rule(ttl=st.sampled_from(MESSAGE_TTLS))
    def send_with_ttl(self, ttl: int) -> None:
        msg_id = self.next_id()
        self.sent.add(msg_id)
        args: dict[str, Any] = {"to": self.ADDRESS, "id": msg_id, "ttl_ms": ttl}
        if self.duplicates:
            args["duplicate_id"] = self._duplicate_id(ttl, msg_id)
        _, answer = self.d.both_values("send", args,
                                       compare="send.duplicate" if self.duplicates else "send.result")
        self.note_send(msg_id, answer)

    def _duplicate_id(self, ttl: int, msg_id: str) -> str:
        """EXPIRY-8: the duplicate id of a send with `ttl` (see the module's docstring)."""
        if ttl == MESSAGE_TTLS[0]:
            dup = f"x{self.short_ids}"
            self.short_ids += 1
        elif ttl == MESSAGE_TTLS[1] and self.long_sends % 2 and self.last_duplicate is not None:
            dup = self.last_duplicate
        else:
            dup = msg_id
        if ttl == MESSAGE_TTLS[1]:
            self.long_sends += 1
        self.last_duplicate = dup
        return dup

    @precondition(lambda self: self._ready and self.advances < self.max_advances)
    @rule(times=st.integers(min_value=1, max_value=2))
    def advance(self, times: int) -> None:
        """One or two advances in a row (two outlive the queue TTL, three a long message TTL: a TTL
        combination bug needs a long-lived message to meet both), the counts compared after each;
        at most max_advances in an example."""
        self.since_advance = 0
        for _ in range(min(times, self.max_advances - self.advances)):
            self.advances += 1
            self.d.both("advance", ADVANCE_MS)
            for queue in self.QUEUES:
                if self.can("counter:message_count"):
                    observed = self.d.observe_if_observable("counters", queue)
                    if observed is not None:
                        to_address = self.expiry_address and queue == "dlq"
                        check = "expiry.to_address" if to_address else "expiry.counts"
                        self.d.expect_equal(check, observed[0]["message_count"],
                                            observed[1].get("message_count"),
                                            f"queue {queue} message_count: ", field="message_count")

    @precondition(lambda self: self.ready)
    @rule(count=SHORT_BATCH)
    def send_batch(self, count: int) -> None:
        super().send_batch(count)

    @precondition(lambda self: self.ready and self.can("nack") and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def nack(self, which: int, index: int) -> None:
        """A requeued message keeps its original expiry (EXPIRY-4)."""
        target = self._ack_target(which, index)
        if target is not None:
            self.d.both("nack", {"consumer": target[0], "id": target[1]}, compare="nack.result")
