"""Artemis: a last-value message delivered directly at its send stays its value's current message.

Artemis 2.24.0 to 2.56.0 (2.40.0 and 2.56.0 replayed; from ARTEMIS-3890, which made a delivered
reference stop being current and prunes what is not current after each delivery pass; not reported
upstream yet: docs/findings/artemis-last-value-direct-delivery-stays-current.md). LASTVALUE-5,
LASTVALUE-6. Found through a 2.40.0 ``ci`` run (ring area, a ring of 1 that is also a last-value queue:
nine counterexamples of one six-step sequence with a nack, which the claimed model gives since a nacked
message follows the close rule; the close shows the bug alone). References at tag 2.40.0 of apache/artemis,
artemis-server/.../core/server/impl/.

A destructive last-value queue forgets a delivered message as its value's current one through
LastValueQueue#refRemoved (``removeIfCurrent(ref)``, LastValueQueue.java L157-L161), which
QueueImpl#deliver calls when it takes a reference off the list (removeMessageReference, QueueImpl.java
L3070-L3073). A message sent while a consumer has room is delivered directly instead
(LastValueQueue#addTail tracks it, then ``super.addTail(ref, isNonDestructive() ? false : direct)``,
L71-L76; QueueImpl#addTail -> deliverDirect, L1006, L3698-L3760): it is never listed, so refRemoved
never runs and it stays current while its consumer holds it, and after its acknowledgement too (only an
EXPIRED or KILLED ack removes it, LastValueQueue#acknowledge L165-L181), until a newer message of its
value replaces it. A close returns an older message of its value through LastValueQueue#addHead
(trackLastValueIfAbsent), whose putIfAbsent finds the stale one: the returned message is then pruned
although no message of its value is current (2.26.0, 2.40.0, 2.56.0: m4 (lvk v1) listed and given to
c1, m5 (v1) taken by c2 at its send, c1 closed: m4 pruned, message count 0, where the model keeps it).
Regression scenario: tests/adapters/scenarios/artemis-last-value-direct-delivery-stays-current.yaml.

An individual cancel (nack) puts a message back with QueueImpl#cancel -> internalAddSorted
(L1786-L1797), which tracks nothing, and the pass it forces runs before the nacker's credit returns: a
nacked message that is not current is pruned (REPLACED, #pruneLastValues L122-L141), the bug
artemis-last-value-nack-pruned-before-credit. With this bug a message taken at its send is still current
there and stays (2.40.0: queue of ring 1 and key lvk, a prefetching consumer, m3 (priority 0, lvk v0)
taken at its send, m7..m9 sent, m3 nacked: m9 goes to the consumer and m3 stays pending, message count
1), which the claimed model gives too (a nacked message follows the close rule, LASTVALUE-6): the nine
counterexamples of the 2.40.0 run are the claimed model's answer. Once such a message has come back by a
close and been given again from the list, refRemoved has forgotten it and a full consumer's nack prunes
it (the eight FAILs of a 2.56.0 ``ci`` run's ring area explored with this option on: the nack bug, held
with this one: tests/adapters/scenarios/artemis-last-value-nack-pruned-before-credit.yaml).

The model (option ``last_value_direct_stays_current``; hooks in Broker._admit_to_queue and _take): a
keyed message sent to a destructive last-value queue whose list is empty, while a consumer of the queue
has room for it and takes it (not paused; no scheduled delivery), is marked as sent directly
(QueueState.lv_direct); its dispatch then leaves it its value's current one (no _unlisted), and so do
its acknowledgement and a nack. Whether the broker sends directly also depends on its directDeliver
flag (QueueImpl.java L289, true on a new queue), which every listed add clears (addHead L846,
addSorted L870, addTail L1015, depage L3232) and a send re-checks (QueueImpl#addTail L980-L1004: back
on when the list is empty) at most once a second of real time, the first re-check at once
(lastDirectDeliveryCheck starts at 0). The model follows the flag (QueueState.lv_direct_on): cleared when
anything was listed since the last send (PendingList.inserted), re-checked at the first send that
finds it off, and never again, as the examples of a run take well under a second of real time between
such sends; a replay that took longer can be sent directly where the model lists it, and fails (it is
not explained). Before the flag was followed, the model sent directly whenever its list was empty: six
FAILs of a 2.40.0 ``ci`` run's ring area, a keyed message listed by the broker (the flag off after a
ring of 1 had listed the sends before it) whose nack the nack bug then pruned. Not modelled: an expiry
or a dead-lettering of such a message, which removes it as current (the model keeps it), and a
restart's reload tracking the reloaded messages afresh (LastValueQueue#reload; the flag starts over).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import BugModel

if TYPE_CHECKING:
    from ..state import QueueState, Ref

BUG = BugModel(
    name="artemis-last-value-direct-delivery-stays-current",
    key="Artemis LastValueQueue: deliverDirect skips refRemoved (not yet filed)",
    option="last_value_direct_stays_current",
    rules=("LASTVALUE-5", "LASTVALUE-6"),
    source="https://github.com/apache/artemis/blob/2.40.0/artemis-server/src/main/java/org/apache/"
           "activemq/artemis/core/server/impl/LastValueQueue.java#L71-L76",
    releases=">=2.24",
    summary="a last-value message a consumer takes the moment it is sent (delivered directly, never "
            "listed) stays its value's current message, so an older message of its value that a close "
            "returns is pruned as stale although no message of its value is current",
)


def sent(queue: QueueState, ref: Ref, now_ms: int) -> None:
    """A send is about to add `ref` to `queue`'s tail: mark it as delivered directly when the broker
    would (QueueImpl#addTail -> deliverDirect): a destructive last-value queue with its directDeliver
    flag on (see the module), a message with the key, an empty list, and a consumer not paused with
    room for it whose selector takes it."""
    if (queue.last_value_key is None or queue.non_destructive or queue.ring_size == 0
            or (ref.msg.scheduled_at_ms or 0) > 0):  # a scheduled send never reaches the flag
        return
    listed = queue.pending.inserted
    if listed != queue.lv_direct_listed:  # listed since the last send: the flag was cleared
        queue.lv_direct_on = False
    if not queue.lv_direct_on and not queue.lv_direct_rechecked:
        queue.lv_direct_rechecked = True
        queue.lv_direct_on = not len(queue.pending)
    direct = queue.lv_direct_on and not len(queue.pending) and now_ms >= queue.paused_until and \
        any(consumer.has_room() and consumer.matches(ref) for consumer in queue.consumers)
    # the model lists every send before it dispatches it: a direct one's insert leaves the flag on
    queue.lv_direct_listed = listed + 1 if direct else listed
    if direct and queue.last_value(ref) is not None:
        queue.lv_direct.add(ref.id)
