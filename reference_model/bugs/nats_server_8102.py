"""nats-server before 2.14.1: a message kept past MaxDeliver that leaves the stream (a delete, max_age, a
limit) stays counted in num_redelivered.

nats-server 2.10.25 to 2.14.0 (replayed: the delete scenario fails on 2.10.25, 2.12.8 and 2.14.0, the
max_age scenario on 2.11.11, 2.12.2 and 2.14.0 by bisection; both hold on 2.14.1 and 2.15.1).
DELIVERY-27, EXPIRY-1 (and the delete of DELIVERY-31). A message past MaxDeliver is in no o.pending but
keeps its o.rdc entry (REDELIVERY-21); consumer.go decStreamPending, called for every removal from the
stream, cleared the redelivered state only of a message still pending, so len(o.rdc), the consumer
info's num_redelivered, kept counting it, and the consumer store kept its Redelivered entry too. Fixed
by commit bdf6c80d8 ("[FIXED] Cleanup redelivery on message delete", PR #8102, in 2.14.1: the entry is
deleted and the store updated). Until then the entry goes at a restart only when it is at or below the
ack floor (checkRedelivered before 78fd547a1, the same release), or when a purge leaves nothing pending
(o.rdc = nil). Regression scenarios: tests/adapters/scenarios/nats-delete-past-max-deliver.yaml,
nats-max-age-clears-redelivered-past-max-deliver.yaml.

The model: a message of ``QueueState.exhausted`` that a delete, an expiry or an eviction removes keeps
counting in num_redelivered (``QueueState.rdc_removed``: id -> stream sequence) as a kept one does; a
purge clears them, a restart drops those at or below the ack floor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import BugModel

if TYPE_CHECKING:
    from ..state import QueueState, Ref

BUG = BugModel(
    name="nats-server-8102",
    key="nats-server#8102",
    option="removal_keeps_redelivered",
    rules=("DELIVERY-27", "EXPIRY-1"),
    source="https://github.com/nats-io/nats-server/pull/8102",
    releases=">=2.10.25, <2.14.1",
    summary="a message kept past MaxDeliver that a delete or max_age removes stays counted in "
            "num_redelivered (decStreamPending cleared o.rdc only for pending messages); fixed in 2.14.1",
)


def removed(queue: QueueState, ref: Ref) -> None:
    """`ref`, kept past the delivery limit, leaves the stream: its o.rdc entry stays."""
    queue.rdc_removed[ref.id] = ref.sequence
