"""nats-server from 2.11.10: a Nats-TTL publish postpones a stream's age check that startAgeChk armed.

nats-server 2.11.10 and later (replayed: fails on 2.11.10, 2.12.1, 2.14.0 and 2.15.1; the cited code
is unchanged on main; not reported upstream yet: docs/findings/nats-max-age-after-a-ttl-message.md).
EXPIRY-1, EXPIRY-3, EXPIRY-4, EXPIRY-7. Read at nats-server main 1787eee035, server/filestore.go (the
memory store has the same shape):

- one timer (``ageChk``) runs the stream's expiry (``expireMsgs``); ``ageChkTime`` says when it fires,
  0 when unknown; the store's creation arms it max_age ahead with ``startAgeChk`` (L610);
- a store without a TTL into a stream with no timer calls ``startAgeChk`` (L5388-L5389), a timer at
  MaxAge that leaves ``ageChkTime`` 0 (L7165-L7172);
- a store with a TTL calls ``resetAgeChk(0)`` (L5386-L5387): the timer moves to now + the least of
  MaxAge, 2 s (messages are stored) and the time to the earliest per-message TTL (L7199-L7224),
  unless it would then fire later than ``ageChkTime`` (L7229-L7235, the guard 82c51f552 brought in
  2.11.10): with ``ageChkTime`` 0 the guard does not hold, and the check moves later;
- ``expireMsgs`` removes what is past max_age or its TTL, then re-arms at the next expiry with
  ``ageChkTime`` set (L7368-L7374), or cancels the timer when nothing is stored (ageChkTime 0 again).

So the first Nats-TTL message published while the check is a startAgeChk timer postpones it to up to
MaxAge (at most 2 s) after that publish, and every message due before then stays until then. Regression
scenario: docs/findings/nats-max-age-after-a-ttl-message.yaml (m1-m3 with max_age 2 s due at 5.5 s, m4
published with Nats-TTL 4 s at 5.0 s: all four still stored at 6.5 s, removed at 7.0 s).

The model (``ttl_store_postpones_age_check``, :class:`AgeCheck` on a queue with a message TTL): the
expiry of such a queue runs only at its age check; the queue's declaration arms one max_age ahead, and
a store without a TTL arms one when the queue has none (neither pinned); a store with one moves it to
now + min(max_age, 2 s, the earliest own TTL deadline) when it is not pinned or that is sooner, and pins
it; a check removes what is due and re-arms, pinned, at the next expiry, or disarms when nothing is
stored. Where the check is pinned it is the next expiry, so the queue expires as the claimed model's
does.

Real-clock order: the model runs a check due at a logical time before the steps at that time. On the
expiry machine the creation timer falls on an advance (max_age 2 s = 0.5 s + 1.5 s), so it races the
steps after that advance on the broker: replayed 6 of 6 on 2.15.1 with the machine's set-up, the check
fired first (a Nats-TTL publish right after the advance left it pinned), as modelled; every other time
of the model stays half a second clear of the machine's advances. Not modelled (a replay that meets
them stays a failure): the 250 ms floor of a re-armed check and its delay for messages stored within
250 ms of the due one (within the margin the machines keep, as for the claimed model); a restart (the
store re-arms on recovery). Releases 2.11.0 to 2.11.9 and 2.12.0, without the guard, move the check at
every Nats-TTL publish; their entries stay shapes (deviations.yaml).
"""

from __future__ import annotations

import attrs

from ..state import QueueState, Ref
from .model import BugModel

#: resetAgeChk: "If delta for next-to-expire message is unset, but we still have messages to remove" the
#: check comes at most this long after a Nats-TTL publish (ms)
STORED_RECHECK_MS = 2000
#: resetAgeChk: "Make sure we aren't firing too often either way" (ms)
FLOOR_MS = 250

BUG = BugModel(
    name="nats-max-age-after-a-ttl-message",
    key="nats-server startAgeChk leaves ageChkTime 0 (not yet filed)",
    option="ttl_store_postpones_age_check",
    rules=("EXPIRY-1", "EXPIRY-3", "EXPIRY-4", "EXPIRY-7"),
    source="https://github.com/nats-io/nats-server/blob/1787eee035cf0253c201fa0f05afad92b6f296dc/"
           "server/filestore.go#L7165-L7172",
    releases=">=2.11.10",
    summary="a Nats-TTL publish moves a stream's max_age check that startAgeChk armed (ageChkTime 0) "
            "to up to 2 s later, so max_age messages stay past their age until then",
)


@attrs.define
class AgeCheck:
    """The stream's age-check timer (filestore ageChk / ageChkTime) in logical ms."""

    #: when the check fires next (None: no timer)
    at: int | None = None
    #: ageChkTime is set (resetAgeChk armed it): a Nats-TTL publish may only bring it sooner
    pinned: bool = False
    #: the per-message TTL deadlines of the stored messages that have one (the hash wheel `ttls`)
    own_deadlines: dict[str, tuple[int, Ref]] = attrs.field(factory=dict)

    def stored(self, ref: Ref, now: int, max_age: int) -> None:
        """storeRawMsg's timer step for `ref`, stored now."""
        own = ref.msg.ttl_ms
        if own is None:
            if self.at is None:  # startAgeChk: ageChkTime stays 0
                self.at, self.pinned = now + max_age, False
            return
        self.own_deadlines[ref.id] = (now + own, ref)
        earliest = min(at for at, r in self.own_deadlines.values() if r.place != "done")
        candidate = now + max(FLOOR_MS, min(max_age, STORED_RECHECK_MS, earliest - now))  # resetAgeChk(0)
        if self.at is None or not self.pinned or candidate <= self.at:
            self.at, self.pinned = candidate, True

    def due(self, now: int) -> bool:
        """Does the check run by `now`?"""
        return self.at is not None and self.at <= now

    def checked(self, queue: QueueState, now: int) -> None:
        """expireMsgs' end, after the due messages left: re-arm at the next expiry, or disarm."""
        self.own_deadlines = {i: e for i, e in self.own_deadlines.items() if e[1].place != "done"}
        times = [at for ref in queue.live.values() if (at := ref.expires_at) is not None and at > now]
        if not queue.live or not times:
            self.at, self.pinned = None, False  # cancelAgeChk
            return
        self.at, self.pinned = min(times), True
