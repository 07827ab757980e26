"""nats-server before 2.11.11 and 2.12.2: a no_wait pull request without an expiry that the consumer
queues is answered only when it can be served, so a pull while the consumer is paused gets the
message the consumer gives once the pause ends.

nats-server 2.11.0 to 2.11.10 and 2.12.0 to 2.12.1 (consumer pause is in nats-server from 2.11.0, the
adapter's capability consumer_pause, so 2.10 is not applicable). DELIVERY-34. consumer.go
processNextMsgRequest answers a no_wait request at once with "404 No Messages" only when the consumer
has no message pending at all; otherwise the request is queued, and processWaiting ended a queued
no_wait request at the end of the stream only when it had delivered something (``eos && wr.noWait &&
wr.d > 0``) or at its expiry, of which this one has none. A paused consumer delivers nothing, so the
request waits until the pause ends and is then served. Fixed by "[FIXED] Consumer send 404 No Messages
on EOS" (PR #7466, issue #7457; commit f1364b976 on main, in 2.11.11 and 2.12.2): a no_wait request
without an expiry that reaches the end of the stream having delivered nothing is answered 404.
Found by the NATS release matrix (`mqconform matrix --adapter nats --versions all --settings ci`): the
redelivery area's corpus of 2.11.11 replayed on 2.11.4-2.11.10, a 5-step story. Bisected with the
regression scenario tests/adapters/scenarios/nats-paused-pull-waits-for-resume.yaml: fails on 2.11.0
.. 2.11.10 and 2.12.0 .. 2.12.1, holds on 2.11.11 and from 2.12.2.

The model: a receive of a pull consumer while its queue is paused takes what the same receive would
take with the pause over (the request was served when it ended). What else the server did up to the
pause's end (an ack wait running out meanwhile) is not modelled: the registry explains a finding
only when the whole counterexample holds against this model. A pause ending after the adapter's
request timeout gives no answer at all (unknown, never a verdict). A fetch (a pull for a batch) is
not changed: the same request would wait there too, but no finding has shown it yet.
"""

from __future__ import annotations

from .model import BugModel

BUG = BugModel(
    name="nats-server-7457",
    key="nats-server#7457",
    option="paused_pull_waits_for_resume",
    rules=("DELIVERY-34",),
    source="https://github.com/nats-io/nats-server/pull/7466",
    releases=">=2.11.0, <2.11.11; >=2.12.0, <2.12.2",
    summary="a no_wait pull request on a paused consumer with messages pending is queued, not answered "
            "404, and served when the pause ends; fixed in 2.11.11 and 2.12.2",
)
