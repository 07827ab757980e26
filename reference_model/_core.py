"""The state every part of the reference broker shares, and the few helpers all parts use.

:class:`BrokerCore` owns the attributes (options, logical clock, addresses, queues, consumers, event
log, settle bookkeeping), the lookups, and the end of a message's life in a queue (:meth:`_terminate`:
counters DELIVERY-10, address memory PAGING-17, page completion PAGING-9). The area mixins subclass it
(:mod:`.delivery`, :mod:`.redelivery`, :mod:`.ring`, :mod:`.clock`, :mod:`.paging`) and
:class:`~.broker.Broker` composes them; the methods one area calls in another are declared here for the
type checker only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import attrs

from .config import Message
from .errors import ModelMisuse, Unsupported
from .options import ModelOptions, ReturnPlacement
from .profiles import ARTEMIS
from .state import AddressState, ConsumerState, QueueState, Ref

if TYPE_CHECKING:
    from .broker import QueueCounters

SendResult = Literal["accepted", "paged", "dropped", "failed", "blocked"]
AckResult = Literal["ok", "failed"]
Reason = Literal["acknowledged", "replaced", "killed", "expired"]


@attrs.frozen
class Event:
    """Something the model did on its own account (eviction, dead letter, firing, depage, unblock)."""

    time_ms: int
    kind: str
    queue: str
    msg_id: str
    detail: str = ""


class BrokerCore:
    """State and shared helpers of the reference broker (see :class:`~.broker.Broker`)."""

    def __init__(self, options: ModelOptions = ARTEMIS) -> None:
        self.options = options
        self.now_ms = 0
        self.addresses: dict[str, AddressState] = {}
        self.queues: dict[str, QueueState] = {}
        self.consumers: dict[str, ConsumerState] = {}
        #: DELIVERY-26: subscriptions so far (each consumer's registration number)
        self._registrations = 0
        self.events: list[Event] = []
        #: REDELIVERY-29: consumer name -> (queue, tx-acked refs) of a closed consumer's open session
        self.sessions: dict[str, tuple[str, list[Ref]]] = {}
        self.record_events = False
        #: settle's per-profile switches (the options are frozen)
        self._whole_pages = options.depage_rule == "address_memory"
        #: addresses an operation changed and the next settle must look at (see _settle)
        self._dirty: dict[str, AddressState] = {}
        #: REDELIVERY-27/28: ack-wait and nack-delay timers (see :mod:`.ack_wait`)
        self._timers: list[tuple[int, int, str, object, str, int]] = []
        self._timer_seq = 0
        #: the first logical instant at which timers started at different logical instants came due
        #: together (REDELIVERY-27, see :mod:`.ack_wait`); None while there was none
        self.timer_tie_ms: int | None = None

    # ------------------------------------------------------------------ lookups
    def _need(self, feature: str, what: str) -> None:
        if not self.options.has(feature):
            raise Unsupported(f"{what} is not supported by profile {self.options.name}")

    def _queue(self, name: str) -> QueueState:
        try:
            return self.queues[name]
        except KeyError:
            raise ModelMisuse(f"unknown queue {name!r}") from None

    def _consumer(self, name: str) -> ConsumerState:
        try:
            return self.consumers[name]
        except KeyError:
            raise ModelMisuse(f"unknown consumer {name!r}") from None

    def _event(self, kind: str, queue: str, msg_id: str, detail: str = "") -> None:
        if self.record_events:
            self.events.append(Event(self.now_ms, kind, queue, msg_id, detail))

    def _touch(self, address: AddressState) -> None:
        """Mark an address whose state changed: the next settle looks at it (and only at such)."""
        self._dirty[address.name] = address

    # ------------------------------------------------------------------ leaving the queue
    def _undeliver(self, queue: QueueState, ref: Ref) -> None:
        queue.delivering -= 1
        queue.delivering_bytes -= ref.size

    def _terminate(self, queue: QueueState, ref: Ref, reason: Reason, counted: bool = True) -> None:
        """A ref leaves the queue for good: counters (C5), address memory, page completion (PAGING-9).
        Not `counted` (a broker bug's, reference_model.bugs.artemis_non_destructive_delete): no counter
        and its bytes stay in the address."""
        counters = queue.counters
        # REDELIVERY-21: one kept past max_deliver is in no o.pending: the ack floor stays
        was_pending_ack = ref.first_dseq and ref.place != "exhausted"
        if not counted:
            pass
        elif reason == "acknowledged":
            counters.acknowledged += 1
        elif reason == "replaced":
            counters.replaced += 1
        elif reason == "expired":
            counters.expired += 1
        else:
            counters.killed += 1
        ref.place = "done"
        del queue.refs[ref.id]
        queue.live.pop(ref.id, None)
        address = queue.address
        self._dirty[address.name] = address
        if ref.in_memory and counted:
            address.release(ref.msg)
            ref.in_memory = False
        if ref.page is not None:
            queue.page_counter -= 1
        if ref.page is not None and ref.page in address.page_outstanding:
            address.page_outstanding[ref.page] -= 1
            if address.page_outstanding[ref.page] == 0:
                self._clean_pages(address)
        if was_pending_ack and self.options.has("consumer_state"):
            self._left_ack_pending(queue, ref)

    if TYPE_CHECKING:
        # Implemented by the area mixins (named in the comments); declared for the type checker.
        def _settle(self, *touched: QueueState, dispatch: bool = True) -> None: ...  # broker
        def _settle_everything(self) -> None: ...  # broker
        def counters(self, queue_name: str) -> QueueCounters: ...  # broker
        def _deliver(self, queue: QueueState) -> bool: ...  # delivery
        def _rejoin_rotation(self, queue: QueueState) -> None: ...  # delivery
        def _cancel_list(self, consumer: ConsumerState) -> tuple[list[Ref], list[Ref]]: ...  # delivery
        def _parked(self, queue: QueueState) -> int: ...  # restart
        def _first_consumer(self, queue: QueueState) -> None: ...  # stream_state
        def _stream_send(self, address: AddressState) -> None: ...  # retention
        def _check_group_send(self, queues: list[QueueState]) -> None: ...  # message_groups
        def _push(self, queue: QueueState, consumer: ConsumerState, ref: Ref) -> None: ...  # delivery
        def _purged_past(self, queue: QueueState) -> None: ...  # stream_state
        def _left_ack_pending(self, queue: QueueState, ref: Ref) -> None: ...  # stream_state
        def close(self, consumer_name: str) -> None: ...  # delivery
        def _check_consumer(self, queue: QueueState, consumer: ConsumerState) -> None: ...  # consumer_prio
        def _subscribe(self, queue: QueueState, consumer: ConsumerState) -> None: ...  # consumer_prio
        def _unsubscribe(self, queue: QueueState, consumer: ConsumerState) -> None: ...  # consumer_prio
        def _dispatch_order(self, queue: QueueState) -> list[int]: ...  # consumer_priority
        @staticmethod
        def _served(queue: QueueState, consumer: ConsumerState) -> None: ...  # consumer_priority
        def _return_all(self, consumer: ConsumerState, delay: bool) -> None: ...  # redelivery
        def _return(self, queue: QueueState, ref: Ref, *, undo: bool, delay: bool,
                    placement: ReturnPlacement, ring_check: bool,
                    expired: bool = False, track: bool = False) -> None: ...  # redelivery
        def _take_exhausted(self, queue: QueueState) -> None: ...  # redelivery
        def _fire_timers(self) -> None: ...  # ack_wait
        def _start_ack_wait(self, consumer: ConsumerState, msg_id: str) -> None: ...  # ack_wait
        def _nak_later(self, queue: QueueState, ref: Ref, delay_ms: int) -> None: ...  # ack_wait
        def _not_held(self, consumer: ConsumerState, msg_id: str,
                      verb: Literal["ack", "nack", "reject"],
                      delay_ms: int = 0) -> AckResult: ...  # invalid_ack
        def _admit_to_queue(self, queue: QueueState, address: AddressState,
                            message: Message) -> bool: ...  # ring
        def _overflow_result(self, queue: QueueState) -> SendResult: ...  # ring
        def _add_tail(self, queue: QueueState, ref: Ref) -> None: ...  # ring
        def _evict_one(self, queue: QueueState) -> bool: ...  # ring
        def _take_from_consumers(self, queue: QueueState, ref: Ref) -> None: ...  # ring
        def _listed(self, queue: QueueState, ref: Ref, *, head: bool) -> None: ...  # ring
        def _unlisted(self, queue: QueueState, ref: Ref) -> None: ...  # ring
        def _lv_put(self, queue: QueueState, ref: Ref) -> None: ...  # ring
        def _lv_if_absent(self, queue: QueueState, ref: Ref) -> None: ...  # ring
        def _lv_check(self, queue: QueueState, ref: Ref) -> None: ...  # ring
        def _prune_last_values(self, queue: QueueState) -> bool: ...  # last_value
        def _enqueue_new(self, queue: QueueState, ref: Ref) -> None: ...  # clock
        def _stamp_expiry(self, queue: QueueState, ref: Ref) -> None: ...  # expiry
        def _check_ttl(self, value: int | None, feature: str, what: str) -> None: ...  # expiry
        def _duplicate(self, address: AddressState, message: Message) -> bool: ...  # expiry
        def _expire_due(self, queue: QueueState) -> bool: ...  # expiry
        def _dead_letter_copy(self, queue: QueueState, message: Message,
                              reason: str) -> None: ...  # redelivery
        def _route(self, address: AddressState, message: Message,
                   unblocking: bool = False) -> SendResult: ...  # paging
        def _clean_pages(self, address: AddressState) -> None: ...  # paging
