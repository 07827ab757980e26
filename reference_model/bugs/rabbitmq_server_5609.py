"""rabbitmq-server#5609: a nack that dead-letters or drops a quorum-queue message at its delivery limit
grants the consumer credit twice.

RabbitMQ 3.8 (quorum queues and x-delivery-limit) to 3.10 (measured on 3.10.8; the fix, commit
48f9334cdc "Fix duplicate credit grant in quorum queue", shipped in 3.11.0). DELIVERY-16. A basic.nack
with requeue on a queue with a delivery limit is a Ra #return command; rabbit_fifo (v3.10.8) return/5
folds return_one over the returned messages, and return_one, for a message whose x-delivery-count
now exceeds the limit, dead-letters it and calls complete/5, which grants the consumer one credit;
return/5 then grants one credit per returned message as well. The consumer's credit is a counter in
simple_prefetch mode, so it keeps the extra credit: from then on it holds one message more than its
prefetch (one more per such nack) until it is cancelled. A nack without requeue (#discard), a
consumer's close or a channel's end (DOWN: the consumer is gone) grant nothing twice that anyone
uses. The fix (Ra machine version 3) grants no credit in return/5 and caps credit at the prefetch.
Regression scenarios: tests/adapters/scenarios/rabbitmq-5609-*.yaml and
rabbitmq-quorum-closes-then-nack-at-limit.yaml.

The model: a nack that asks for a requeue and dead-letters or drops the message instead (its delivery
limit) raises the consumer's own prefetch bound (``ConsumerState.max_unacked``) by one
(RedeliveryMixin._rabbitmq_5609_credit_twice); a new consumer starts from its configured prefetch.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="rabbitmq-server-5609",
    key="rabbitmq-server#5609",
    option="nack_at_limit_grants_credit_twice",
    rules=("DELIVERY-16",),
    source="https://github.com/rabbitmq/rabbitmq-server/pull/5609",
    releases=">=3.8, <3.11",
    summary="a nack that dead-letters or drops a quorum-queue message at its delivery limit grants the "
            "consumer credit twice, so it holds one more unacknowledged message than its prefetch",
)
