"""What the broker adapters share: result wrapping, lookups, the common checks, unsupported operations.

:class:`BrokerAdapter` is a base class; each adapter module keeps its real mapping to its broker.

- ``@operation`` on a method that returns an operation's value (or ``_do(op, fn)``) runs one
  operation: ``ok(value)``; ``fail`` for :class:`Unsupported` (``unsupported: <what>``) and
  :class:`Refused` (refused before reaching the broker: unknown name, misuse); any other
  exception goes to the adapter's ``_classify(op, exc)``, which maps its client's errors to ``fail``
  (the broker refused) or ``info`` (outcome unknown: timeout, lost connection). An error it does not
  classify is a bug and propagates. ``_invoke(fn)`` runs ``fn`` (the nats adapter runs a coroutine).
- :class:`NotObservable`: an observation the adapter has the capability for but cannot make in the
  current state (``Result.not_observable``; the suite does not count that observation, the run goes on).
- operations an adapter does not offer answer ``fail("unsupported: <reason>")`` with the reason from
  the adapter's ``UNSUPPORTED`` table (defaults in :data:`UNSUPPORTED_DEFAULTS`); ``advance`` sleeps
  when the adapter has the ``advance_time`` capability.
- ``@component("op", requires=...)`` on a method that returns a Result declares the ``call("op",
  **kwargs)`` operation (restart, close_session, a flow-control component); ``@operation`` under it
  for a body that returns the value. :meth:`BrokerAdapter.call` dispatches to it; an operation not
  declared, or without the capability it requires, answers ``unsupported: flow-control component``.
- ``shutdown()``: close(), then end the handles named in ``SHUTDOWN_ENDS`` (an own server, a control
  connection); an adapter that ends more overrides it.
- :func:`simple_consumer` picks the consumer mode an adapter offers (bench and soak loops);
  :func:`roundtrip_rate` times a loop (each adapter's ``raw_roundtrip_loop``, the bench).
- ``shared_namespace``: :func:`physical_prefix` builds the per-open prefix (the namespace alone when
  instances share it, else namespace + random token).

The checks keep the contract's outcomes of DELIVERY/RING declarations: a name declared twice is
refused, a feature the broker lacks is unsupported.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Concatenate, NamedTuple, ParamSpec, TypeVar, overload

from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig

from ._latency import LatencyMeter
from .contract import Result

#: the seed areas that describe other products than the queueing brokers: a broker adapter claiming a
#: seed profile (artemis, hornetq) sets them aside from its coverage (verdict.Coverage), each with why
OTHER_PRODUCTS_AREAS: Mapping[str, str] = {
    "throttle": "the MDB throttle of WebSphere on z/OS (seed 001), not a broker feature",
    "admission": "RocketMQ's broker fast failure (seed 002): the rocketmq adapter's area",
    "storage": "Stratus VOS queue files (seed 000), not a broker feature",
}

#: how long after a TTL runs out (since the real send) the broker has surely expired the message
TTL_MARGIN_S = 0.05


def lowest_ttl(*ttls_ms: int | None) -> int | None:
    """The TTL that runs out first of those given (a queue's and a message's, EXPIRY-3 ``min``);
    None when none is given."""
    return min((t for t in ttls_ms if t is not None), default=None)


class Unsupported(Exception):
    """The broker cannot do what the call asks: ``fail("unsupported: <message>")``."""


class NotObservable(Exception):
    """An observation the adapter cannot make in the current state: ``Result.not_observable``."""


class Refused(Exception):
    """Refused without reaching the broker (unknown name, misuse): ``fail(<message>)``."""


#: operation -> what is unsupported (the text after "unsupported: "), unless an adapter says more
UNSUPPORTED_DEFAULTS: Mapping[str, str] = {
    "commit": "transactions", "rollback": "transactions", "tx": "transactions",
    "browse": "browsing", "browser": "browsers", "pending_ids": "pending order",
    "set_ring_size": "set_ring_size", "paging": "paging", "counters": "counters",
    "delivery_count": "delivery counts", "nack": "nack", "advance": "time",
    "address_limits": "address limits and full policies", "redelivery_delay": "redelivery delay",
    "second_queue": "a second queue on one address", "max_unacked": "max_unacked",
}


def physical_prefix(namespace: str, shared: bool, sep: str = "-") -> str:
    """The physical name prefix of one open(): `namespace` (with characters outside ``[A-Za-z0-9_-]``
    replaced) when instances share it, else that plus `sep` and a random token."""
    token = "".join(c if c.isalnum() or c in "-_" else "_" for c in namespace)
    return token if shared else f"{token}{sep}{uuid.uuid4().hex[:8]}"


def simple_consumer(capabilities: frozenset[str], name: str, queue: str) -> ConsumerConfig:
    """A consumer every adapter can open, in its own mode: a pull consumer (window 0) with
    ``consumer_pull``, else a prefetch of one (window -1, max_unacked 1) with ``consumer_prefetch``
    (ActiveMQ refuses pull consumers), else the default push window. For loops that receive and
    acknowledge one message at a time (bench, soak)."""
    if "consumer_pull" in capabilities:
        return ConsumerConfig(name, queue, window_bytes=0)
    if "consumer_prefetch" in capabilities:
        return ConsumerConfig(name, queue, window_bytes=-1, max_unacked=1)
    return ConsumerConfig(name, queue)


def roundtrip_rate(n: int, step: Callable[[int], object], limit_s: float = 60.0) -> float:
    """Call step(0), step(1), ... n times or until `limit_s` passes; the calls per second."""
    deadline = time.monotonic() + limit_s
    done = 0
    t0 = time.perf_counter()
    for i in range(n):
        if time.monotonic() > deadline:
            break
        step(i)
        done += 1
    return done / (time.perf_counter() - t0)


P = ParamSpec("P")
B = TypeVar("B", bound="BrokerAdapter")
#: the body of one operation: a method returning the operation's value (or raising)
Body = Callable[Concatenate[B, P], object]
#: the operation as callers see it: the same arguments, a Result
Operation = Callable[Concatenate[B, P], Result]


@overload
def operation(body: Body[B, P], /) -> Operation[B, P]: ...
@overload
def operation(*, name: str) -> Callable[[Body[B, P]], Operation[B, P]]: ...


def operation(body: Body[B, P] | None = None, /, *, name: str | None = None) -> Any:
    """Make a method that returns an operation's value into one that returns its Result, through
    ``self._do(op, ...)``: ``@operation`` (op is the method's name) or ``@operation(name="op")``.
    The body returns the value (``ok``) or raises (see :meth:`BrokerAdapter._do`)."""
    def wrap(body: Body[B, P]) -> Operation[B, P]:
        op = name or body.__name__

        @functools.wraps(body, assigned=("__module__", "__name__", "__qualname__", "__doc__"))
        def run(self: B, *args: P.args, **kwargs: P.kwargs) -> Result:
            return self._do(op, lambda: body(self, *args, **kwargs))
        return run
    return wrap if body is None else wrap(body)


#: the attribute ``@component`` sets on the method it declares
_COMPONENT_MARK = "__mqc_component__"
#: a method answering a ``call`` operation
Answer = TypeVar("Answer", bound=Callable[..., Result])


class Component(NamedTuple):
    """A ``call`` operation an adapter declares: `method` (the attribute) answers it when the adapter
    has the capability `requires` (None: always)."""

    name: str
    requires: str | None
    method: str = ""


def component(name: str, *, requires: str | None = None) -> Callable[[Answer], Answer]:
    """Declare a method as the answer to ``call(name, **kwargs)``: it gets the keyword arguments and
    returns the Result (``@operation`` under it: its value through ``_do``). With `requires`, an
    adapter without that capability answers ``call(name)`` as an operation it does not declare."""
    def mark(method: Answer) -> Answer:
        vars(method)[_COMPONENT_MARK] = Component(name, requires)
        return method
    return mark


class BrokerAdapter:
    """The shared half of a broker adapter (see the module docstring)."""

    name: ClassVar[str]
    capabilities: frozenset[str]
    #: advance sleeps on the wall clock (see `advance`): areas whose examples sleep seconds run fewer
    #: examples against it (ConformanceMachine.REAL_TIME_SHARE)
    real_time: ClassVar[bool] = True
    #: the operation under way: when it started, and its round trip once its first settle began
    _op_started: float | None = None
    _op_round_trip: float | None = None
    #: operation or feature -> why it is not offered (overrides UNSUPPORTED_DEFAULTS)
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {}
    #: what the adapter keeps across opens and shutdown() ends after close(): attribute -> the name of
    #: the handle's method that ends it (an own server's ``stop``, a connection's ``close``)
    SHUTDOWN_ENDS: ClassVar[Mapping[str, str]] = {}
    #: the ``call`` operations the class declares (``@component``), by name; collected at class creation
    _components: ClassVar[Mapping[str, Component]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared: dict[str, Component] = {}
        for klass in reversed(cls.__mro__):  # a subclass's declaration replaces its bases'
            for attr, value in vars(klass).items():
                mark = getattr(value, _COMPONENT_MARK, None)
                if isinstance(mark, Component):
                    declared[mark.name] = mark._replace(method=attr)
        cls._components = declared

    def close(self) -> None:
        """Remove what the example created (each adapter's own)."""
        raise NotImplementedError

    def shutdown(self) -> None:
        """close(), then end each handle in ``SHUTDOWN_ENDS`` that is set, and forget it."""
        self.close()
        for attr, end in self.SHUTDOWN_ENDS.items():
            handle = getattr(self, attr, None)
            if handle is not None:
                getattr(handle, end)()
                setattr(self, attr, None)

    def _reset(self) -> None:
        """Forget the logical names of the previous open()."""
        self.addresses: dict[str, list[str]] = {}
        self.queues: dict[str, Any] = {}
        self.consumers: dict[str, Any] = {}
        #: the example's logical time (the sum of its advances) starts at this monotonic instant
        self._clock_origin = time.monotonic()
        self._clock_ms = 0
        #: messages with a TTL: (logical expiry in ms, monotonic instant the broker expires it)
        self._ttl_deadlines: list[tuple[int, float]] = []

    def _restart_mode(self, kwargs: Mapping[str, Any]) -> str | Result:
        """The mode of a ``call("restart", mode=...)`` (``graceful``, the default, or ``kill``), or the
        ``fail`` answer to any other."""
        mode = kwargs.get("mode", "graceful")
        if mode not in ("graceful", "kill"):
            return Result.fail(f"{self.name}: restart: mode is graceful or kill, not {mode!r}")
        return str(mode)

    def _note_ttl(self, ttl_ms: int | None) -> None:
        """A broker timer that starts now: a message sent now with a TTL (the lower of its queue's and
        its own), or an acquisition lock taken now: `advance` waits for it to run out on the broker by
        the time the model's runs out (see there)."""
        if ttl_ms is not None:
            self._ttl_deadlines.append((self._clock_ms + ttl_ms, time.monotonic() + ttl_ms / 1000))

    # ------------------------------------------------------------------ results
    @property
    def latency(self) -> LatencyMeter:
        """The round trips of this adapter's operations so far (kept across opens: one per run)."""
        meter: LatencyMeter | None = self.__dict__.get("_latency")
        if meter is None:
            meter = self.__dict__["_latency"] = LatencyMeter()
        return meter

    def _settle_deadline(self, floor_s: float) -> float:
        """The monotonic instant a settle poll of at least `floor_s` gives up: longer while the
        broker's round trips are slow (adapters/_latency.py). The operation's round trip is what it
        took until its first settle: a wait never counts as latency (a settle that runs out its bound
        would otherwise lengthen the next one)."""
        now = time.monotonic()
        if self._op_started is not None and self._op_round_trip is None:
            self._op_round_trip = now - self._op_started
        return now + self.latency.settle_s(floor_s)

    def _no_round_trip(self) -> None:
        """The operation under way measured no round trip (e.g. a receive that got nothing after its
        wait): the meter leaves it out (LatencyMeter.record ignores a negative time)."""
        if self._op_started is not None:
            self._op_round_trip = -1.0

    def _do(self, op: str, fn: Callable[[], Any]) -> Result:
        """Run one operation: ok(value); fail when refused; info when the outcome is unknown. Its
        round trip is measured (``latency``)."""
        self._op_started = started = time.monotonic()
        self._op_round_trip = None
        try:
            return self._outcome(op, fn)
        finally:
            took = self._op_round_trip
            self.latency.record(op, time.monotonic() - started if took is None else took)
            self._op_started = None

    def _outcome(self, op: str, fn: Callable[[], Any]) -> Result:
        try:
            return Result.ok(self._invoke(fn))
        except Unsupported as exc:
            return Result.fail(f"unsupported: {exc}")
        except NotObservable as exc:
            return Result.not_observable(str(exc))
        except Refused as exc:
            return Result.fail(str(exc))
        except Exception as exc:
            result = self._classify(op, exc)
            if result is None:
                raise
            return result

    def _invoke(self, fn: Callable[[], Any]) -> Any:
        return fn()

    def _classify(self, op: str, exc: Exception) -> Result | None:
        """The Result for a client error `exc` during `op`, or None when it is not the client's."""
        return None

    def _why(self, what: str) -> str:
        return self.UNSUPPORTED.get(what) or UNSUPPORTED_DEFAULTS.get(what) or what

    def _unsupported(self, what: str) -> Result:
        return Result.fail(f"unsupported: {self._why(what)}")

    # ------------------------------------------------------------------ lookups
    def _queue(self, name: str) -> Any:
        try:
            return self.queues[name]
        except KeyError:
            raise Refused(f"unknown queue {name!r}") from None

    def _consumer(self, name: str) -> Any:
        try:
            return self.consumers[name]
        except KeyError:
            raise Refused(f"unknown consumer {name!r}") from None

    def _forget_consumer(self, name: str) -> Any:
        """Remove consumer `name` from the books (Refused when unknown); its state."""
        state = self._consumer(name)
        del self.consumers[name]
        return state

    # ------------------------------------------------------------------ common checks
    def _check_new_queue(self, config: QueueConfig, *, one_per_address: bool = True) -> None:
        """The checks every adapter makes before declaring a queue: a new name, no filter, no
        redelivery delay, dead letters only with the ``dead_letter`` capability, a valid ring size,
        and (`one_per_address`) no second queue on an address."""
        if config.name in self.queues:
            raise Refused(f"queue {config.name!r} already exists")
        if config.filter is not None:
            raise Unsupported("queue filters")
        if config.redelivery_delay_ms:
            raise Unsupported(self._why("redelivery_delay"))
        if config.dead_letter is not None and "dead_letter" not in self.capabilities:
            raise Unsupported("dead-letter addresses")
        if config.ring_size < -1:
            raise Refused("ring_size must be -1 or >= 0")
        if one_per_address and self.addresses.get(config.address_name):
            raise Unsupported(self._why("second_queue"))

    def _check_new_consumer(self, config: ConsumerConfig) -> Any:
        """A new consumer name on a known queue, no browser, no selector; the queue's state."""
        if config.name in self.consumers:
            raise Refused(f"consumer {config.name!r} already exists")
        queue = self._queue(config.queue)
        if config.browser:
            raise Unsupported(self._why("browser"))
        if config.selector is not None:
            raise Unsupported("selectors")
        return queue

    @staticmethod
    def _require_pull(config: ConsumerConfig) -> None:
        if config.window_bytes != 0 and config.window_messages != 0:
            raise Unsupported("push windows (only pull consumers: window_bytes 0)")

    def _route(self, to: str, message: Message) -> list[str]:
        """The queues a send to address `to` reaches (Refused for an unknown address; scheduled
        delivery is unsupported)."""
        if to not in self.addresses:
            raise Refused(f"unknown address {to!r}")
        if message.scheduled_at_ms is not None and message.scheduled_at_ms > 0:
            raise Unsupported("scheduled delivery")
        return self.addresses[to]

    def _single_route(self, to: str, message: Message) -> Any | None:
        """The one queue a send to `to` reaches (adapters with one queue per address), or None
        when the address has none (the send is accepted and routed nowhere, as in the model)."""
        names = self._route(to, message)
        return self.queues[names[0]] if names else None

    def _no_tx(self, tx: bool) -> None:
        if tx:
            raise Unsupported(self._why("tx"))

    # ------------------------------------------------------------------ declarations
    def _create_address(self, name: str) -> None:
        """Make address `name` exist (default: only in the adapter's books)."""
        self.addresses[name] = []

    @operation
    def declare_address(self, config: AddressConfig) -> None:
        if config.full_policy != "PAGE" or config.max_size_bytes >= 0 or config.max_size_messages >= 0:
            raise Unsupported(self._why("address_limits"))
        if config.name in self.addresses:
            raise Refused(f"address {config.name!r} already exists")
        self._create_address(config.name)

    @operation
    def close_consumer(self, consumer: str) -> None:
        """Forget the consumer (brokers whose consumers hold nothing on the broker's side)."""
        self._forget_consumer(consumer)

    # ------------------------------------------------------------------ what brokers rarely offer
    def nack(self, consumer: str, msg_id: str) -> Result:
        return self._unsupported("nack")

    def commit(self, consumer: str) -> Result:
        return self._unsupported("commit")

    def rollback(self, consumer: str) -> Result:
        return self._unsupported("rollback")

    def counters(self, queue: str) -> Result:
        return self._unsupported("counters")

    def delivery_count(self, queue: str, msg_id: str) -> Result:
        return self._unsupported("delivery_count")

    def browse(self, queue: str) -> Result:
        return self._unsupported("browse")

    def pending_ids(self, queue: str) -> Result:
        return self._unsupported("pending_ids")

    def set_ring_size(self, queue: str, size: int) -> Result:
        return self._unsupported("set_ring_size")

    def paging(self, address: str) -> Result:
        return self._unsupported("paging")

    def advance(self, ms: int) -> Result:
        """With the ``advance_time`` capability, sleeps until the broker's clock has run as long since
        open() as the example's logical time (the sum of its advances; at most `ms`), so a TTL, NAK
        delay or ack wait runs out on the broker where the model says however long the operations
        between two advances took: their time is not slept again, and the broker's clock does not
        drift ahead of the model's step by step. A quiet interval after the last operation, where one
        is needed (a store's flush before a SIGKILL, RESTART-4), is the restart's own wait. Else
        unsupported.

        A message whose TTL the model sees run out by the new logical time must have run out on the
        broker too: a message sent late in real time (a slow operation, a loaded machine) is waited
        for until its own deadline since its real send, plus a margin: TTL_MARGIN_S, more while the
        broker's round trips are slow (``latency``; EXPIRY-1/2)."""
        if "advance_time" not in self.capabilities:
            return self._unsupported("advance")
        if ms < 0:
            return Result.fail("time only moves forward")
        self._clock_ms += ms
        now = time.monotonic()
        behind = min(self._clock_origin + self._clock_ms / 1000 - now, ms / 1000)
        due = [real for logical, real in self._ttl_deadlines if logical <= self._clock_ms]
        self._ttl_deadlines = [(lg, real) for lg, real in self._ttl_deadlines if lg > self._clock_ms]
        margin = self.latency.ttl_margin_s(TTL_MARGIN_S)
        late = max((real + margin - now for real in due), default=0.0)
        time.sleep(max(behind, late, 0.0))
        return Result.ok(None)

    def clock_lead_ms(self) -> float:
        """How far (ms) the broker's real clock has run ahead of the example's logical time: the real
        time since open() less the sum of the advances (never below 0). The operations between two
        advances take real time the model's clock does not see; a machine comparing timers on a real
        clock discards a failing example in which this exceeded its margin
        (mqconform.conformance.exploring.driver.Driver.clock_lead)."""
        return max(0.0, (time.monotonic() - self._clock_origin) * 1000 - self._clock_ms)

    def call(self, op: str, **kwargs: Any) -> Result:
        """The ``call`` operation `op`: what the method declared for it (``@component``) answers to
        `kwargs`; unsupported when none is declared (no broker adapter offers the seeds' flow-control
        components) or the adapter lacks the capability it requires."""
        declared = self._components.get(op)
        if declared is None or (declared.requires is not None and declared.requires not in self.capabilities):
            return Result.fail(f"unsupported: flow-control component {op!r}")
        answer: Result = getattr(self, declared.method)(**kwargs)
        return answer
