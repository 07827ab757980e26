"""Artemis: a message an individual cancel drops at its delivery limit leaves the delivering count twice.

Artemis 2.18.0 to 2.56.0 (every served release replayed, and the current one; not reported upstream
yet: docs/findings/artemis-drop-at-limit-delivering-negative.md). REDELIVERY-6, DELIVERY-1. An
individual cancel (AMQP modified{delivery-failed}, core individualCancel) calls QueueImpl#cancel(ref,
timeBase). At max-delivery-attempts checkRedelivery calls sendToDeadLetterAddress, which, with no
dead-letter address or one without bindings, acks the reference KILLED (postAcknowledge decrements the
delivering metrics) and returns false; cancel then decrements them once more
(``else if (!redeliveryResult.getB()) decDelivering(reference)``). DeliveringCount goes to -1 and
MessageCount (pending + scheduled + delivering) is one too low, for good (one more per such drop); the
page read budget, which adds the delivering metrics, has that much more room. A close or a rollback
(RefsOperation) and a dead-letter address with bindings (the move returns true) are right.
Regression scenario: tests/adapters/scenarios/artemis-drop-at-limit-delivering-negative.yaml.

The model: such a nack takes the message off the queue's delivering count and bytes a second time
(RedeliveryMixin._artemis_cancel_drop_delivering_twice). Not modelled: a restart after it (the broker's
metrics start over at zero; the model's reload keeps the skew), so a replay across a restart stays a
failure.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="artemis-drop-at-limit-delivering-negative",
    key="Artemis QueueImpl#cancel double decDelivering (not yet filed)",
    option="cancel_drop_decrements_delivering_twice",
    rules=("REDELIVERY-6", "DELIVERY-1"),
    source="https://github.com/apache/activemq-artemis/blob/2.40.0/artemis-server/src/main/java/org/apache/"
           "activemq/artemis/core/server/impl/QueueImpl.java#L1786-L1797",
    releases=">=2.18",
    summary="a message an individual cancel drops at max-delivery-attempts (no dead-letter address, or "
            "one without bindings) is taken off DeliveringCount twice: -1, MessageCount one too low",
)
