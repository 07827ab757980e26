"""The `reference` adapter: the model itself, in-process, under any profile (or a mutant of it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.errors import ModelMisuse, Unsupported
from mqconform.reference_model.options import ModelOptions
from mqconform.reference_model.profiles import profile as load_profile
from mqconform.reference_model.world import World

from .contract import COUNTERS, EXTRA_CAPABILITIES, Result


def _capabilities(options: ModelOptions) -> frozenset[str]:
    """The profile's features, the observations, and RING-28 `overflow:<policy>` per policy."""
    policies = frozenset(f"overflow:{name}" for name, _ in options.overflow_policies)
    return frozenset(options.features) | EXTRA_CAPABILITIES | policies


class ReferenceAdapter:
    """Adapter over :class:`~mqconform.reference_model.world.World`.

    `implementation` is the profile the model behind the adapter follows (default artemis);
    `world_factory` lets the self-test plug a mutant world in behind the same contract.
    """

    name = "reference"

    def __init__(self, implementation: str = "artemis",
                 world_factory: Callable[[ModelOptions], World] | None = None,
                 options: ModelOptions | None = None) -> None:
        self.options = options if options is not None else load_profile(implementation)
        self.profile = self.options.name
        self.capabilities = _capabilities(self.options)
        self._factory = world_factory or World
        self.world = self._factory(self.options)

    # lifecycle ---------------------------------------------------------------
    def open(self, namespace: str) -> None:
        self.world = self._factory(self.options)

    def close(self) -> None:
        pass

    def _do(self, fn: Callable[[], Any]) -> Result:
        try:
            return Result.ok(fn())
        except Unsupported as exc:
            return Result.fail(f"unsupported: {exc}")
        except ModelMisuse as exc:
            return Result.fail(str(exc))

    # queues ------------------------------------------------------------------
    def declare_address(self, config: AddressConfig) -> Result:
        return self._do(lambda: self.world.broker.declare_address(config))

    def declare_queue(self, config: QueueConfig) -> Result:
        return self._do(lambda: self.world.broker.declare_queue(config))

    def open_consumer(self, config: ConsumerConfig) -> Result:
        return self._do(lambda: self.world.broker.open_consumer(config))

    def send(self, to: str, message: Message) -> Result:
        return self._do(lambda: self.world.broker.send(to, message))

    def receive(self, consumer: str) -> Result:
        return self._do(lambda: self.world.broker.receive(consumer))

    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> Result:
        return self._do(lambda: self.world.broker.ack(consumer, msg_id, tx))

    def nack(self, consumer: str, msg_id: str, requeue: bool = True, multiple: bool = False,
             delay_ms: int = 0) -> Result:
        return self._do(lambda: self.world.broker.nack(consumer, msg_id, requeue, multiple, delay_ms))

    def message_info(self, queue: str, msg_id: str) -> Result:
        """DELIVERY-23: the redelivered flag and dead-letter reason of a held message."""
        return self._do(lambda: self.world.broker.message_info(queue, msg_id))

    def purge(self, queue: str) -> Result:
        """RING-29 (capability purge): drop the queue's messages; their number."""
        return self._do(lambda: self.world.broker.purge(queue))

    def set_subject_limit(self, queue: str, limit: int) -> Result:
        """RING-34 (capability max_per_subject): a new per-subject limit."""
        return self._do(lambda: self.world.broker.set_subject_limit(queue, limit))

    def delete_message(self, queue: str, msg_id: str) -> Result:
        """DELIVERY-31..33 (capability delete): delete one message by id; whether one was deleted."""
        return self._do(lambda: self.world.broker.delete_message(queue, msg_id))

    def deliver_scheduled(self, queue: str, msg_id: str) -> Result:
        """SCHED-16 (capability deliver_scheduled): deliver one scheduled message now; whether one was."""
        return self._do(lambda: self.world.broker.deliver_scheduled(queue, msg_id))

    def move_message(self, queue: str, msg_id: str, to: str) -> Result:
        """DELIVERY-48 (capability move): move one pending message by id to queue `to`; whether one was."""
        return self._do(lambda: self.world.broker.move_message(queue, msg_id, to))

    def in_progress(self, consumer: str, msg_id: str) -> Result:
        """REDELIVERY-27 (capability ack_wait): restart the ack wait of a held message."""
        return self._do(lambda: self.world.broker.in_progress(consumer, msg_id))

    def commit(self, consumer: str) -> Result:
        return self._do(lambda: self.world.broker.commit(consumer))

    def rollback(self, consumer: str) -> Result:
        return self._do(lambda: self.world.broker.rollback(consumer))

    def close_consumer(self, consumer: str) -> Result:
        return self._do(lambda: self.world.broker.close(consumer))

    def browse(self, queue: str) -> Result:
        return self._do(lambda: self.world.broker.browse(queue))

    def counters(self, queue: str) -> Result:
        def read() -> dict[str, int]:
            values = self.world.broker.counters(queue)  # read at every step: no asdict copy
            return {name: getattr(values, name) for name in COUNTERS}
        return self._do(read)

    def set_ring_size(self, queue: str, size: int) -> Result:
        return self._do(lambda: self.world.broker.set_ring_size(queue, size))

    def advance(self, ms: int) -> Result:
        return self._do(lambda: self.world.advance(ms))

    def delivery_count(self, queue: str, msg_id: str) -> Result:
        return self._do(lambda: self.world.broker.delivery_count(queue, msg_id))

    def paging(self, address: str) -> Result:
        return self._do(lambda: self.world.broker.paging(address))

    def pending_ids(self, queue: str) -> Result:
        return self._do(lambda: self.world.broker.pending_ids(queue))

    def held_ids(self) -> dict[str, frozenset[str]]:
        """The model's own view, not an adapter operation: per queue, the ids its consumers hold
        (dispatched to them or received, not acknowledged), for the deviation shapes."""
        return {name: frozenset(msg_id for consumer in state.consumers
                                for msg_id in (*consumer.buffer, *consumer.received))
                for name, state in self.world.broker.queues.items()}

    # flow-control components -------------------------------------------------
    def call(self, op: str, **kwargs: Any) -> Result:
        return self._do(lambda: self.world.call(op, **kwargs))
