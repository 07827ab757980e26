"""Redelivery: delivery counts, undo on cancel, delay on rollback not on close, dead letters.

Deep redelivery within a short budget: set-ups are biased toward short delays with a multiplier and
a cap, and `redeliver` takes one message round a whole redelivery in one step (receive, nack or
rollback, then advance to its due time or 1 ms before it), so the 4th-6th delivery of one message,
where a multiplier or cap bug shows, is a few steps deep.

The delivery limit (REDELIVERY-5, 21, 26): the queue declares 1-6 attempts or none (the profile's
default); after each `redeliver` the delivery count of the message and the queue's stored count are
compared (`redelivery.limit`): a dead-lettered message is gone, a JetStream one past max_deliver
stays stored with its count.

Timed examples (REDELIVERY-27, 32..34; capabilities ack_wait and advance_time, as the expiry machine
does with real time): about one set-up in four gives the consumer an ack wait of 300 ms or, with
`backoff`, a BackOff list. Every wait, BackOff value and short NAK delay is 100 ms off a multiple of
TIMED_STEP_MS and time moves only in multiples of it, so a real broker whose clock runs a little
ahead of the model's (the adapter sleeps) redelivers the same messages; such an example advances at
most TIMED_BUDGET_MS in all, makes no redelivery-delay round and no restart, and its consumers have no
max_unacked (a pull at the cap waits in real time). After TIMED_STEPS_PER_ADVANCE other steps only
`wait_out` is enabled (the machine is not `ready` for anything else), so the real time of the steps
between two advances stays small; once the budget is spent the example only idles. `wait_out` advances
and then receives (`receive.ack_wait` / `receive.backoff*`); `in_progress` is +WPI and `nack_short`
a -NAK with a 300 ms delay.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..checks import Checks, check
from ..consumers import MODE_INDEX, consumer_settings, pulls
from ..queue_machine import DELETE_CHECKS, QUEUE_CHECKS, WHICH
from ..restart import RESTART_CHECKS, RestartSteps
from .ring import NACK_VOCABULARY, RETURN_CHECKS, RING_CHECKS, RingMachine

#: the longest advance a redelivery round makes (the drawn delays and caps are at most 60 ms x the
#: multiplier; a far timer such as a JetStream ack wait is left to the `advance` rule)
ROUND_ADVANCE_MAX_MS = 1000
#: timed examples: time moves in multiples of this; every deadline is half of it off the grid
TIMED_STEP_MS = 200
#: every wait and delay is half a grid step off a grid point: a deadline is 100 ms from the checks
#: before and after it; the adapter's operations between two advances (at most
#: TIMED_STEPS_PER_ADVANCE steps; the declarations before the first one are absorbed by a set-up
#: advance) move the server's deadlines by far less
TIMED_ACK_WAIT_MS = 300
#: a timed example whose broker clock ran further ahead of the model's than this (ms) when a check
#: failed is discarded, not reported: its deadlines, 100 ms off the grid, may then have run out on
#: the broker first (a loaded machine, slow round trips); the rest of the margin is the broker's own
#: timer latency (Driver.clock_lead)
TIMED_CLOCK_LEAD_LIMIT_MS = 60
#: REDELIVERY-32: the BackOff lists drawn
TIMED_BACKOFFS: tuple[tuple[int, ...], ...] = ((300, 500), (300, 700), (300, 500, 300))
#: REDELIVERY-28/34: the delay of a short -NAK in a timed example
TIMED_NAK_DELAY_MS = 300
#: DELIVERY-34: a timed example's pause lasts this long (its deadline half a grid step off the grid)
TIMED_PAUSE_MS = 300
#: the logical time a timed example may advance in all (the adapter sleeps it)
TIMED_BUDGET_MS = 1200
#: a timed example advances after at most this many other steps (their real time is not on the
#: model's clock: a few steps of a few ms each stay well inside the 100 ms margin)
TIMED_STEPS_PER_ADVANCE = 4
#: the set-up draw (0..TIMED_ODDS - 1) that makes an example timed
TIMED_ODDS = 6
#: version gates of the nats adapter (adapters/nats/capabilities.py MIN_VERSION), read from its capabilities
LEN_EQ_GATE = "js:backoff_len_eq_max_deliver"
MAX_DELIVER_ONE_GATE = "js:max_deliver_one_not_redelivered"
#: stated by an adapter whose queues cannot declare a delivery limit of their own (Kafka before 4.3:
#: every share group has the broker's): its queues take the profile's default limit (REDELIVERY-26)
FIXED_LIMIT = "fixed_delivery_limit"

#: this machine's steps: redeliver and limit_check (after redelivery rounds, the message's count and
#: the stored count: a message past the limit dead-lettered, or kept by JetStream), the timed examples
#: (wait_out: what an ack wait / BackOff / delayed NAK gave back; in or after a pause, DELIVERY-34;
#: in_progress), advance, end_tx (the ring machine's, its rules here)
REDELIVERY_CHECKS = Checks(
    check("rollback.accepted", "REDELIVERY-8"), check("commit.accepted", "REDELIVERY-3"),
    check("advance.accepted", "REDELIVERY-7"),
    check("redelivery.limit", "REDELIVERY-21", "REDELIVERY-26", "REDELIVERY-40", needs=("delivery_count",)),
    check("receive.ack_wait", "REDELIVERY-27", "REDELIVERY-20", "REDELIVERY-41",
          needs=("ack_wait", "advance_time")),
    check("receive.paused", "DELIVERY-34", "REDELIVERY-27", "REDELIVERY-20"),
    check("pause.accepted", "DELIVERY-34"),
    check("receive.backoff", "REDELIVERY-32", "REDELIVERY-20", needs=("ack_wait", "advance_time", "backoff")),
    check("receive.backoff_wpi", "REDELIVERY-32", "REDELIVERY-33", "REDELIVERY-20",
          needs=("ack_wait", "advance_time", "backoff")),
    check("receive.backoff_nak", "REDELIVERY-32", "REDELIVERY-34", "REDELIVERY-28", "REDELIVERY-20",
          needs=("ack_wait", "advance_time", "backoff", "nack", "nack_delay")),
    check("in_progress.result", "REDELIVERY-27", needs=("ack_wait", "advance_time")))


class RedeliveryMachine(RestartSteps, RingMachine):
    area = "redelivery"
    CHECKS = (QUEUE_CHECKS.citing({
        "receive.id": ("REDELIVERY-8", "REDELIVERY-9", "REDELIVERY-10", "REDELIVERY-39"),
        "delivery_count": ("REDELIVERY-1", "REDELIVERY-2", "REDELIVERY-3", "REDELIVERY-38"),
        "counters.killed": ("REDELIVERY-5", "REDELIVERY-6"),
        "counters.scheduled_count": ("REDELIVERY-7", "REDELIVERY-9"),
        "counters.message_count": ("REDELIVERY-6", "DELIVERY-1"),
        "counters.pending_count": ("REDELIVERY-8", "REDELIVERY-10"),
        "nack.result": ("REDELIVERY-2",), "nack.accepted": ("REDELIVERY-2",),
        "pending.order": ("REDELIVERY-10", "REDELIVERY-9", "DELIVERY-13")})
        | REDELIVERY_CHECKS | Checks(RING_CHECKS["ring.bound"]).citing({"ring.bound": ("RING-3",)})
        | DELETE_CHECKS | RETURN_CHECKS | RESTART_CHECKS | NACK_VOCABULARY)
    QUEUES = ("q", "dlq")
    USE_PRIORITIES = False
    REQUIRES = ("queues",)

    @initialize(attempts=st.integers(min_value=1, max_value=6),
                delay=st.sampled_from([0, 10, 20, 20, 50]),
                multiplier=st.sampled_from([2.0, 4.0, 1.0]), cap=st.sampled_from([None, 30, 60]),
                mode=MODE_INDEX, dla=st.booleans(), timed=st.integers(min_value=0, max_value=TIMED_ODDS - 1),
                backoff=st.integers(min_value=0, max_value=len(TIMED_BACKOFFS)), default_limit=st.booleans())
    def setup(self, attempts: int, delay: int, multiplier: float, cap: int | None, mode: int,
              dla: bool, timed: int, backoff: int, default_limit: bool) -> None:
        self.ring = -1
        self.timed = False
        self.timed_left = self.since_advance = 0
        self.backoff: tuple[int, ...] | None = None
        self.wpi = self.nak_delayed = self.paused = False
        if attempts == 1 and self._version_gated(MAX_DELIVER_ONE_GATE):
            attempts = 2  # num_redelivered counts a message past MaxDeliver 1 before 2.11.4 (#6877)
        attempts = max(attempts, self._broker().options.min_delivery_limit)  # REDELIVERY-40
        queue: dict[str, Any] = {"name": "q"}
        if not default_limit and FIXED_LIMIT not in self.adapter.capabilities:  # else the profile's
            # default limit (REDELIVERY-26)
            queue["max_delivery_attempts"] = attempts
        if self.can("redelivery_delay") and delay:
            queue.update(redelivery_delay_ms=delay, redelivery_multiplier=multiplier,
                         max_redelivery_delay_ms=cap)
        self.QUEUES = ("q",)
        if dla:  # without a dead-letter address a message past its attempts is dropped (REDELIVERY-6)
            self.QUEUES = ("q", "dlq")
            if self.can("dead_letter"):
                self.d.both("address", {"name": "dla"})
                self.d.both("queue", {"name": "dlq", "address": "dla"})
                queue["dead_letter"] = "dla"
            else:
                self.d.both("queue", {"name": "dlq"})
        self.d.both("queue", queue)
        settings = consumer_settings(self.caps, mode)
        if (settings is not None and timed == TIMED_ODDS - 1 and pulls(settings)
                and self.can("ack_wait", "advance_time")):
            self.timed = True
            self.timed_left = TIMED_BUDGET_MS
            # no ack-pending cap: a pull at the cap waits out a request expiry in real time (the
            # nats adapter's fetch_timeout), which the logical clock does not see
            settings.pop("max_unacked", None)
            settings["ack_wait_ms"] = TIMED_ACK_WAIT_MS
            if backoff and self.can("backoff"):
                chosen = TIMED_BACKOFFS[backoff - 1]
                limit = self._broker().queues["q"].delivery_limit
                if limit is None or len(chosen) < limit or (
                        len(chosen) == limit and not self._version_gated(LEN_EQ_GATE)):
                    self.backoff = chosen
                    settings["backoff_ms"] = list(chosen)
        elif (settings is not None and timed == TIMED_ODDS - 2 and self.can("cumulative_ack")
              and not self.can("ring")):
            # DELIVERY-11 (ack.cumulative, shared with the ring machine, which draws it where there
            # are rings): a core consumer whose ack takes every earlier delivery with it, for an
            # adapter that offers it but no ring (HornetQ); another value of the timed draw, so that
            # no other adapter's draws change
            settings["cumulative_ack"] = True
        if settings is not None:
            self.declare_consumer("q", **settings)
        if self.timed:  # the declarations took real time: let the server's clock meet the model's
            self.d.both("advance", TIMED_STEP_MS)
            self.d.clock_lead.limit_ms = TIMED_CLOCK_LEAD_LIMIT_MS
        self.ready = True

    @property
    def ready(self) -> bool:
        """Set up, and (timed examples) not due to advance: every other rule and check waits."""
        return self._ready and not self._must_advance()

    @ready.setter
    def ready(self, value: bool) -> None:
        self._ready = value

    def _must_advance(self) -> bool:
        return getattr(self, "timed", False) and self.since_advance >= TIMED_STEPS_PER_ADVANCE

    @invariant()
    def timed_steps(self) -> None:
        """Counts the steps since the last advance of a timed example."""
        if getattr(self, "timed", False):
            self.since_advance += 1

    def _version_gated(self, gate: str) -> bool:
        """True when the adapter states server-version gates (``js:*`` capabilities) but not `gate`:
        the feature is newer than its server (the model follows the newest behaviour)."""
        offered = frozenset(self.adapter.capabilities)
        return any(c.startswith("js:") for c in offered) and gate not in offered

    @precondition(lambda self: self.ready)
    @rule(size_index=WHICH, priority=st.just(4))
    def send(self, size_index: int, priority: int) -> None:
        self.do_send(100, 4)

    @precondition(lambda self: False)
    @rule(size=st.just(0))
    def set_ring_size(self, size: int) -> None:  # not part of this area
        pass

    @precondition(lambda self: self.ready and self.can("advance_time") and not self.timed)
    @rule(ms=st.sampled_from([5, 20, 50, 200]))
    def advance(self, ms: int) -> None:
        self.d.both("advance", ms)

    @precondition(lambda self: self.may_restart() and not self.timed)
    @rule(kill=st.booleans())
    def restart(self, kill: bool) -> None:
        """RESTART-1..5 (not in timed examples: a restart takes real time the model does not see)."""
        RestartSteps.restart(self, kill)

    @precondition(lambda self: self.ready and self.open_consumers and (self.can("nack")
                                                                      or self.can("transactions")))
    @rule(which=WHICH, rounds=st.sampled_from([2, 1, 3]), early=st.sampled_from([1, 0]))
    def redeliver(self, which: int, rounds: int, early: int) -> None:
        """`rounds` redelivery rounds of the consumer's next message: receive it, give it back keeping
        its delivery count (nack, else a transactional ack rolled back), then advance to the time it
        is due again (1 ms before it after the last round when `early`). Then its delivery count and
        the queue's stored count (REDELIVERY-5, 21, 26: past the limit it is gone or kept)."""
        consumer = self.pick_consumer(which)
        last = None
        for n in range(rounds):
            if consumer not in self.open_consumers or not self.gets_left(consumer):
                break
            expected, actual = self.d.both_values("receive", consumer, compare="receive.id")
            self.received(consumer, expected, actual)
            if expected is None:
                break
            last = expected
            if self.can("nack"):
                self.d.both("nack", {"consumer": consumer, "id": expected}, compare="nack.result")
            else:
                self.d.both("ack", {"consumer": consumer, "id": expected, "tx": True}, compare="ack.result")
                self.d.both("rollback", consumer)
            due = self._broker().next_due_ms() if self.can("advance_time") and not self.timed else None
            ms = None if due is None else due - self._broker().now_ms - (early if n == rounds - 1 else 0)
            if ms is None or ms <= 0 or ms > ROUND_ADVANCE_MAX_MS:
                break  # nothing due, or only a far timer (an ack wait): a broker would sleep it out
            self.d.both("advance", ms)
        if last is not None and consumer in self.open_consumers:
            self.limit_check(consumer, last)

    def limit_check(self, consumer: str, msg_id: str) -> None:
        """REDELIVERY-21/26: one more receive (a message at the limit is passed over), then the
        message's delivery count (None once dead-lettered) and the queue's stored count."""
        expected, actual = self.d.both_values("receive", consumer, compare="receive.id")
        self.received(consumer, expected, actual)
        queue = self.consumer_args[consumer]["queue"]
        if self.can("delivery_count"):
            observed = self.d.observe_if_observable("delivery_count", queue, msg_id)
            if observed is not None:
                self.d.expect_equal("redelivery.limit", observed[0], observed[1],
                                    f"delivery count of {msg_id}: ")
        if self.can("counter:message_count"):
            counted = self.d.observe_if_observable("counters", queue)
            if counted is not None:
                self.d.expect_equal("redelivery.limit", counted[0]["message_count"],
                                    counted[1].get("message_count"), f"queue {queue} message_count: ")

    # ------------------------------------------------------------------ timed examples
    def _timed_check(self) -> str:
        """The check a receive after timed steps makes (REDELIVERY-27, or 32 and what else ran)."""
        if self.backoff is None:
            return "receive.paused" if self.paused else "receive.ack_wait"
        if self.nak_delayed:
            return "receive.backoff_nak"
        return "receive.backoff_wpi" if self.wpi else "receive.backoff"

    @precondition(lambda self: self._ready and self.timed and self.timed_left >= TIMED_STEP_MS)
    @rule(which=WHICH)
    def wait_out(self, which: int) -> None:
        """Advance one grid step, then a consumer receives: what the ack wait, BackOff or delayed
        NAK gave back, or the next new message."""
        self.timed_left -= TIMED_STEP_MS
        self.since_advance = 0
        self.d.both("advance", TIMED_STEP_MS)
        consumers = sorted(self.open_consumers)
        if not consumers:
            return
        consumer = consumers[which % len(consumers)]
        if not self.gets_left(consumer):
            return
        expected, actual = self.d.both_values("receive", consumer, compare=self._timed_check())
        self.received(consumer, expected, actual)

    @precondition(lambda self: self._ready and self.timed and self.timed_left < TIMED_STEP_MS
                  and self._must_advance())
    @rule()
    def idle(self) -> None:
        """A timed example whose budget is spent: nothing more happens (the server's clock runs on)."""

    @precondition(lambda self: self.ready and self.timed and not self.paused and self.can("consumer_pause"))
    @rule()
    def pause(self) -> None:
        """DELIVERY-34: the queue's consumers deliver nothing for TIMED_PAUSE_MS (once an example);
        receives meanwhile answer None, the ack-wait timers run on."""
        self.paused = True
        until = self._broker().now_ms + TIMED_PAUSE_MS
        self.d.both("pause", {"queue": "q", "until_ms": until}, compare="pause.accepted")

    @precondition(lambda self: self.ready and self.timed and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def in_progress(self, which: int, index: int) -> None:
        """+WPI (REDELIVERY-27, 33): the message's wait starts again."""
        target = self._ack_target(which, index)
        if target is not None:
            self.wpi = self.wpi or self.backoff is not None
            self.d.both("in_progress", {"consumer": target[0], "id": target[1]},
                        compare="in_progress.result")

    @precondition(lambda self: self.ready and self.timed and self.can("nack", "nack_delay")
                  and self.any_unacked())
    @rule(which=WHICH, index=WHICH)
    def nack_short(self, which: int, index: int) -> None:
        """-NAK with a 300 ms delay (REDELIVERY-28; with a BackOff REDELIVERY-34: plus BackOff[n] -
        BackOff[0])."""
        target = self._ack_target(which, index)
        if target is not None:
            self.nak_delayed = self.nak_delayed or self.backoff is not None
            self.d.both("nack", {"consumer": target[0], "id": target[1], "delay_ms": TIMED_NAK_DELAY_MS},
                        compare="nack.result")
