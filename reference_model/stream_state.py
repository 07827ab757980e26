"""The queue in JetStream's terms: the stream and its durable consumer (one per queue, as the nats
adapter maps it), computed from the queue.

Implements RESTART-5 (:meth:`StreamStateMixin.stream_state`, what survives a restart) and
DELIVERY-27..30 (:meth:`StreamStateMixin.consumer_state`, the consumer's counters and sequence pairs
after every step; the stream's messages and sequences). Under the other profiles the consumer
counters have no broker analogue beyond the queue counters pending_count and delivering_count
(DELIVERY-1): ``consumer_state`` is the jetstream profile's feature.
"""

from __future__ import annotations

from ._core import BrokerCore
from .state import QueueState, Ref


class StreamStateMixin(BrokerCore):
    """Observations of a queue as a JetStream stream and durable consumer."""

    def _first_consumer(self, queue: QueueState) -> None:
        """DELIVERY-28: the durable is created with the first consumer of the queue, starting at the
        stream's first sequence (consumer.go selectStartingSeqNo, DeliverAll: o.sseq = FirstSeq), so
        what the stream lost before (evicted, purged) counts as delivered past."""
        queue.had_consumer = True
        first = min((ref.sequence for ref in queue.live.values()), default=queue.sequence + 1)
        queue.delivered_seq = max(queue.delivered_seq, first - 1)
        queue.ack_floor = (queue.dispatches, queue.delivered_seq)

    def _purged_past(self, queue: QueueState) -> None:
        """DELIVERY-28: a purge of everything stored moves the durable past the last sequence
        (consumer.go purge: o.sseq = last + 1, its pending cleared). DELIVERY-30: the stream's first
        sequence is last + 1 from then on while it is empty."""
        queue.purged = True
        if queue.had_consumer:
            queue.delivered_seq = max(queue.delivered_seq, queue.sequence)
            queue.ack_floor = (queue.dispatches, queue.delivered_seq)

    def _left_ack_pending(self, queue: QueueState, ref: Ref) -> None:
        """DELIVERY-29: a delivered message left the consumer's pending (acknowledged, terminated,
        evicted: consumer.go decStreamPending terminates it): moveAckFloor. The floor moves only when
        the message is the one just above it, then to one below the oldest still unacknowledged; with
        nothing unacknowledged, to the delivered pair. O(live) only for the message at the floor."""
        if ref.first_dseq != queue.ack_floor[0] + 1 and (queue.delivering or queue.pending.returned_ids):
            return  # not at the floor, and something is still unacknowledged
        oldest = min(self._unacked(queue), key=lambda r: r.sequence, default=None)
        if oldest is None:
            queue.ack_floor = (queue.dispatches, queue.delivered_seq)
        elif ref.first_dseq == queue.ack_floor[0] + 1:
            queue.ack_floor = (oldest.first_dseq - 1, oldest.sequence - 1)

    def _unacked(self, queue: QueueState) -> list[Ref]:
        """Delivered and neither acknowledged nor terminated: held, parked, waiting out a NAK delay or
        returned to the redelivery queue (JetStream's o.pending)."""
        stored = [ref for ref in queue.live.values() if ref.place == "delivering"]
        return stored + queue.pending.returned()

    def stream_state(self, queue_name: str) -> dict[str, int]:
        """RESTART-5: the queue as a JetStream stream and its durable consumer (consumer.go info()):
        ``msgs``, ``first_seq``, ``last_seq``, ``num_deleted`` (interior gaps); ``num_pending`` (never
        delivered), ``num_ack_pending`` (delivered and not acknowledged, including parked messages and
        NAKed ones waiting in the redelivery queue), ``num_redelivered`` (of those, delivered more than
        once), ``delivered_seq`` (highest stream sequence delivered) and ``ack_floor_seq`` (every
        sequence up to it is acknowledged or gone)."""
        queue = self._queue(queue_name)
        stored = list(queue.live.values())
        last = queue.sequence
        first = min((ref.sequence for ref in stored), default=last + 1 if last or queue.purged else 0)
        msgs = len(stored)
        consumer = self._consumer_counters(queue)
        return {
            "msgs": msgs, "first_seq": first, "last_seq": last,
            "num_deleted": last - first + 1 - msgs if msgs else 0,
            "num_pending": consumer["num_pending"],
            "num_ack_pending": consumer["num_ack_pending"],
            "num_redelivered": consumer["num_redelivered"],
            "delivered_seq": consumer["delivered_stream_seq"],
            "ack_floor_seq": consumer["ack_floor_stream_seq"],
        }

    def consumer_state(self, queue_name: str) -> dict[str, int]:
        """DELIVERY-27..29: the queue's durable consumer as consumer.go info() shows it (a fresh one
        before the first consumer opens)."""
        self._need("consumer_state", "consumer_state")
        return self._consumer_counters(self._queue(queue_name))

    def _consumer_counters(self, queue: QueueState) -> dict[str, int]:
        """DELIVERY-27 ``num_pending`` (stored, never delivered), ``num_ack_pending`` (len(o.pending)),
        ``num_redelivered`` (len(o.rdc): of those, delivered more than once, and the messages kept past
        max_deliver, REDELIVERY-21); DELIVERY-28
        ``delivered_consumer_seq`` (every delivery, redeliveries included) and
        ``delivered_stream_seq``; DELIVERY-29 the ack floor pair (see :meth:`_left_ack_pending`)."""
        returned = queue.pending.returned()
        unacked = self._unacked(queue)
        floor_dseq, floor_seq = queue.ack_floor
        # REDELIVERY-21: a message kept past max_deliver keeps its o.rdc entry (a limit of 1: none
        # is reported, consumer.go info(), nats-server >= 2.11.4 #6877)
        # (a bug model reports them for a limit of 1 too: reference_model.bugs.nats_server_6877)
        exhausted = len(queue.exhausted.keys() - queue.rdc_dropped) + len(queue.rdc_removed) \
            if queue.delivery_limit != 1 or self.options.max_deliver_one_reports_redelivered else 0
        # a bug model's 0 o.rdc entries (reference_model.bugs.nats_refused_pull_counts_redelivered)
        zero = queue.rdc_zero
        return {
            "num_pending": len(queue.pending) - len(returned),
            "num_ack_pending": len(unacked),
            "num_redelivered": sum(1 for ref in unacked if ref.delivery_count > 1 or ref.id in zero)
            + exhausted,
            "delivered_consumer_seq": queue.dispatches,
            "delivered_stream_seq": queue.delivered_seq,
            "ack_floor_consumer_seq": floor_dseq,
            "ack_floor_stream_seq": floor_seq,
        }
