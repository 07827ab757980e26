"""Stream retention with several consumers: an address that is a JetStream stream (RETENTION-1..11).

An address declared with ``retention`` (feature ``retention``) is one stream; each of its queues is
one durable consumer of it, created by :meth:`RetentionMixin.join` and deleted by
:meth:`RetentionMixin.leave`. Routing is the model's address with several queues (Artemis multicast):
a queue gets a copy of every message sent after it joined (RETENTION-3; DeliverPolicy New,
RETENTION-6) and keeps its own counts (RETENTION-11). What the stream stores depends on the retention:

- ``limits``: every accepted message, whatever was acknowledged or deleted (RETENTION-1, 2);
- ``interest``: the messages some queue still holds; a send with no queue stores nothing (RETENTION-4),
  the last acknowledgement or terminate removes a message (RETENTION-5, 8), a queue that leaves
  releases what only it held (RETENTION-7);
- ``workqueue``: one queue without a subject filter (a second join is refused, RETENTION-9); the stream
  stores what that queue holds (RETENTION-10). A send before the queue joined is not modelled (the
  stream would keep it for the consumer to come: DeliverPolicy All).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ._core import BrokerCore
from .config import AddressConfig, QueueConfig
from .errors import ModelMisuse
from .state import AddressState

JoinResult = Literal["created", "refused"]
RETENTIONS = ("limits", "interest", "workqueue")


class RetentionMixin(BrokerCore):
    """RETENTION-1..11: stream addresses and their durable consumers."""

    if TYPE_CHECKING:
        def declare_queue(self, config: QueueConfig) -> None: ...
        def _check_priority(self, priority: str | None) -> None: ...  # priority_groups

    def _check_retention(self, config: AddressConfig) -> None:
        """An address with a retention needs the feature and one of RETENTIONS."""
        if config.retention is None:
            return
        self._need("retention", "retention")
        if config.retention not in RETENTIONS:
            raise ModelMisuse(f"unknown retention {config.retention!r}")

    def _stream(self, address_name: str) -> AddressState:
        self._need("retention", "retention")
        address = self.addresses.get(address_name)
        if address is None or address.config.retention is None:
            raise ModelMisuse(f"{address_name!r} is not an address declared with a retention")
        return address

    def _stream_send(self, address: AddressState) -> None:
        """RETENTION-1: a Limits stream stores every message it accepts (called as it is routed)."""
        if address.config.retention == "workqueue" and not address.queue_states:
            raise ModelMisuse("a send to a workqueue stream before its consumer joined is not modelled")
        if address.config.retention == "limits":
            address.stream_accepted += 1

    def join(self, queue_name: str, address_name: str, priority: str | None = None) -> JoinResult:
        """A durable consumer of the stream, as queue `queue_name`: ``refused`` for a second one of a
        WorkQueue stream (RETENTION-9), else ``created`` (a queue of the address from now on); with
        `priority` its ADR-42 priority policy (DELIVERY-41..44)."""
        address = self._stream(address_name)
        self._check_priority(priority)
        if address.config.retention == "workqueue" and address.queue_states:
            return "refused"
        self.declare_queue(QueueConfig(name=queue_name, address=address_name, max_delivery_attempts=-1))
        self._queue(queue_name).priority_policy = priority
        return "created"

    def leave(self, queue_name: str) -> None:
        """Delete the queue's durable consumer (its consumers closed first): what it stored leaves it,
        so an Interest stream keeps only what other queues hold (RETENTION-7), a Limits one keeps all
        (RETENTION-2)."""
        queue = self._queue(queue_name)
        address = self._stream(queue.address.name)
        if queue.consumers:
            raise ModelMisuse(f"close the consumers of {queue_name!r} before it leaves")
        for ref in [r for r in queue.live.values() if r.place in ("pending", "delivering")]:
            if ref.place == "pending":  # (a joined queue has no delivery limit: nothing is exhausted)
                queue.pending.remove(ref.id)
            else:  # held by no consumer (its consumers are closed): waiting out a NAK delay
                queue.nak_waiting.pop(ref.id, None)
                queue.orphans.pop(ref.id, None)
                self._undeliver(queue, ref)
            self._terminate(queue, ref, "killed")
        index = address.queue_states.index(queue)
        del address.queue_states[index]
        del address.queues[index]
        del self.queues[queue_name]
        self._touch(address)

    def retention_state(self, address_name: str) -> dict[str, int]:
        """The stream's stored message count: RETENTION-1/2 (limits: every accepted message),
        RETENTION-4/5/7/8 (interest) and RETENTION-10 (workqueue): the messages a queue still holds."""
        address = self._stream(address_name)
        if address.config.retention == "limits":
            return {"messages": address.stream_accepted}
        return {"messages": len(address.copies)}
