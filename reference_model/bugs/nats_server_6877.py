"""nats-server before 2.11.4: a consumer with MaxDeliver 1 counts a message it will never redeliver in
num_redelivered.

nats-server 2.10.25 to 2.11.3 (replayed: fails on 2.10.25, 2.11.0 and 2.11.3, holds on 2.11.4 and
2.15.1). DELIVERY-27 (REDELIVERY-21). A message of a durable with MaxDeliver 1 that is given back
(-NAK, or its ack wait ends) is not delivered again: getNextMsg's incDeliveryCount takes its delivery
count past MaxDeliver, removes it from o.pending and keeps its o.rdc entry, and consumer.go
infoWithSnapAndReply reported NumRedelivered as len(o.rdc): 1. Fixed by commit be8d6ee5f ("[FIXED]
Don't report redeliveries for consumer with MaxDeliver 1", PR #6877, in 2.11.4): the consumer info
reports 0 for MaxDeliver 1, the state still keeps the entry. Regression scenario:
tests/adapters/scenarios/nats-max-deliver-1-reports-no-redelivered.yaml.

The model: with a delivery limit of 1, the consumer state's num_redelivered counts the messages kept
past it (``QueueState.exhausted``, less those a restart dropped under nats-server-78fd547) as with any
other limit, instead of 0; they leave it as they leave the stream.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="nats-server-6877",
    key="nats-server#6877",
    option="max_deliver_one_reports_redelivered",
    rules=("DELIVERY-27", "REDELIVERY-21"),
    source="https://github.com/nats-io/nats-server/pull/6877",
    releases=">=2.10.25, <2.11.4",
    summary="a consumer with MaxDeliver 1 counts a message it gave back and will never redeliver in "
            "num_redelivered (len(o.rdc)); fixed in 2.11.4, which reports 0 for MaxDeliver 1",
)
