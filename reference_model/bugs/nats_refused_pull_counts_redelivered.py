"""nats-server before 2.14.6: a pull request the server refuses after taking a redelivery for it leaves
that message counted in num_redelivered, though it was never redelivered.

nats-server 2.10.25 to 2.14.5 (replayed: the stale-pin scenario fails on 2.11.0, 2.12.8 and 2.14.5 and
holds on 2.14.6 and 2.15.0; its max_bytes variant, below, fails on 2.10.25 and 2.14.5 and holds on
2.14.6). DELIVERY-27 (num_redelivered), met through DELIVERY-40, DELIVERY-44, DELIVERY-46 and
DELIVERY-47. consumer.go loopAndGatherMsgs: getNextMsg takes a NAKed (or ack-wait expired) message off
the redelivery queue and incDeliveryCount raises its o.rdc entry (absent after one delivery) to 1; when
nextWaiting then gives no request for it (a pinned_client request naming a removed pin, 423
Nats-Wrong-Pin-Id; one without an id cycled past while another pin holds; an overflow request whose
thresholds do not hold; a request whose max_bytes the message does not fit, 409), the loop puts it back
with decDeliveryCount, which lowers the entry to 0 but keeps it in the map, and the consumer info's
num_redelivered is len(o.rdc). A 0 entry changes nothing else (deliveryCount reads it as 1, the next
incDeliveryCount gives 2 as from none). It goes with the message's ack or term (processAckMsg deletes
o.rdc[sseq]), its removal from the stream (delete, max_age, purge: processTerm, or o.rdc = nil once
nothing is pending) and a restart (the consumer store's Redelivered is written from UpdateDelivered,
which a put-back never calls, so the restored o.rdc has no entry); a real redelivery makes it 1, which
counts rightly. Fixed in 2.14.6 and 2.15.0 (decDeliveryCount removes an entry that drops to 0; read
from the release binaries' code: the nats-server source mirror ends before 2.14.6 and no upstream PR
or issue was found). Buggy code: v2.14.5 server/consumer.go decDeliveryCount L4746-L4751 and
loopAndGatherMsgs L5380-L5396. Regression scenario:
tests/adapters/scenarios/nats-stale-pin-pull-reports-no-redelivered.yaml; the max_bytes variant (no
priority group, so 2.10 too): send m1 (size 100), receive, nack, ``fetch {batch: 1, max_bytes: 2}``
-> [] with num_redelivered 1 on 2.10.25 and 2.14.5, 0 on 2.14.6.

The model: a message put back by a pull request that is not given it (``PullBatchMixin._put_back``:
DELIVERY-40, 44, 46, 47), a redelivery that has been delivered once, joins ``QueueState.rdc_zero``;
the consumer state's num_redelivered counts every such message still pending acknowledgement and
delivered only once; a restart empties the set. Not modelled: a consumer store written from o.rdc
while such an entry exists (checkPending finding a pending message below the stream's first sequence
before its removal was processed), which would keep it across a restart.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="nats-refused-pull-counts-redelivered",
    key="nats-server decDeliveryCount (fixed in 2.14.6)",
    option="put_back_keeps_zero_redelivered",
    rules=("DELIVERY-27", "DELIVERY-40", "DELIVERY-44", "DELIVERY-46", "DELIVERY-47"),
    source="https://github.com/nats-io/nats-server/blob/v2.14.5/server/consumer.go#L4746-L4751",
    releases=">=2.10.25, <2.14.6",
    summary="a pull request not given the redelivery the server took for it (a stale pin id, another "
            "client's pin, overflow thresholds, max_bytes) leaves that message counted in "
            "num_redelivered (a 0 o.rdc entry) until its ack, removal, a redelivery or a restart; "
            "fixed in 2.14.6",
)
