"""Acks and nacks of messages a consumer does not hold: DELIVERY-22, per profile.

A client can send an ack or a nack that names a message its consumer does not hold: one it never
received, one it already settled, one another consumer holds. What the broker does is the profile's
``invalid_ack`` option:

- ``refused`` (Artemis): the ack fails and nothing changes;
- ``closes_channel`` (RabbitMQ 3.10: ``PRECONDITION_FAILED 406 unknown delivery tag``): the ack fails
  and the broker closes the consumer's channel, which gives back every message the consumer holds
  exactly as a close does (RabbitMQ quorum: delivery count +1, delivery limit checked); the consumer
  then goes on on a new channel (what a client does after a channel error), so it stays open;
- ``by_sequence`` (JetStream): +ACK, -NAK and +TERM name the message's stream sequence, so a
  consumer that was ever given the message (it holds a reply subject for it) settles the message
  wherever it now is: delivered to another consumer (of the same durable), or waiting in the
  redelivery queue (acked or terminated: removed; -NAK: no change); once the message is gone the
  server answers as for any ack and nothing changes. A consumer never given the message has nothing
  to send: the ack fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ._core import AckResult, BrokerCore
from .errors import Unsupported
from .options import ReturnPlacement
from .state import ConsumerState, QueueState, Ref

Verb = Literal["ack", "nack", "reject"]


class InvalidAckMixin(BrokerCore):
    """DELIVERY-22: the answer to an ack or nack of a message the consumer does not hold."""

    if TYPE_CHECKING:
        def ack(self, consumer_name: str, msg_id: str, tx: bool = False) -> AckResult: ...  # delivery
        def nack(self, consumer_name: str, msg_id: str, requeue: bool = True,
                 multiple: bool = False, delay_ms: int = 0) -> AckResult: ...  # redelivery
        def _return(self, queue: QueueState, ref: Ref, *, undo: bool, delay: bool,
                    placement: ReturnPlacement, ring_check: bool,
                    expired: bool = False, track: bool = False) -> None: ...  # redelivery
        def _dead_letter(self, queue: QueueState, ref: Ref,
                         reason: str = "delivery_limit") -> None: ...  # redelivery

    def _not_held(self, consumer: ConsumerState, msg_id: str, verb: Verb,
                  delay_ms: int = 0) -> AckResult:
        """DELIVERY-22: `consumer` settles `msg_id`, which it does not hold (see the module)."""
        mode = self.options.invalid_ack
        if mode == "closes_channel":
            self._channel_error(consumer)
        elif mode == "by_sequence" and msg_id in consumer.tokens:
            self._by_sequence(consumer, msg_id, verb, delay_ms)
            return "ok"
        return "failed"

    def _channel_error(self, consumer: ConsumerState) -> None:
        """DELIVERY-22 closes_channel: everything the consumer holds returns as on a close
        (REDELIVERY-8, RING-8), is dispatched to the other consumers, then the consumer subscribes
        again on a new channel."""
        queue = self._queue(consumer.config.queue)
        subscribed = consumer in queue.consumers
        if subscribed:
            self._unsubscribe(queue, consumer)  # DELIVERY-26: an active consumer hands over
        self._return_all(consumer, delay=self.options.delay_on_close)
        consumer.get_tags.clear()  # REDELIVERY-31: the new channel's delivery tags start at 1
        consumer.next_get_tag = 1
        self._settle(queue)
        if subscribed:
            self._subscribe(queue, consumer)
            self._settle(queue)

    def _by_sequence(self, consumer: ConsumerState, msg_id: str, verb: Verb, delay_ms: int) -> None:
        """DELIVERY-22 by_sequence: the verb applies to the message where it now is."""
        queue = self._queue(consumer.config.queue)
        ref = queue.refs.get(msg_id)
        if ref is None:
            return  # acked, terminated or evicted: the server answers, nothing changes
        if ref.place == "exhausted":
            # REDELIVERY-21: past max_deliver it is in no o.pending; +ACK and +TERM clear its
            # o.rdc entry, so the work-queue stream removes it (processAckMsgLocked, needAck);
            # -NAK finds it in no o.pending and does nothing (processNak)
            if verb != "nack":
                del queue.exhausted[ref.id]
                if verb == "ack":
                    self._terminate(queue, ref, "acknowledged")
                else:
                    self._dead_letter(queue, ref, "rejected")
                self._settle(queue)
            return
        if ref.place == "delivering":
            holder = next((c for c in queue.consumers if msg_id in c.received), None)
            if holder is not None:
                if verb == "ack":
                    self.ack(holder.name, msg_id)
                elif delay_ms:
                    self.nack(holder.name, msg_id, delay_ms=delay_ms)
                else:
                    self.nack(holder.name, msg_id, requeue=verb == "nack")
                return
            if msg_id in queue.nak_waiting:  # REDELIVERY-28: waiting out a NAK delay
                self._settle_waiting(queue, ref, verb, delay_ms)
                return
        if ref.place != "pending":  # in a consumer's buffer, scheduled or paged
            raise Unsupported(f"an ack by sequence of a {ref.place} message nobody received "
                              "is not modelled")
        if verb == "nack" and not delay_ms:
            return  # already waiting for redelivery (addToRedeliverQueue is a no-op)
        queue.pending.remove(msg_id)
        if queue.special:
            self._unlisted(queue, ref)
        if verb == "nack":  # REDELIVERY-28: off the redelivery queue until the delay has passed
            ref.place = "delivering"
            queue.delivering += 1
            queue.delivering_bytes += ref.size
            self._nak_later(queue, ref, delay_ms)
            return
        if verb == "ack":
            self._terminate(queue, ref, "acknowledged")
        else:
            self._terminate(queue, ref, "killed")
            self._event("killed", queue.name, ref.id, "terminated")
        self._settle(queue)

    def _settle_waiting(self, queue: QueueState, ref: Ref, verb: Verb, delay_ms: int) -> None:
        """DELIVERY-22 by_sequence on a message waiting out a NAK delay (REDELIVERY-28): +ACK and
        +TERM remove it, -NAK returns it now, -NAK with a delay waits again."""
        del queue.nak_waiting[ref.id]
        if verb == "nack" and delay_ms:
            self._nak_later(queue, ref, delay_ms)
            return
        if verb == "nack":
            self._return(queue, ref, undo=False, delay=False, placement=self.options.nack_placement,
                         ring_check=not self.options.nack_bypasses_ring)
        else:
            self._undeliver(queue, ref)
            if verb == "ack":
                self._terminate(queue, ref, "acknowledged")
            else:
                self._dead_letter(queue, ref, "rejected")
        self._settle(queue)
