"""The `hornetq` adapter: an embedded HornetQ 2.4, sends over STOMP 1.2 (stomp.py) or, on a BLOCK
address, a core producer of the launcher; consumers as core sessions of the launcher's in-VM client;
management through its control socket. It claims the `hornetq-2.4` profile: the paging area (PAGE,
DROP, FAIL, BLOCK) and transactions on the real broker.

It starts its own server (:mod:`.server`, once per process). How each operation maps, how logical
sizes are made exact on HornetQ's memory estimates (``UNIT``, ``STEP``, ``SLACK``) and what is not
offered and why: docs/adapters/hornetq.md.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import time
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import stomp
from stomp.exception import ConnectFailedException, NotConnectedException, StompException

from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import OTHER_PRODUCTS_AREAS, NotObservable, Refused, Unsupported, component, operation
from .._stomp import StompListener as _Listener
from ..contract import AdapterError, Result
from .records import DEFAULT_ATTEMPTS, _Address, _Consumer, _Queue
from .server import DEFAULT_VERSION, Control, ControlError, HornetQProcess, shared_server
from .sizes import ID_HEADER, SLACK, UNIT, HornetQSizes

#: how long a receive waits for the message of a consumer made with a message pending
DISPATCH_WAIT_S = 5.0

CAPABILITIES = frozenset({
    "queues", "paging", "drop_policy", "fail_policy", "paging_flag", "consumer_pull",
    "counter:message_count", "counter:pending_count", "counter:delivering_count",
    "counter:scheduled_count", "counter:paged_count", "pending_order",
    # QueueImpl#getMessagesAdded; 2.4.9 counts a depaged message twice while it is delivering
    # (docs/findings/hornetq-2.4-paging.md, finding 4): a registered broker bug with a bug model
    # (hornetq-2.4-messages-added-depaged-delivering)
    "counter:added",
    # MessageReference#getDeliveryCount, read through the control socket (REDELIVERY-1, -2)
    "delivery_count",
    # each consumer's core session acks in a transaction (ClientSession#commit, #rollback) and can be
    # closed (ClientSession#close): REDELIVERY-4, -29, -30; a consumer with cumulative acks is one
    # core consumer whose ClientMessage#acknowledge acks every delivery up to the message (DELIVERY-11)
    "transactions", "sessions", "cumulative_ack",
    # BLOCK through a core producer of the launcher (every send asks for its own credits, which the
    # paging store holds back while the address is full: PAGING-26)
    "block_policy",
})


class HornetQAdapter(HornetQSizes):
    """HornetQ 2.4 (embedded) over STOMP and the launcher's control socket."""

    name = "hornetq"
    profile = "hornetq-2.4"
    #: seed areas of other products: set aside from the coverage figure (verdict.Coverage)
    absent_areas: ClassVar[Mapping[str, str]] = OTHER_PRODUCTS_AREAS
    real_time = True
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "address_limits": "this address setting (max-size-messages, page limits)",
        "scheduling": "scheduled delivery (the broker fires on its real clock, not the suite's)",
    }

    def __init__(self, version: str = DEFAULT_VERSION, timeout: float = 10.0) -> None:
        self.version = str(version)
        #: the Maven release it runs (the jars call themselves 2.5.0.SNAPSHOT: findings, 6); the
        #: known-deviation registry matches its entries' versions against it
        self.server_version = self.version
        self.timeout = float(timeout)
        self.capabilities = CAPABILITIES
        self.server: HornetQProcess | None = None
        self.control: Control | None = None
        self.sender: Any = None
        self.sender_listener = _Listener()
        #: consumer name -> its core session, kept over a close and reopen under the same name until
        #: close_session (REDELIVERY-29)
        self.sessions: dict[str, str] = {}
        self.prefix = ""
        self.fixed_bytes = None
        self.fixed_encoded = 0
        self.core_fixed = 0
        self.core_encoded = 0
        self.ref_bytes = 0
        self._ids = itertools.count()
        self._reset()
        self.addresses_: dict[str, _Address] = {}

    # ------------------------------------------------------------------ plumbing
    def _classify(self, op: str, exc: Exception) -> Result | None:
        if isinstance(exc, TimeoutError):
            return Result.info(f"hornetq: {op}: timed out ({one_line(exc)})")
        if isinstance(exc, ControlError):
            return Result.fail(f"hornetq: {op}: {one_line(exc)}")
        if isinstance(exc, NotConnectedException | StompException | OSError):
            return Result.info(f"hornetq: {op}: connection lost ({one_line(exc)})")
        return None

    def _ctl(self, *words: object) -> list[str]:
        assert self.control is not None
        return self.control.ask(*words)

    def _connect(self) -> tuple[Any, _Listener]:
        assert self.server is not None
        listener = _Listener()
        conn = stomp.Connection12([("127.0.0.1", self.server.port)], reconnect_attempts_max=1,
                                  timeout=self.timeout, heartbeats=(0, 0), auto_content_length=False)
        conn.set_listener("mqc", listener)
        try:
            conn.connect(wait=True)
        except (ConnectFailedException, StompException, OSError) as exc:
            raise AdapterError(f"hornetq: cannot use {self.server.url}: {one_line(exc)}") from None
        sock = getattr(conn.transport, "socket", None)
        if isinstance(sock, socket.socket):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, listener

    def _receipt(self) -> str:
        return f"r{next(self._ids) % 10**8:08d}"  # fixed width: the receipt header is part of the size

    def _await(self, listener: _Listener, receipt: str, what: str) -> str | None:
        """The ERROR text for `receipt`, or None for a RECEIPT; TimeoutError when neither came."""
        if not listener.wait_for(lambda: receipt in listener.receipts, self.timeout):
            if listener.errors:
                return listener.errors[-1]
            raise TimeoutError(f"no receipt for {what} within {self.timeout:g} s")
        return listener.receipts.pop(receipt)

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        self.close()
        if self.server is None or not self.server.running():
            self.server = shared_server(self.version)
            self.control = None
            self.sender = None
            self.sessions = {}
        if self.control is None:
            try:
                self.control = Control(self.server.control_port, self.timeout)
            except OSError as exc:
                raise AdapterError(f"hornetq: no control socket: {one_line(exc)}") from None
        if self.sender is None or not self.sender.is_connected():
            self.sender, self.sender_listener = self._connect()
        # short names: the destination header is part of every message's memory estimate
        self.prefix = f"mqc-{uuid.uuid4().hex[:10]}"
        self._reset()
        self.addresses_ = {}
        if self.fixed_bytes is None:
            self._calibrate()

    def close(self) -> None:
        """Unsubscribe every consumer, destroy the namespace's queues and address settings."""
        if self.control is not None:
            try:
                for consumer in list(self.consumers.values()):
                    self._release_all(consumer)
                for session in self.sessions.values():
                    with contextlib.suppress(ControlError):
                        self._ctl("endsession", session)
                for queue in self.queues.values():
                    with contextlib.suppress(ControlError):
                        self._ctl("destroy", queue.physical)
                for address in self.addresses_.values():
                    if address.config.full_policy == "BLOCK":
                        with contextlib.suppress(ControlError):
                            self._ctl("unproducer", address.physical)
                    with contextlib.suppress(ControlError):
                        self._ctl("unsettings", address.physical)
            except Exception:  # the server is gone: start afresh at the next open
                self.control = None
        self.sessions = {}
        self._reset()
        self.addresses_ = {}

    def shutdown(self) -> None:
        self.close()
        if self.sender is not None:
            with contextlib.suppress(Exception):
                self.sender.disconnect()
        self.sender = None
        if self.control is not None:
            self.control.close()
            self.control = None

    # ------------------------------------------------------------------ declarations
    def _physical(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    @operation
    def declare_address(self, config: AddressConfig) -> None:
        if config.name in self.addresses:
            raise Refused(f"address {config.name!r} already exists")
        if (config.max_size_messages >= 0 or config.page_limit_bytes >= 0
                or config.page_limit_messages >= 0 or config.retroactive_message_count):
            raise Unsupported(self._why("address_limits"))
        if config.max_size_bytes == 0:
            raise Unsupported("max_size_bytes 0 (HornetQ's isFull treats 0 as no limit)")
        address = self._create(config)
        if config.full_policy == "BLOCK":
            # the producer's session asks for its first credit now, creating the paging store
            self._ctl("producer", address.physical)

    def _create(self, config: AddressConfig, attempts: int = DEFAULT_ATTEMPTS) -> _Address:
        address = _Address(config.name, self._physical(config.name), config, attempts=attempts)
        self._settings(address)
        self.addresses_[config.name] = address
        self.addresses[config.name] = address.queues
        return address

    def _settings(self, address: _Address) -> None:
        """Write the address settings (before its first queue creates its paging store)."""
        config = address.config
        limit = config.max_size_bytes
        max_bytes = UNIT * limit - SLACK if limit > 0 else limit
        page = UNIT * config.page_size_bytes
        if max_bytes > 0:
            page = min(page, max_bytes - 1)
        self._ctl("settings", address.physical, max_bytes, max(page, 1), config.full_policy, address.attempts)

    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        self._check_new_queue(config, one_per_address=False)
        if config.ring_size >= 0:
            raise Unsupported("ring queues (HornetQ has none)")
        attempts = config.max_delivery_attempts
        attempts = DEFAULT_ATTEMPTS if attempts is None else max(attempts, -1)
        address = self.addresses_.get(config.address_name)
        if address is None:
            address = self._create(AddressConfig(config.address_name), attempts)
        elif attempts != address.attempts:
            # max-delivery-attempts is an address setting, read at each return (QueueImpl#checkRedelivery)
            if address.queues:
                raise Unsupported("queues of one address with different max delivery attempts "
                                  "(an address setting in HornetQ)")
            address.attempts = attempts
            self._settings(address)
        physical = self._physical(config.name)
        self._ctl("queue", address.physical, physical)
        address.queues.append(config.name)
        self.queues[config.name] = _Queue(config.name, physical, address.name)

    # ------------------------------------------------------------------ sends
    def _settle_blocked(self) -> None:
        """BLOCK: wait until the sends the broker lets through now went through (PagingStoreImpl#addSize
        runs the held credit grants once the address is under its limit again), so each operation and
        observation sees them routed, as the model routes them when memory frees."""
        for address in self.addresses_.values():
            if address.blocked:
                address.blocked = int(self._ctl("bsettle", address.physical)[0])

    @operation
    def send(self, to: str, message: Message) -> str:
        names = self._route(to, message)
        address = self.addresses_[to]
        if message.ttl_ms is not None:
            raise Unsupported("message TTLs")
        self._settle_blocked()
        if address.config.full_policy == "BLOCK":
            pad, body = self._core_frame(message)
            if " " in message.id:
                raise Unsupported("message ids with a space on a BLOCK address")
            answer = self._ctl("bsend", address.physical, message.id, pad, body)[0]
            if answer == "blocked":
                address.blocked += 1
            return answer
        receipt = self._receipt()
        frame = self._frame(address, message, receipt)
        policy = address.config.full_policy
        before = self._ctl("store", address.physical) if names else ["0", "0"]
        if self.sender is None or not self.sender.is_connected():
            self.sender, self.sender_listener = self._connect()
        self.sender.send(destination=address.physical, **frame)
        error = self._await(self.sender_listener, receipt, "send")
        if error is not None:
            self.sender_listener.errors.clear()
            if policy == "FAIL":
                return "failed"
            raise Refused(f"hornetq: send refused: {error}")
        if not names:
            return "accepted"
        if before[1] == "1":  # isPaging: PAGE in page mode, DROP/FAIL full (PagingStoreImpl#isPaging)
            return "paged" if policy == "PAGE" else "dropped"
        return "accepted"

    # ------------------------------------------------------------------ consumers
    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        self._check_new_consumer(config)
        self._require_pull(config)
        if config.max_unacked is not None:
            raise Unsupported(self._why("max_unacked"))
        session = self.sessions.get(config.name)
        if session is None:  # a consumer reopened under its name continues its session (REDELIVERY-29)
            session = f"{self.prefix}-{config.name}"
            self._ctl("session", session)
            self.sessions[config.name] = session
        state = _Consumer(config.name, config.queue, session)
        if config.cumulative_ack:
            # one core consumer (window 0: one credit per receive) that holds every message it
            # received: a core ack is cumulative per consumer (ServerConsumerImpl#acknowledge)
            state.kept = f"k{next(self._ids)}"
            self._ctl("consume", session, state.kept, self.queues[config.queue].physical, 0)
        self.consumers[config.name] = state

    def _counts(self, queue: _Queue) -> dict[str, int]:
        answer = self._ctl("counters", queue.physical)
        count, delivering, scheduled, added, _paged, in_memory = (int(x) for x in answer)
        return {"message_count": count, "pending_count": in_memory, "delivering_count": delivering,
                "scheduled_count": scheduled, "paged_count": count - in_memory - delivering - scheduled,
                "added": added}

    @operation
    def receive(self, consumer: str) -> str | None:
        self._settle_blocked()
        state = self._consumer(consumer)
        queue = self.queues[state.queue]
        deadline = time.monotonic() + DISPATCH_WAIT_S
        while True:
            pending = self._ctl("list", queue.physical, ID_HEADER)
            if pending:
                break
            # depaging runs on the page executor: wait while the queue still has paged messages
            if self._counts(queue)["paged_count"] <= 0:
                # a depage may have landed between the two reads (paged 0 now, the list read before):
                # the message is in memory, so list once more before answering nothing
                pending = self._ctl("list", queue.physical, ID_HEADER)
                if pending:
                    break
                return None
            if time.monotonic() > deadline:
                return None
            time.sleep(0.01)
        if state.kept is not None:
            answer = self._ctl("next", state.kept, ID_HEADER, int(DISPATCH_WAIT_S * 1000))
            if answer[0] == "none":
                raise TimeoutError("a pending message was not dispatched")
            state.held[answer[0]] = state.kept
            return answer[0]
        head = pending[0]
        if "'" in head or " " in head:
            raise Unsupported("message ids with a quote or a space (the pull filter names the id)")
        # a core consumer (window 0) whose filter is the head's id: it can take no other message, and
        # it holds this one until the ack (or a close) ends it
        name = f"c{next(self._ids)}"
        got = self._ctl("take", state.session, name, queue.physical, ID_HEADER, head,
                        int(DISPATCH_WAIT_S * 1000))[0]
        if got == "none":
            raise TimeoutError("a pending message was not dispatched")
        state.held[got] = name
        return got

    def _release_all(self, consumer: _Consumer) -> None:
        """Close the consumer's core consumers, the latest first: each returns its message to the
        queue head (QueueImpl#addHead), so the earliest ends up first. The one core consumer of a
        consumer with cumulative acks returns what it holds in delivery order (ServerConsumerImpl#close)."""
        if consumer.kept is not None:
            self._ctl("release", consumer.kept)
        else:
            for name in reversed(list(consumer.held.values())):
                self._ctl("release", name)
        consumer.held.clear()

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        state = self._consumer(consumer)
        if state.kept is not None:
            return self._ack_up_to(state, msg_id, tx)
        name = state.held.pop(msg_id, None)
        if name is None:
            return "failed"
        try:
            self._ctl("ack", name, 1 if tx else 0)
            failed = False
        except ControlError:
            failed = True
        # the core consumer took only this message (its filter): closing it returns nothing, and a
        # message acknowledged in the session's transaction stays there (ServerConsumerImpl#close)
        self._ctl("release", name)
        return "failed" if failed else "ok"

    def _ack_up_to(self, state: _Consumer, msg_id: str, tx: bool) -> str:
        """DELIVERY-11: ClientMessage#acknowledge acks every message the core consumer delivered up to
        and including this one (in the session's transaction with `tx`)."""
        if msg_id not in state.held:
            return "failed"
        try:
            self._ctl("ackupto", state.kept, msg_id, 1 if tx else 0)
        except ControlError:
            return "failed"
        ids = list(state.held)
        for done in ids[:ids.index(msg_id) + 1]:
            del state.held[done]
        return "ok"

    @operation
    def commit(self, consumer: str) -> None:
        self._ctl("commit", self._consumer(consumer).session)

    @operation
    def rollback(self, consumer: str) -> None:
        """The held messages' core consumers are closed first, the latest first (what a rollback of
        the session's one consumer returns newest first), then the session rolls back what it
        acknowledged in its transaction (RefsOperation#afterRollback: back at the head in ack order)."""
        state = self._consumer(consumer)
        if state.kept is None:
            self._release_all(state)
        # ClientSession#rollback: the server cancels what the session's consumers hold
        # (ServerSessionImpl#doRollback), back at the head after what the transaction acknowledged
        state.held.clear()
        self._ctl("rollback", state.session)

    @operation
    def close_consumer(self, consumer: str) -> None:
        state = self._forget_consumer(consumer)
        self._release_all(state)

    @component("close_session")
    @operation(name="close_session")
    def _close_session(self, /, consumer: object = None, **_: Any) -> None:
        """``close_session`` (capability ``sessions``, REDELIVERY-30): ClientSession#close, which
        closes the session's consumers first (ClientSessionImpl#closeChildren; here the held messages'
        core consumers, the latest first), then the server rolls back its transaction
        (ServerSessionImpl#doClose)."""
        name = str(consumer)
        state = self._forget_consumer(name)
        self._release_all(state)
        session = self.sessions.pop(name, None)
        if session is not None:
            self._ctl("endsession", session)

    # ------------------------------------------------------------------ observations
    @operation
    def counters(self, queue: str) -> dict[str, int]:
        self._settle_blocked()
        return self._counts(self._queue(queue))

    @operation
    def delivery_count(self, queue: str, msg_id: str) -> int | None:
        """The broker's count of the message (pending in memory, scheduled or delivering; control
        `dcount`); None when the queue no longer holds it; not observable while it is paged (a paged
        message has no reference in memory to read)."""
        self._settle_blocked()
        answer = self._ctl("dcount", self._queue(queue).physical, ID_HEADER, msg_id)[0]
        if answer == "paged":
            raise NotObservable("the message may be paged: HornetQ keeps no reference in memory to read")
        return None if answer == "none" else int(answer)

    @operation
    def pending_ids(self, queue: str) -> list[str]:
        self._settle_blocked()
        return self._ctl("list", self._queue(queue).physical, ID_HEADER)

    @operation
    def paging(self, address: str) -> bool:
        if address not in self.addresses_:
            raise Refused(f"unknown address {address!r}")
        self._settle_blocked()
        return self._ctl("store", self.addresses_[address].physical)[1] == "1"
