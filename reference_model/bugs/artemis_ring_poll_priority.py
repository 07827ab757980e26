"""Artemis: after a ring eviction at priority p, a message added at p waits behind lower priorities.

Artemis 2.18.0 to 2.56.0 (the regression scenario fails on every served release and 2.56.0). Found
by a 2.40.0 re-run of seed 989465's ring area; not reported upstream yet (no Jira or GitHub report
found). DELIVERY-3. Regression scenario:
tests/adapters/scenarios/artemis-ring-eviction-keeps-priority-iterator-low.yaml; report text:
docs/findings/artemis-ring-eviction-keeps-priority-iterator-low.md.

A ring queue keeps its size by QueueImpl#enforceRing (apache/artemis 2.56.0, QueueImpl.java
L4558-L4585), which takes the head with PriorityLinkedListImpl#poll (L4562; PriorityLinkedListImpl.java
L148-L178). poll lowers ``highestPriority`` by one only when the level it empties is that very level,
and leaves ``lastPriority`` as the last add set it. So once the ring evicts the message just added at
p (or evicts a higher one, leaving ``highestPriority`` above every pending message), the next add at p
finds ``lastPriority == p`` and ``p <= highestPriority``, and checkHighest (L61-L74) resets no
iterator: a consumer whose iterator moved below p while it was busy (QueueImpl#deliver asks it for
its next message and repeat()s it, L3024, L3075) is handed the lower levels first and reaches the new
message only after them.

The model (reference_model.bugs.artemis_priority_removal.IteratorWalk, under the option
``priority_poll_keeps_last``): checkHighest's same-priority shortcut and poll's bookkeeping as the
broker has them; an iterator's remove that empties a level sets ``highestPriority`` to the highest
non-empty level and a reset puts the iterators at the top (as they should). Exact for plain consumers
of a destructive queue; the broker may also deliver a message added directly (no list add), which the
model lists.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="artemis-ring-eviction-keeps-last-priority",
    key="Artemis PriorityLinkedListImpl#poll leaves lastPriority and highestPriority (not yet filed)",
    option="priority_poll_keeps_last",
    rules=("DELIVERY-3",),
    source="https://github.com/apache/artemis/blob/002fc7a084/artemis-commons/src/main/java/org/apache/"
           "activemq/artemis/utils/collections/PriorityLinkedListImpl.java#L147-L178",
    releases=">=2.18",
    summary="after a ring eviction took the last message added at priority p, a message added at p "
            "resets no consumer's priority iterator and is delivered after lower-priority messages",
)
