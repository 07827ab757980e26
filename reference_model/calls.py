"""How the model runs each `call` operation: one function each, registered under its own name.

:meth:`World.call <reference_model.world.World.call>` looks the name up in :data:`CALLS`;
mqconform/operations.py describes the operations themselves (arguments, answers) and refers here.
The functions see the world through :class:`CallWorld` (what they use of it), so this module does
not import reference_model.world, which imports this one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ModelMisuse

if TYPE_CHECKING:  # the components load on first use: a queue-only run never imports them
    from .admission import Admission
    from .broker import Broker
    from .storage import QueueFile
    from .throttle import Throttle


class CallWorld(Protocol):
    """What a call operation uses of the world (reference_model.world.World meets it): the broker,
    the components by name, the logical clock."""

    broker: Broker
    throttles: dict[str, Throttle]
    admissions: dict[str, Admission]
    stores: dict[str, QueueFile]

    @property
    def now_ms(self) -> int: ...


#: how the model runs one call operation: (the world, the keyword arguments) -> the value
ModelCall = Callable[[CallWorld, dict[str, Any]], Any]
#: call operation -> how the model runs it (filled by @model_call)
CALLS: dict[str, ModelCall] = {}


def model_call(fn: ModelCall) -> ModelCall:
    """Register `fn` as the model's call operation of the same name."""
    CALLS[fn.__name__] = fn
    return fn


def _build(cls: Any, kw: Any) -> Any:
    """Construct a component config from scenario keywords; a wrong key or type is ModelMisuse."""
    if not isinstance(kw, Mapping):
        raise ModelMisuse(f"{cls.__name__}: expected a map of settings, not {kw!r}")
    try:
        return cls(**kw)
    except TypeError as exc:
        raise ModelMisuse(f"{cls.__name__}: {exc}") from None


def _get(table: Mapping[str, Any], kind: str, name: str) -> Any:
    try:
        return table[name]
    except KeyError:
        raise ModelMisuse(f"unknown {kind} {name!r}") from None


def _admission(world: CallWorld, name: str | None) -> Admission:
    if name is None:
        if len(world.admissions) != 1:
            raise ModelMisuse("name the admission (there is not exactly one)")
        return next(iter(world.admissions.values()))
    return _get(world.admissions, "admission", name)  # type: ignore[no-any-return]


def _store(world: CallWorld, kw: dict[str, Any]) -> QueueFile:
    return _get(world.stores, "store", kw.pop("store"))  # type: ignore[no-any-return]


# ---------------------------------------------------------------------- queue operations
@model_call
def close_session(world: CallWorld, kw: dict[str, Any]) -> Any:
    """REDELIVERY-30 (a queue operation routed through call)."""
    return world.broker.close_session(str(kw["consumer"]))


@model_call
def restart(world: CallWorld, kw: dict[str, Any]) -> Any:
    """RESTART-1..4: the implementation restarts (graceful or kill)."""
    world.broker.restart(str(kw.get("mode", "graceful")))


@model_call
def pause(world: CallWorld, kw: dict[str, Any]) -> Any:
    """DELIVERY-34: the queue's consumers deliver nothing until until_ms."""
    world.broker.pause_consumers(str(kw["queue"]), int(kw["until_ms"]))


@model_call
def fetch(world: CallWorld, kw: dict[str, Any]) -> Any:
    """DELIVERY-38..40: one pull request for a batch within max_bytes; DELIVERY-41..44: with an
    overflow queue's thresholds."""
    return world.broker.fetch(str(kw["consumer"]), int(kw["batch"]), int(kw.get("max_bytes", 0)),
                              int(kw.get("min_pending", 0)), int(kw.get("min_ack_pending", 0)))


@model_call
def unpin(world: CallWorld, kw: dict[str, Any]) -> Any:
    """DELIVERY-45: the pin of a pinned_client queue is cleared."""
    world.broker.unpin(str(kw["queue"]))


@model_call
def join(world: CallWorld, kw: dict[str, Any]) -> Any:
    """RETENTION-9: a durable consumer of a stream address, as a queue (DELIVERY-41..44: with its
    priority policy)."""
    priority = kw.get("priority")
    return world.broker.join(str(kw["name"]), str(kw["address"]), None if priority is None else str(priority))


@model_call
def leave(world: CallWorld, kw: dict[str, Any]) -> Any:
    """RETENTION-2/7: delete a stream address's durable consumer (its queue)."""
    world.broker.leave(str(kw["queue"]))


@model_call
def retention_state(world: CallWorld, kw: dict[str, Any]) -> Any:
    """RETENTION-1..10: observation, the stream's stored messages."""
    return world.broker.retention_state(str(kw["address"]))


@model_call
def stream_state(world: CallWorld, kw: dict[str, Any]) -> Any:
    """RESTART-5: observation, the queue in JetStream's terms."""
    return world.broker.stream_state(str(kw["queue"]))


@model_call
def consumer_state(world: CallWorld, kw: dict[str, Any]) -> Any:
    """DELIVERY-27..29: observation, the queue's durable consumer."""
    return world.broker.consumer_state(str(kw["queue"]))


# ---------------------------------------------------------------------- throttles
@model_call
def throttle(world: CallWorld, kw: dict[str, Any]) -> Any:
    from .throttle import Throttle, ThrottleConfig

    config = _build(ThrottleConfig, kw)
    world.throttles[config.name] = Throttle(config)


@model_call
def offer(world: CallWorld, kw: dict[str, Any]) -> Any:
    return _get(world.throttles, "throttle", kw["throttle"]).offer(str(kw["id"]))


@model_call
def complete(world: CallWorld, kw: dict[str, Any]) -> Any:
    throttle = _get(world.throttles, "throttle", kw["throttle"])
    return throttle.complete(str(kw["id"]), kw.get("outcome", "commit"))


@model_call
def throttle_state(world: CallWorld, kw: dict[str, Any]) -> Any:
    t = _get(world.throttles, "throttle", kw["throttle"])
    return {"in_flight": t.in_flight, "blocked": t.blocked, "blocks": t.blocks, "waiting": t.waiting}


# ---------------------------------------------------------------------- admission
@model_call
def admission(world: CallWorld, kw: dict[str, Any]) -> Any:
    from .admission import Admission, AdmissionConfig, QueueLimit

    queues = kw.pop("queues", None)
    if queues is not None:
        if not isinstance(queues, Mapping):
            raise ModelMisuse("admission queues: a map of queue name -> {wait_ms, capacity}")
        kw["queues"] = {q: _build(QueueLimit, limit) for q, limit in queues.items()}
    config = _build(AdmissionConfig, kw)
    world.admissions[config.name] = Admission(config)


@model_call
def submit(world: CallWorld, kw: dict[str, Any]) -> Any:
    return _admission(world, kw.get("admission")).submit(kw["queue"], str(kw["id"]), world.now_ms)


@model_call
def take(world: CallWorld, kw: dict[str, Any]) -> Any:
    return _admission(world, kw.get("admission")).take(kw["queue"], world.now_ms)


@model_call
def lock(world: CallWorld, kw: dict[str, Any]) -> Any:
    state = kw["state"]
    if state not in ("held", "released"):
        raise ModelMisuse("lock is held or released")
    _admission(world, kw.get("admission")).set_lock(state == "held", world.now_ms)


@model_call
def request(world: CallWorld, kw: dict[str, Any]) -> Any:
    answer = _admission(world, kw.get("admission")).answer(str(kw["id"]))
    return None if answer is None else {"answer": answer.kind, "at_ms": answer.at_ms,
                                        "text": answer.text, "code": answer.code}


# ---------------------------------------------------------------------- storage
@model_call
def store(world: CallWorld, kw: dict[str, Any]) -> Any:
    from .storage import QueueFile, StoreConfig

    config = StoreConfig(**kw)
    world.stores[config.name] = QueueFile(config)


@model_call
def put(world: CallWorld, kw: dict[str, Any]) -> Any:
    return _store(world, kw).put(str(kw["id"]), int(kw["size"]))


@model_call
def remove(world: CallWorld, kw: dict[str, Any]) -> Any:
    return _store(world, kw).remove(str(kw["id"]))


@model_call
def open_requester(world: CallWorld, kw: dict[str, Any]) -> Any:
    return _store(world, kw).open_requester()


@model_call
def close_requester(world: CallWorld, kw: dict[str, Any]) -> Any:
    return _store(world, kw).close_requester()


@model_call
def truncate(world: CallWorld, kw: dict[str, Any]) -> Any:
    return _store(world, kw).truncate(kw.get("caller", "server"))


@model_call
def locate(world: CallWorld, kw: dict[str, Any]) -> Any:
    """Observation: the byte offset of a live message, None if not live."""
    return _store(world, kw).offset_of(str(kw["id"]))


@model_call
def store_state(world: CallWorld, kw: dict[str, Any]) -> Any:
    s = _store(world, kw)
    return {"used_bytes": s.used_bytes, "live": s.live, "free_slots": s.free_slots,
            "index_entries": s.index_entries, "blocks_used": s.blocks_used, "last_message": s.last_message}
