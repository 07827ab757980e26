"""Everything the model simulates at once: the queue broker plus MDB throttles (THROTTLE-*),
fast-failure admission (ADMISSION-*) and VOS queue files (STORAGE-*), on one logical clock.

:meth:`World.advance` moves time through every due event in order: scheduled messages
(SCHED-4) and admission scan ticks (ADMISSION-1), so two events 10 ms apart fire separately.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .broker import Broker
from .errors import ModelMisuse
from .options import ModelOptions
from .profiles import ARTEMIS

if TYPE_CHECKING:  # the components load on first use: a queue-only run never imports them
    from .admission import Admission
    from .storage import QueueFile
    from .throttle import Throttle


def _build(cls: Any, kw: Any) -> Any:
    """Construct a component config from scenario keywords; a wrong key or type is ModelMisuse."""
    if not isinstance(kw, Mapping):
        raise ModelMisuse(f"{cls.__name__}: expected a map of settings, not {kw!r}")
    try:
        return cls(**kw)
    except TypeError as exc:
        raise ModelMisuse(f"{cls.__name__}: {exc}") from None


class World:
    """The broker and the flow-control components under one clock."""

    def __init__(self, options: ModelOptions = ARTEMIS, broker_class: type[Broker] = Broker) -> None:
        self.broker = broker_class(options)
        self.throttles: dict[str, Throttle] = {}
        self.admissions: dict[str, Admission] = {}
        self.stores: dict[str, QueueFile] = {}

    @property
    def now_ms(self) -> int:
        return self.broker.now_ms

    # ------------------------------------------------------------------ time
    def _next_tick(self, after_ms: int) -> int | None:
        ticks = [t for a in self.admissions.values()
                 if a.busy() and (t := a.next_tick_ms(after_ms)) is not None]
        return min(ticks) if ticks else None

    def advance(self, ms: int) -> None:
        """Move the clock `ms` forward through every due scheduled message and admission tick."""
        if ms < 0:
            raise ModelMisuse("time only moves forward")
        broker = self.broker
        target = broker.now_ms + ms
        while True:
            due = broker.next_due_ms()
            tick = self._next_tick(broker.now_ms)
            candidates = [t for t in (due, tick) if t is not None and t <= target]
            if not candidates:
                break
            step = max(min(candidates), broker.now_ms)
            broker.advance(step - broker.now_ms)
            if tick is not None and tick == step:
                for admission in self.admissions.values():
                    if admission.next_tick_ms(step - 1) == step:
                        admission.tick(step)
        broker.advance(target - broker.now_ms)

    # ------------------------------------------------------------------ components
    def _get(self, table: Mapping[str, Any], kind: str, name: str) -> Any:
        try:
            return table[name]
        except KeyError:
            raise ModelMisuse(f"unknown {kind} {name!r}") from None

    def _admission(self, name: str | None) -> Admission:
        if name is None:
            if len(self.admissions) != 1:
                raise ModelMisuse("name the admission (there is not exactly one)")
            return next(iter(self.admissions.values()))
        return self._get(self.admissions, "admission", name)  # type: ignore[no-any-return]

    def call(self, op: str, **kw: Any) -> Any:
        """Run one flow-control operation by its scenario name (see the scenario language)."""
        now = self.broker.now_ms
        if op == "close_session":  # REDELIVERY-30 (a queue operation routed through call)
            return self.broker.close_session(str(kw["consumer"]))
        if op == "restart":  # RESTART-1..4: the implementation restarts (graceful or kill)
            self.broker.restart(str(kw.get("mode", "graceful")))
            return None
        if op == "pause":  # DELIVERY-34: the queue's consumers deliver nothing until until_ms
            self.broker.pause_consumers(str(kw["queue"]), int(kw["until_ms"]))
            return None
        if op == "fetch":  # DELIVERY-38..40: one pull request for a batch within max_bytes
            return self.broker.fetch(str(kw["consumer"]), int(kw["batch"]), int(kw.get("max_bytes", 0)))
        if op == "join":  # RETENTION-9: a durable consumer of a stream address, as a queue
            return self.broker.join(str(kw["name"]), str(kw["address"]))
        if op == "leave":  # RETENTION-2/7: delete a stream address's durable consumer (its queue)
            self.broker.leave(str(kw["queue"]))
            return None
        if op == "retention_state":  # RETENTION-1..10: observation, the stream's stored messages
            return self.broker.retention_state(str(kw["address"]))
        if op == "stream_state":  # RESTART-5: observation, the queue in JetStream's terms
            return self.broker.stream_state(str(kw["queue"]))
        if op == "consumer_state":  # DELIVERY-27..29: observation, the queue's durable consumer
            return self.broker.consumer_state(str(kw["queue"]))
        if op == "throttle":
            from .throttle import Throttle, ThrottleConfig

            config = _build(ThrottleConfig, kw)
            self.throttles[config.name] = Throttle(config)
            return None
        if op == "offer":
            return self._get(self.throttles, "throttle", kw["throttle"]).offer(str(kw["id"]))
        if op == "complete":
            return self._get(self.throttles, "throttle", kw["throttle"]).complete(
                str(kw["id"]), kw.get("outcome", "commit"))
        if op == "throttle_state":
            t = self._get(self.throttles, "throttle", kw["throttle"])
            return {"in_flight": t.in_flight, "blocked": t.blocked, "blocks": t.blocks, "waiting": t.waiting}
        if op == "admission":
            from .admission import Admission, AdmissionConfig, QueueLimit

            queues = kw.pop("queues", None)
            if queues is not None:
                if not isinstance(queues, Mapping):
                    raise ModelMisuse("admission queues: a map of queue name -> {wait_ms, capacity}")
                kw["queues"] = {q: _build(QueueLimit, limit) for q, limit in queues.items()}
            config = _build(AdmissionConfig, kw)
            self.admissions[config.name] = Admission(config)
            return None
        if op == "submit":
            return self._admission(kw.get("admission")).submit(kw["queue"], str(kw["id"]), now)
        if op == "take":
            return self._admission(kw.get("admission")).take(kw["queue"], now)
        if op == "lock":
            state = kw["state"]
            if state not in ("held", "released"):
                raise ModelMisuse("lock is held or released")
            self._admission(kw.get("admission")).set_lock(state == "held", now)
            return None
        if op == "request":
            answer = self._admission(kw.get("admission")).answer(str(kw["id"]))
            return None if answer is None else {"answer": answer.kind, "at_ms": answer.at_ms,
                                                "text": answer.text, "code": answer.code}
        if op == "store":
            from .storage import QueueFile, StoreConfig

            config = StoreConfig(**kw)
            self.stores[config.name] = QueueFile(config)
            return None
        store = self._get(self.stores, "store", kw.pop("store")) if op in (
            "put", "remove", "open_requester", "close_requester", "truncate", "store_state", "locate"
        ) else None
        if store is None:
            raise ModelMisuse(f"unknown operation {op!r}")
        if op == "put":
            return store.put(str(kw["id"]), int(kw["size"]))
        if op == "remove":
            return store.remove(str(kw["id"]))
        if op == "open_requester":
            return store.open_requester()
        if op == "close_requester":
            return store.close_requester()
        if op == "truncate":
            return store.truncate(kw.get("caller", "server"))
        if op == "locate":  # observation: the byte offset of a live message, None if not live
            return store.offset_of(str(kw["id"]))
        return {"used_bytes": store.used_bytes, "live": store.live, "free_slots": store.free_slots,
                "index_entries": store.index_entries, "blocks_used": store.blocks_used,
                "last_message": store.last_message}
