"""Artemis: on a non-destructive queue, a message added at the last add's level skips a consumer.

Artemis 2.18.0 to 2.56.0 (the regression scenario fails on 2.18.0, 2.40.0 and 2.56.0;
PriorityLinkedListImpl#checkHighest is the same in every served release). Found by a 2.40.0 ``ci``
run's lastvalue area (2026-11-30: four 9-step FAILs, "delivering_count expected 3, actual 2") and, a
session before, eleven FAILs of that area which the ARTEMIS-4985 model had been stretched to explain:
the same story replays identically on 2.26.0 and 2.35.0, releases without 4985's change. Not reported
upstream yet (no Jira or GitHub report found). DELIVERY-3, DELIVERY-12. Regression scenario:
tests/adapters/scenarios/artemis-non-destructive-priority-same-level.yaml; report text and plain
client: docs/findings/artemis-non-destructive-priority-same-level.{md,py}.

A queue's pending messages are a PriorityLinkedListImpl (apache/artemis 2.56.0,
artemis-commons/.../utils/collections/PriorityLinkedListImpl.java). Each consumer walks it with its own
iterator, which goes down a level when its level has nothing more for it (hasNext, L263-L289) and back
to the top only through a reset count (checkReset, L254-L260) that checkHighest (L61-L74) bumps when an
add's priority differs from the last add's or exceeds ``highestPriority``. On a destructive queue the
consumer's iterator removes what it delivers, and the removal loop lowers ``highestPriority`` below an
emptied level, so the next add there resets. A non-destructive queue's delivery removes nothing
(QueueImpl#deliver skips removeMessageReference, QueueImpl.java L3066-L3068): the delivered top message
stays listed, ``highestPriority`` stays at its level, and a consumer that was given it and then, busy,
had its iterator moved down to a lower message (QueueImpl#deliver asks for the next message and
repeat()s it) is not reset by the next add at that same level. With its next credit it gets the lower
message first; an iterator that found nothing at or below its level answers nothing in that delivery
pass (hasNext wraps to the top and returns false; with one consumer the pass ends) and takes the top
only in the next pass.

The model (:class:`~.artemis_priority_removal.IteratorWalk` on a non-destructive queue, under the
option ``non_destructive_same_level_keeps_iterators``): checkHighest's same-level shortcut, each
consumer's iterator over what it has not been given (ConsumerState.unseen), a removal (a prune, an
expiry, a delete) setting ``highestPriority`` to the highest non-empty level and a reset sending the
iterators to the top, as they should. A destructive queue is left as the claimed model has it. Not
modelled: the same inversion on a destructive queue whose consumer's selector skips the top message
(it stays listed too; the plain client's ``selector`` mode shows it on every served release), since
the walk serves plain consumers only.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="artemis-non-destructive-priority-same-level-add",
    key="Artemis PriorityLinkedListImpl#checkHighest on a non-destructive queue (not yet filed)",
    option="non_destructive_same_level_keeps_iterators",
    rules=("DELIVERY-3", "DELIVERY-12"),
    source="https://github.com/apache/artemis/blob/002fc7a084/artemis-commons/src/main/java/org/apache/"
           "activemq/artemis/utils/collections/PriorityLinkedListImpl.java#L61-L74",
    releases=">=2.18",
    summary="on a non-destructive queue, a message added at the same priority as the last add resets no "
            "consumer's priority iterator: a consumer given the top message whose iterator moved down "
            "while it was busy gets lower-priority messages before the new one",
)
