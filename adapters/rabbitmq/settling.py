"""The rabbitmq adapter's waits on the broker: until what it pushed is in the consumers' buffers,
until asynchronous returns and dead-lettering show in the counts (quorum queues apply them after the
channel operation), and until a quorum queue's own expiry timer has removed what a get brought to its
head."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pika.adapters.blocking_connection import BlockingChannel

from mqconform.reference_model.config import Message

from .._base import BrokerAdapter, lowest_ttl
from .records import Expectation, _Consumer, _Held, _over_limit, _Queue


class RabbitMQSettling(BrokerAdapter):
    """The waits of the rabbitmq adapter (see the module docstring)."""

    queue_type: str
    settle_timeout: float
    #: settles that ended at settle_timeout (the broker did not reach the awaited state)
    settle_timeouts: int
    queues: dict[str, _Queue]
    consumers: dict[str, _Consumer]
    #: (queue, message id) -> when its TTL runs out on this process' monotonic clock
    _expires_at: dict[tuple[str, str], float]

    if TYPE_CHECKING:  # provided by RabbitMQAdapter
        def _control(self) -> BlockingChannel: ...
        def _pump(self) -> None: ...
        def _queue(self, name: str) -> _Queue: ...

    def _ready(self, queue: _Queue, channel: BlockingChannel | None = None) -> int:
        frame = (channel or self._control()).queue_declare(queue.physical, passive=True)
        return int(frame.method.message_count)

    def _settle(self, names: list[str], expect_ready: Expectation | None = None,
                via: BlockingChannel | None = None) -> None:
        """Wait until what the broker pushed is in the buffers (see the module docstring) and,
        for the queues `expect_ready` names, until their ready + pushed counts reach the values
        asynchronous returns lead to (quorum queues apply returns after the channel operation): one
        mapping, or alternatives of which one must hold whole (a return past its TTL may be expired
        at once or requeued); bounded in time. `via`: the channel of the operation (an ack or nack has
        no reply): the ready count is read on it, so the broker has taken the operation before it
        answers (one channel's frames stay in order)."""
        deadline = self._settle_deadline(self.settle_timeout)
        alternatives = [expect_ready] if isinstance(expect_ready, dict) else list(expect_ready or [])
        hinted = {name for alternative in alternatives for name in alternative}
        pending = [self.queues[n] for n in dict.fromkeys([*names, *hinted]) if n in self.queues]
        while True:
            waiting: list[_Queue] = []
            totals: dict[str, int] = {}
            for queue in pending:
                pushers = [c for c in self.consumers.values() if c.queue == queue.name and c.prefetch]
                if not pushers and queue.name not in hinted:
                    continue  # nothing is pushed and nothing is awaited: no round trip needed
                channel = via if via is not None and via.is_open else None
                ready = self._ready(queue, channel or (pushers[0].channel if pushers else None))
                for consumer in pushers:  # a round trip on each: deliveries sent before now arrive
                    consumer.channel.basic_qos(prefetch_count=consumer.prefetch or 0)
                self._pump()
                fulls = [c.full() for c in pushers]
                # DELIVERY-26: only the active consumer of a single active consumer queue fills
                if not (ready == 0 or (any(fulls) if queue.single_active and fulls else all(fulls))):
                    waiting.append(queue)
                totals[queue.name] = ready + self._pushed(queue.name)
            reached = not alternatives or any(
                all(totals.get(name) == value for name, value in alternative.items())
                for alternative in alternatives)
            if not waiting and reached:
                return
            if time.monotonic() > deadline:
                self.settle_timeouts += 1
                return
            pending = waiting + [q for q in pending if q.name in hinted and q not in waiting]
            time.sleep(0.001)

    def _before_get(self, queue: _Queue) -> tuple[int, dict[str, int]] | None:
        """EXPIRY-4 on a quorum queue holding a message past its TTL: its ready count and its
        dead-letter queues' counts before a basic.get (None where nothing can expire)."""
        if self.queue_type != "quorum" or not any(
                self._expired(queue.name, msg_id) for msg_id in (*queue.order.returns, *queue.order.sent)):
            return None
        dead = self._dead_letter_counts(queue)
        ready = self._ready(queue)
        queue.order.trim(ready)
        return ready, dead

    def _await_expired_head(self, queue: _Queue, ready: int, dead: dict[str, int]) -> None:
        """EXPIRY-4: messages past their TTL that the get brought to the head of a quorum queue go
        by a timer the queue sets, a Raft command of its own that lands after the get-ok, and reach
        the dead-letter queues later still: wait (bounded, _settle) until the counts show them gone,
        so the next observation does not race the broker's own expiry. (Classic queues expire in
        the queue process before they answer.)"""
        gone = queue.order.leading(lambda msg_id: self._expired(queue.name, msg_id))
        if gone:
            expect = {name: count + gone for name, count in dead.items()}
            expect[queue.name] = ready - 1 - gone + self._pushed(queue.name)
            self._settle([], expect)
            queue.order.trim(self._ready(queue))

    def _before_checkout(self, queue: _Queue) -> tuple[int, dict[str, int]] | None:
        """EXPIRY-4/7 on a quorum queue with dead-letter queues holding a message past its TTL: its
        ready + pushed count and its dead-letter queues' counts before an operation after which the
        broker checks out (a prefetch consumer's basic.consume, an ack that frees prefetch room);
        None where nothing can expire or nothing would be dead-lettered."""
        if self.queue_type != "quorum" or not self.addresses.get(queue.dead_letter or "") or not any(
                self._expired(queue.name, msg_id) for msg_id in (*queue.order.returns, *queue.order.sent)):
            return None
        ready = self._ready(queue)
        queue.order.trim(ready)
        return ready + self._pushed(queue.name), self._dead_letter_counts(queue)

    def _await_checkout_expiry(self, queue: _Queue, before: tuple[int, dict[str, int]]) -> None:
        """EXPIRY-4/7: a checkout that delivers the head expires the messages past their TTL it
        brings to the head, in the same Raft command (rabbit_fifo v3.10.8 checkout_one runs
        expire_msgs before each checkout), so the queue's counts show them gone at once; their
        at-most-once dead-lettering is an effect run after the command (rabbit_fifo_dlx:discard, a
        mod_call publishing to the dead-letter exchange), and reaches the dead-letter queues later
        still. What left the queue neither ready nor pushed is awaited there (bounded, _settle), so
        the next observation does not race it."""
        total, dead = before
        ready = self._ready(queue)
        gone = total - (ready + self._pushed(queue.name))
        if gone > 0:
            self._settle([], {name: count + gone for name, count in dead.items()})
        queue.order.trim(ready)

    def _expect_after_reject(self, state: _Consumer, rejected: list[_Held]) -> dict[str, int]:
        """A wait hint after a nack requeue=false: the dead-letter queues gain the rejected messages."""
        dead = self._dead_letter_counts(self._queue(state.queue))
        return {name: count + len(rejected) for name, count in dead.items()}

    def _dead_letter_counts(self, queue: _Queue) -> dict[str, int]:
        """Ready + prefetch-held counts of the queue's dead-letter queues (none without one)."""
        return {name: self._ready(self.queues[name]) + self._pushed(name)
                for name in self.addresses.get(queue.dead_letter or "", [])}

    def _pushed(self, queue: str) -> int:
        """Messages held by the queue's prefetch consumers."""
        return sum(c.held() for c in self.consumers.values() if c.queue == queue and c.prefetch)

    def _note_expiry(self, names: list[str], message: Message) -> None:
        """When, on this process' clock, a message sent now is past its TTL in each queue it goes to
        (the lower of x-message-ttl and its own, EXPIRY-2): a wait hint only."""
        now = time.monotonic()
        for name in names:
            ttl = lowest_ttl(self.queues[name].message_ttl_ms, message.ttl_ms)
            if ttl is not None:
                self._expires_at[(name, message.id)] = now + ttl / 1000

    def _expired(self, queue: str, msg_id: str) -> bool:
        """The message's TTL in `queue` has run out on this process' clock (none noted: no)."""
        deadline = self._expires_at.get((queue, msg_id))
        return deadline is not None and time.monotonic() >= deadline

    def _note_returns(self, state: _Consumer, returned: list[_Held]) -> None:
        """Returns within the delivery limit go to the quorum queue's returns, served first."""
        queue = self._queue(state.queue)
        for held in returned:
            if not _over_limit(queue, held):
                queue.order.returned(held.msg_id)

    def _expect_after_return(self, state: _Consumer, returned: list[_Held]) -> list[dict[str, int]]:
        """Ready + prefetch-held counts the broker reaches once `returned` are back (a wait hint for
        _settle, never an observation: quorum queues apply returns after the channel operation).
        Over-limit quorum returns leave for the dead-letter queues; drop-head trims to x-max-length.
        A return already past its TTL (EXPIRY-3/4) is expired at once where it lands at the head and
        waits behind the others where it lands at the tail: both outcomes are awaited (waiting for the
        wrong one ran to settle_timeout while the next message's TTL ran out on the broker's clock)."""
        queue = self._queue(state.queue)
        limited = [_over_limit(queue, h) for h in returned]
        over = sum(limited)
        expired = sum(1 for h, gone in zip(returned, limited, strict=True)
                      if not gone and self._expired(queue.name, h.msg_id))
        base = self._ready(queue) + len(returned)
        held = self._pushed(queue.name) - (len(returned) if state.prefetch else 0)
        dead_base = self._dead_letter_counts(queue)
        alternatives = []
        for dead in dict.fromkeys([over + expired, over]):
            ready = base - dead
            if queue.max_length >= 0 and queue.overflow == "drop-head":
                ready = min(ready, queue.max_length)
            expect = {queue.name: ready + held}
            if dead:
                expect.update({name: count + dead for name, count in dead_base.items()})
            alternatives.append(expect)
        return alternatives
