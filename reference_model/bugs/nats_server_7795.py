"""nats-server before 2.12.5: an overflow pull request that names both min_pending and min_ack_pending
is served only when both thresholds are reached, not either.

nats-server 2.11.0 to 2.12.4 (replayed: fails on 2.11.0 and 2.12.4, holds on 2.12.5 and 2.15.1;
priority groups are in nats-server from 2.11.0, the adapter's capability priority_overflow, so 2.10 is
not applicable). DELIVERY-43 (DELIVERY-41, DELIVERY-42 for one threshold alone: unchanged).
consumer.go nextWaiting cycled a request of an overflow group when ``MinPending > 0 && MinPending >
o.npc+1 || MinAckPending > 0 && MinAckPending > len(o.pending)``: one threshold not reached was
enough to refuse it. Fixed by commit 43071fa5b ("Fixed incorrectly inverted Overflow check logic",
PR #7795, in 2.12.5): served when either given threshold is reached (ADR-42). Regression scenario:
tests/adapters/scenarios/nats-overflow-either-threshold-serves.yaml.

The model: a request naming both thresholds is given the message only when each holds; with one
threshold nothing changes. A request not given it puts the message back as before (DELIVERY-44).
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="nats-server-7795",
    key="nats-server#7795",
    option="overflow_needs_every_threshold",
    rules=("DELIVERY-43",),
    source="https://github.com/nats-io/nats-server/pull/7795",
    releases=">=2.11.0, <2.12.5",
    summary="an overflow pull request naming min_pending and min_ack_pending is served only when both "
            "are reached, not either (nextWaiting's inverted check); fixed in 2.12.5",
)
