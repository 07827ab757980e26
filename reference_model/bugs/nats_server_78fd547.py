"""nats-server before 2.14.1: a restart drops the redelivered count of a message kept past MaxDeliver.

nats-server 2.10.25 to 2.14.0 (replayed: fails on 2.10.25, 2.11.3, 2.12.4, 2.12.8 and 2.14.0, holds on
2.14.1 and 2.15.1). RESTART-3, RESTART-5. A message that reached MaxDeliver is no longer ack pending and
the ack floor moves past it, but it is still stored and counted in num_redelivered (o.rdc). When the
server reads the consumer's state again at a restart, consumer.go checkRedelivered deleted every rdc
entry at or below the ack floor, so num_redelivered drops (1 -> 0). Fixed by commit 78fd547a1
("checkRedelivered only removes below stream's first seq": rdc is kept until the message leaves the
stream). Regression scenario: tests/adapters/scenarios/nats-restart-keeps-redelivered-at-max-deliver.yaml.

The model: at a restart (graceful, or a SIGKILL after the flush interval), every message of
``exhausted`` at or below the queue's ack floor (stream sequence) loses its redelivered count
(``QueueState.rdc_dropped``), which the consumer state's num_redelivered then leaves out; nothing else
reads that count for a message that is never delivered again.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="nats-server-78fd547",
    key="nats-server 78fd547a1",
    option="restart_drops_redelivered_below_floor",
    rules=("RESTART-3", "RESTART-5"),
    source="https://github.com/nats-io/nats-server/commit/78fd547a1bc74cf65f5e08ebdd9bfa79e88b2ca4",
    releases=">=2.10.25, <2.14.1",
    summary="a restart drops the redelivered count of a message kept past MaxDeliver at or below the "
            "ack floor (num_redelivered 1 -> 0); fixed in 2.14.1",
)
