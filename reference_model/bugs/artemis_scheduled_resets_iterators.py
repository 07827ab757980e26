"""Artemis: a scheduled message fired to the head of a non-destructive queue re-offers every message.

Artemis 2.18.0 to 2.56.0: fails on 2.26.0, 2.40.0 and 2.56.0; before 2.25 the adapter cannot fire a
scheduled message (QueueControl#deliverScheduledMessage, ARTEMIS-3872), and the code is the same in
2.18.0. Not reported upstream yet: docs/findings/artemis-non-destructive-scheduled-reoffers.md.
DELIVERY-12, LASTVALUE-8. Due scheduled references (the broker's timer, ScheduledDeliveryHandlerImpl,
or QueueControl#deliverScheduledMessage) go to QueueImpl#addHead(List, scheduling=true), which adds
each at the head and then calls resetAllIterators: every consumer's iterator over the message list is
closed and the next delivery pass starts it again at the head. On a destructive queue that only lets
each consumer see the new head; on a non-destructive queue the delivered messages are still listed, so
every consumer is offered, and with credit receives, each of them again (a rollback or close, the other
caller of addHead(List), adds nothing back on a non-destructive queue since ARTEMIS-3082, so only the
scheduled path resets). The same holds for a last-value queue made non-destructive. Regression
scenario: tests/adapters/scenarios/artemis-non-destructive-last-value-scheduled-reoffers.yaml.

The model (ClockMixin._fire_due under the option ``scheduled_fire_resets_iterators``): when due
messages fire on a non-destructive queue, each consumer's iterator starts over, so every message the
queue lists is unseen by every consumer again. Not modelled: a pushing consumer's prefetch buffer (the
broker sends a message the client has not yet taken a second time; the model keeps one copy), so a
replay where a consumer holds prefetched messages at the firing stays a failure.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="artemis-non-destructive-scheduled-reoffers",
    key="Artemis QueueImpl#addHead(List, scheduling) resetAllIterators, non-destructive (not yet filed)",
    option="scheduled_fire_resets_iterators",
    rules=("DELIVERY-12", "LASTVALUE-8"),
    source="https://github.com/apache/artemis/blob/2.56.0/artemis-server/src/main/java/org/apache/"
           "activemq/artemis/core/server/impl/QueueImpl.java#L911-L924",
    releases=">=2.18",
    summary="a scheduled message that fires to the head of a non-destructive queue resets every "
            "consumer's iterator, so each consumer is offered again every message it already received",
)
