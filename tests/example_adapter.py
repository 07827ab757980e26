"""A tiny, complete outside adapter: an in-memory FIFO queue with pull consumers.

It is the README's "write your own adapter" example. It claims the `rabbitmq-classic` profile
(no priorities, unacknowledged messages return to their original place) and declares only what it
can do and observe; the suite runs the machines whose capabilities it has.
Use it with:  mqconform run --adapter tests.example_adapter:FifoAdapter
"""

from __future__ import annotations

from typing import Any

from mqconform.adapters.contract import Result
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig


class FifoAdapter:
    name = "fifo-example"
    profile = "rabbitmq-classic"
    capabilities = frozenset({"queues", "consumer_pull", "counter:pending_count", "counter:message_count"})

    def __init__(self, lose_returns: bool = False, sloppy_acks: bool = False) -> None:
        self.lose_returns = lose_returns  # bug switches, to see the suite fail
        self.sloppy_acks = sloppy_acks  # an ack of a message the consumer does not hold answers ok
        self.open("")

    def open(self, namespace: str) -> None:
        self.queues: dict[str, list[tuple[int, str]]] = {}
        self.unacked: dict[str, dict[str, tuple[int, str]]] = {}
        self.consumer_queue: dict[str, str] = {}
        self.seq = 0

    def close(self) -> None:
        self.queues.clear()

    def declare_address(self, config: AddressConfig) -> Result:
        return Result.ok()

    def declare_queue(self, config: QueueConfig) -> Result:
        if config.ring_size != -1:
            return Result.fail("unsupported: ring_size")
        self.queues[config.name] = []
        return Result.ok()

    def open_consumer(self, config: ConsumerConfig) -> Result:
        if config.window_bytes != 0:
            return Result.fail("unsupported: only pull consumers (window_bytes 0)")
        self.consumer_queue[config.name] = config.queue
        self.unacked[config.name] = {}
        return Result.ok()

    def send(self, to: str, message: Message) -> Result:
        self.seq += 1
        self.queues[to].append((self.seq, message.id))
        return Result.ok("accepted")

    def receive(self, consumer: str) -> Result:
        queue = self.queues[self.consumer_queue[consumer]]
        if not queue:
            return Result.ok(None)
        entry = queue.pop(0)
        self.unacked[consumer][entry[1]] = entry
        return Result.ok(entry[1])

    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> Result:
        held = self.unacked[consumer].pop(msg_id, None)
        return Result.ok("ok" if held or self.sloppy_acks else "failed")

    def close_consumer(self, consumer: str) -> Result:
        queue = self.queues[self.consumer_queue.pop(consumer)]
        if not self.lose_returns:
            queue.extend(self.unacked.pop(consumer).values())
            queue.sort()
        return Result.ok()

    def counters(self, queue: str) -> Result:
        pending = len(self.queues[queue])
        held = sum(len(u) for c, u in self.unacked.items() if self.consumer_queue.get(c) == queue)
        return Result.ok({"pending_count": pending, "message_count": pending + held})

    def _unsupported(self, *args: Any, **kwargs: Any) -> Result:
        return Result.fail("unsupported")

    nack = commit = rollback = browse = set_ring_size = advance = _unsupported
    delivery_count = paging = pending_ids = call = _unsupported
