"""Artemis: a message deleted by id from a non-destructive queue is counted nowhere.

Artemis 2.18.0 to 2.56.0 (replayed on 2.18.0, 2.40.0 and 2.56.0; not reported upstream yet). DELIVERY-10
(every removal by acknowledgement increments exactly one counter). ``QueueControl#removeMessage``
(``QueueImpl#deleteReference``, apache/artemis 2.56.0 QueueImpl.java L2227-L2236) takes the message off
the queue's list and acknowledges it with ``AckReason.NORMAL`` in a transaction; ``acknowledge``
(L1697) treats a NORMAL ack on a non-destructive queue as a consumer's (``addOnlyRefAck``), and at the
commit ``postAcknowledge`` (L3967, L3997) returns before the counter, the reference's ``refDown`` and
the journal's delete. So the message leaves MessageCount, but MessagesAcknowledged (and every other
counter) stays, the address keeps its bytes, and the journal keeps the message: after a restart it is
back (measured on 2.40.0 with a SIGKILL restart).

The model: such a delete removes the message as before but counts it nowhere and leaves its bytes in
the address (``DeleteMixin.delete_message``, ``BrokerCore._terminate(counted=False)``). Not modelled:
the message's return at a restart (the model's reload forgets it), so a replay across a restart stays
a failure. Regression scenario: tests/adapters/scenarios/artemis-non-destructive-delete-uncounted.yaml.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="artemis-non-destructive-delete-uncounted",
    key="Artemis QueueImpl#deleteReference NORMAL ack on a non-destructive queue (not yet filed)",
    option="non_destructive_delete_uncounted",
    rules=("DELIVERY-10",),
    source="https://github.com/apache/artemis/blob/002fc7a084/artemis-server/src/main/java/org/apache/"
           "activemq/artemis/core/server/impl/QueueImpl.java#L3960-L3999",
    releases=">=2.18",
    summary="a message deleted by id from a non-destructive queue leaves it but counts in no counter "
            "(MessagesAcknowledged stays) and keeps its bytes and journal record",
)
