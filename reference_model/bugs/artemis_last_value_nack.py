"""Artemis: a nacked last-value message is pruned as stale before its nacker's credit returns.

Artemis 2.24.0 to 2.56.0 (2.40.0 and 2.56.0 replayed; from ARTEMIS-3890, commit 4a4765c39c, first in
2.24.0, which made a delivered reference stop being its value's current message and prunes what is not
current after each delivery pass; not reported upstream yet:
docs/findings/artemis-last-value-nack-pruned-before-credit.md). LASTVALUE-6. Found by a 2.56.0 ``ci``
run (ring area explored with the bug model artemis-last-value-direct-delivery-stays-current on: eight
counterexamples of one sequence). References at tag 2.56.0 of apache/artemis.

A message returned to a destructive last-value queue by a close or a rollback goes through
LastValueQueue#addHead, which tracks it with trackLastValueIfAbsent ("use as a last value in the absence
of any newer value"): it becomes its value's current message when the value has none (LASTVALUE-6). A
nack does not: AMQPSessionCallback#cancel -> ServerConsumerImpl#individualCancel -> QueueImpl#cancel
re-adds the reference with internalAddSorted, which tracks nothing, then QueueImpl#forceDelivery
(AMQPSessionCallback.java L489-L497, QueueImpl.java L1832-L1843). A message delivered from the list was
forgotten as current at its delivery (LastValueQueue#refRemoved, removeIfCurrent), so the nacked one is
not current although nothing newer of its value was sent, and the delivery pass the nack forces ends
with #pruneLastValues (LastValueQueue.java L124-L141), which removes it with reason REPLACED unless a
consumer takes it in that pass. That pass runs before the AMQP receiver's flow gives the nacking consumer
its credit back, so a nacker that held all it may hold cannot take it: the message is lost on a nack
(2.40.0 and 2.56.0: a keyed m1 listed, a consumer holding at most one receives and nacks it: replaced 1,
nothing pending; with room for two the consumer is given m1 again). Regression scenario:
tests/adapters/scenarios/artemis-last-value-nack-pruned-before-credit.yaml.

With artemis-last-value-direct-delivery-stays-current a message taken at its send was never forgotten as
current: its nack keeps it (the claimed model keeps it too, by the close rule). Once such a message has
come back by a close and been given again from the list, refRemoved has forgotten it and a nack by a full
consumer prunes it (the eight ring counterexamples).

The model (option ``nack_pass_before_credit``; hooks in RedeliveryMixin.nack and _pass_before_credit): a
nack on a last-value queue does not track the returned message (no _lv_if_absent), and, when a message
is then a pruning candidate, one delivery pass runs with the nacking consumer's room less the messages it
returned, then the pruning; its credit counts again after that. Not modelled: a nack with a delay or
without requeue (not this path), and a consumer without a max_unacked bound (the model's room is then
unlimited and the pass-before-credit changes nothing).
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="artemis-last-value-nack-pruned-before-credit",
    key="Artemis LastValueQueue: QueueImpl#cancel does not track a nacked message (not yet filed)",
    option="nack_pass_before_credit",
    rules=("LASTVALUE-6",),
    source="https://github.com/apache/artemis/blob/2.56.0/artemis-server/src/main/java/org/apache/"
           "activemq/artemis/core/server/impl/QueueImpl.java#L1832-L1843",
    releases=">=2.24",
    summary="a nacked message on a last-value queue is not tracked as its value's current message (a "
            "close's is, if the value has none), and the pass the nack forces runs before the nacker's "
            "credit returns: a message the nacker alone could take is pruned as REPLACED, lost on a nack",
)
