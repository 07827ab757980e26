"""nats-server before 2.14.0: a stream with discard new and max_bytes refuses a message that brings it
exactly to max_bytes.

nats-server 2.10.25 to 2.12.8 (replayed: fails on 2.10.25, 2.11.0 and 2.12.8, holds on 2.14.0 and
2.15.1; no 2.13 release). RING-27, RING-28. filestore.go (and memstore.go) storeRawMsg refused a store
under DiscardNew with ErrMaxBytes when ``state.Bytes + size >= MaxBytes``, and, for a subject at its
max_msgs_per_subject (which replaces its oldest message), when that oldest message was at most as
large (``sizeForSeq(fseq) <= size``). Fixed by commit 8311cde5c ("Only use store's DiscardNew error
for R1 & off-by-ones", PR #7608, in 2.14.0): ``>`` and ``<``. Regression scenario:
tests/adapters/scenarios/nats-discard-new-accepts-up-to-max-bytes.yaml.

The model: under reject_new (discard new) with a byte bound (max_bytes > 0), a send is refused when
the stored bytes plus its size reach the bound, not only when they exceed it; a send to a subject at
its limit is refused when they reach it and the subject's oldest message is no larger than it. The
count bound (ErrMaxMsgs) is unchanged.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="nats-server-7608",
    key="nats-server#7608",
    option="discard_new_refuses_at_max_bytes",
    rules=("RING-27", "RING-28"),
    source="https://github.com/nats-io/nats-server/pull/7608",
    releases=">=2.10.25, <2.14.0",
    summary="discard new with max_bytes refuses a message that brings the stream exactly to max_bytes "
            "(storeRawMsg compared Bytes + size >= MaxBytes); fixed in 2.14.0 (>)",
)
