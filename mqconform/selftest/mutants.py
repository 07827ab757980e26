"""Mutants: realistic bugs an implementer could make, each behind the adapter contract.

Each mutant is the reference model with one thing wrong. The self-test runs the machine of the
mutant's area against it and requires a failure with a short shrunk counterexample.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.reference_model.broker import Broker, SendResult
from mqconform.reference_model.config import Message
from mqconform.reference_model.options import ModelOptions
from mqconform.reference_model.profiles import ARTEMIS
from mqconform.reference_model.state import AddressState, QueueState
from mqconform.reference_model.world import World

WorldFactory = Callable[[ModelOptions], World]


@attrs.frozen
class Mutant:
    name: str
    area: str
    description: str
    world: WorldFactory

    def adapter(self) -> ReferenceAdapter:
        """The broken implementation behind the contract, claiming the artemis profile."""
        return ReferenceAdapter(options=ARTEMIS, world_factory=self.world)


def _options(**changes: object) -> WorldFactory:
    return lambda options: World(options.evolve(**changes))


def _broker(cls: type[Broker]) -> WorldFactory:
    return lambda options: World(options, broker_class=cls)


class _ScheduledIgnoresRing(Broker):
    """Due scheduled messages enter the head without the ring check."""

    def _fire_due(self, queue: QueueState) -> bool:
        due = queue.scheduler.pop_due(self.now_ms)
        for ref in reversed(due):
            ref.place = "pending"
            queue.pending.add_head(ref, ref.size)
        return bool(due)


class _DropStillDelivers(Broker):
    """DROP reports the message dropped but routes it anyway."""

    def _route(self, address: AddressState, message: Message, unblocking: bool = False) -> SendResult:
        if address.config.full_policy == "DROP" and address.full():
            full_policy = address.config
            address.config = attrs.evolve(full_policy, full_policy="PAGE", max_size_bytes=-1,
                                          max_size_messages=-1)
            try:
                super()._route(address, message, unblocking)
            finally:
                address.config = full_policy
            return "dropped"
        return super()._route(address, message, unblocking)


class _BlockLosesMessage(Broker):
    """BLOCK: when memory frees up the blocked sends are released but never routed."""

    def _unblock(self, address: AddressState) -> bool:
        moved = False
        while address.blocked and not address.full():
            address.blocked.popleft()
            moved = True
        return moved


class _CopyPerQueue(AddressState):
    def hold(self, msg: Message) -> None:
        self.memory_bytes += msg.size
        self.memory_messages += 1
        self.copies[msg.id] = self.copies.get(msg.id, 0) + 1

    def release(self, msg: Message) -> None:
        self.memory_bytes -= msg.size
        self.memory_messages -= 1
        count = self.copies[msg.id] - 1
        if count:
            self.copies[msg.id] = count
        else:
            del self.copies[msg.id]


class _CopyPerQueueBroker(Broker):
    """Each queue's reference holds its own copy of the message in address memory."""

    def declare_address(self, config):  # type: ignore[no-untyped-def]
        super().declare_address(config)
        state = _CopyPerQueue(config)
        self.addresses[config.name] = state


class _WindowOverrun(Broker):
    """Dispatch ignores the consumer window: every pending message is pushed to the consumer."""

    def _deliver(self, queue: QueueState) -> bool:
        moved = False
        for consumer in queue.consumers:
            if consumer.config.browser or consumer.no_buffering:
                continue
            while len(queue.pending):
                ref = self._first_match(queue, consumer)
                if ref is None:
                    break
                queue.pending.remove(ref.id)
                self._dispatch(queue, consumer, ref)
                consumer.buffer[ref.id] = ref
                consumer.buffer_bytes += ref.size
                moved = True
        return moved



QUEUE_MUTANTS: tuple[Mutant, ...] = (
    Mutant("priority-ignored", "delivery", "priorities are ignored: plain FIFO", _options(priority_levels=1)),
    Mutant("window-overrun", "delivery", "the consumer window is not enforced on dispatch",
           _broker(_WindowOverrun)),
    Mutant("ring-evicts-delivering", "ring", "the ring counts delivering messages and evicts them",
           _options(bound_counts="stored", evict_unacked=True)),
    Mutant("cancel-to-tail", "ring", "cancelled messages return to the tail, not their place",
           _options(return_placement="tail")),
    Mutant("scheduled-to-tail", "scheduling", "due scheduled messages go to the tail",
           _options(scheduled_placement="tail")),
    Mutant("scheduled-ignores-ring", "scheduling", "the ring is not enforced when a scheduled message "
           "arrives", _broker(_ScheduledIgnoresRing)),
    Mutant("count-on-cancel", "redelivery", "the delivery count is kept when a message is cancelled "
           "without an ack", _options(cancel_undoes_delivery_count=False)),
    Mutant("delay-on-close", "redelivery", "the redelivery delay is applied on a plain consumer close",
           _options(delay_on_close=True)),
    Mutant("drop-still-delivers", "paging", "DROP reports dropped but still delivers",
           _broker(_DropStillDelivers)),
    Mutant("block-loses-message", "paging", "BLOCK loses the blocked message when it unblocks",
           _broker(_BlockLosesMessage)),
    Mutant("copy-per-queue", "paging", "a copy per queue instead of one per address",
           _broker(_CopyPerQueueBroker)),
)

MUTANTS: tuple[Mutant, ...] = QUEUE_MUTANTS
