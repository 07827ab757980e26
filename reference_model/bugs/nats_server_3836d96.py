"""nats-server 2.14.0 and 2.14.1: a stream update that sets max_msgs_per_subject for the first time
(from unlimited, -1) does not trim the stored messages.

nats-server 2.14.0 to 2.14.1 (replayed: fails on 2.14.0 and 2.14.1, holds on 2.14.2 and 2.15.1; the
adapter has per-subject limits from 2.14.0 only, capabilities.py max_per_subject, so earlier
releases are not applicable). RING-34. filestore.go (and memstore.go) UpdateConfig enforced the
per-subject limit only when the old value was 0 or higher than the new one (``old_cfg.MaxMsgsPer ==
0 || new < old``); an unset limit is -1. Fixed by commit 3836d9669 ("[FIXED] Initial MaxMsgsPerSubject
update not enforced", ``old <= 0``; cherry-picked for 2.14.2 in PR #8256). The subject keeps its
messages until a store on it trims it to the limit (storeRawMsg) or the store is opened again at a
restart (newFileStore enforceMsgPerSubjectLimit). Regression scenario:
tests/adapters/scenarios/nats-first-subject-limit-trims.yaml.

The model: a per-subject limit set on a queue whose limit was unset (-1) trims nothing; a send to a
subject then trims it to the limit (as before); a restart trims every subject of a queue with a limit.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="nats-server-3836d96",
    key="nats-server 3836d9669",
    option="first_subject_limit_not_enforced",
    rules=("RING-34",),
    source="https://github.com/nats-io/nats-server/commit/3836d96692a7b9d1405ea404161e6a7f48ba3115",
    releases=">=2.14.0, <2.14.2",
    summary="a first max_msgs_per_subject (from unlimited, -1) set by a stream update does not trim the "
            "stored messages (UpdateConfig checked old == 0); fixed in 2.14.2",
)
