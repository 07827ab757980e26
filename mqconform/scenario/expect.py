"""Check one step's `expect` against what an adapter shows.

Each expected value is compared with the adapter's observation. A value the adapter cannot observe
(a capability it lacks: ``counter:<name>``, ``pending_order``, ``paging_flag``, ``delivery_count``,
``redelivered_flag``, ``dead_letter_reason``, ``consumer_state``, ``stream_state``, ``retention``,
``throttle``, ``admission``, ``storage``) is *not applicable*, never held.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from mqconform.adapters.contract import Adapter, Result

State = Literal["held", "mismatch", "not_applicable", "unknown"]


@attrs.frozen
class Check:
    """The outcome of one expected value."""

    state: State
    what: str
    expected: Any = None
    actual: Any = None
    detail: str = ""

    def describe(self) -> str:
        if self.state == "mismatch":
            return f"{self.what}: expected {show(self.expected)}, actual {show(self.actual)}"
        if self.state == "not_applicable":
            return f"{self.what}: not applicable ({self.detail})"
        if self.state == "unknown":
            return f"{self.what}: unknown ({self.detail})"
        return f"{self.what} = {show(self.actual)}"


def show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
    return str(value)


def normal(value: Any) -> Any:
    """Comparable form: tuples as lists, nested."""
    if isinstance(value, tuple | list):
        return [normal(v) for v in value]
    if isinstance(value, Mapping):
        return {k: normal(v) for k, v in value.items()}
    return value


def expected_result(op: str, value: Any) -> Any:
    """Ids may be written as integers: compare them as the strings the model uses."""
    if op in ("receive", "take") and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if op in ("browse", "receive_batch") and isinstance(value, list):
        if op == "receive_batch":
            return [None if v is None else str(v) for v in value]
        return [str(v) for v in value]
    return normal(value)


class Observer:
    """Reads observations from one adapter, once per step, and compares expected values."""

    def __init__(self, adapter: Adapter, addresses: Mapping[str, str]) -> None:
        self.adapter = adapter
        self.caps = frozenset(adapter.capabilities)
        self.addresses = addresses
        self._cache: dict[tuple[str, ...], Result] = {}

    def new_step(self) -> None:
        self._cache.clear()

    def _read(self, key: tuple[str, ...], fetch: Callable[[], Result]) -> Result:
        if key not in self._cache:
            try:
                self._cache[key] = fetch()
            except Exception as exc:  # an adapter bug must not become a traceback or a pass
                self._cache[key] = Result.info(f"{type(exc).__name__}: {exc}")
        return self._cache[key]

    def _compare(self, what: str, expected: Any, cap: str, key: tuple[str, ...],
                 fetch: Callable[[], Result], pick: Callable[[Any], Any]) -> Check:
        if cap not in self.caps:
            return Check("not_applicable", what, expected, detail=f"the adapter lacks {cap}")
        result = self._read(key, fetch)
        if result.type == "info":
            return Check("unknown", what, expected, detail=result.error or "no answer")
        if result.type == "fail":
            return Check("not_applicable", what, expected,
                         detail=f"the adapter could not answer: {result.error}")
        actual = normal(pick(result.value))
        return Check("held" if actual == expected else "mismatch", what, expected, actual)

    # ------------------------------------------------------------------ per expect key
    def check(self, key: str, entry: Mapping[str, Any]) -> list[Check]:
        return getattr(self, f"_{key}")(entry)  # type: ignore[no-any-return]

    def _queue(self, entry: Mapping[str, Any]) -> list[Check]:
        q = entry["name"]
        checks = []
        for field, expected in entry.items():
            if field == "name":
                continue
            what = f"queue {q} {field}"
            if field == "pending":
                checks.append(self._compare(what, expected, "pending_order", ("pending", q),
                                            lambda q=q: self.adapter.pending_ids(q), list))
            elif field == "paging":
                address = self.addresses.get(q, q)
                checks.append(self._compare(what, expected, "paging_flag", ("paging", address),
                                            lambda a=address: self.adapter.paging(a), bool))
            else:
                checks.append(self._compare(what, expected, f"counter:{field}", ("counters", q),
                                            lambda q=q: self.adapter.counters(q),
                                            lambda v, f=field: v.get(f) if isinstance(v, Mapping) else None))
        return checks

    def _delivery_count(self, entry: Mapping[str, Any]) -> list[Check]:
        q, msg = entry["queue"], entry["id"]
        return [self._compare(f"delivery_count of {msg} in {q}", entry.get("count"), "delivery_count",
                              ("delivery_count", q, msg), lambda: self.adapter.delivery_count(q, msg),
                              lambda v: v)]

    def _message(self, entry: Mapping[str, Any]) -> list[Check]:
        """DELIVERY-23: the redelivered flag and dead-letter reason of a held message."""
        q, msg = entry["queue"], entry["id"]
        caps = {"redelivered": "redelivered_flag", "dead_letter_reason": "dead_letter_reason"}
        return [self._compare(f"{field} of {msg} in {q}", expected, caps[field], ("message", q, msg),
                              lambda: self.adapter.message_info(q, msg),  # type: ignore[attr-defined]
                              lambda v, f=field: v.get(f) if isinstance(v, Mapping) else None)
                for field, expected in entry.items() if field in caps]

    def _state(self, kind: str, op: str, name: str, cap: str, entry: Mapping[str, Any],
               skip: tuple[str, ...]) -> list[Check]:
        def fetch() -> Result:
            return self.adapter.call(op, **{kind: name})

        return [self._compare(f"{kind} {name} {field}", expected, cap, (op, name), fetch,
                              lambda v, f=field: v.get(f) if isinstance(v, Mapping) else None)
                for field, expected in entry.items() if field not in skip]

    def _consumer_state(self, entry: Mapping[str, Any]) -> list[Check]:
        """DELIVERY-27..29: the queue's durable consumer (capability consumer_state)."""
        return self._state("queue", "consumer_state", entry["queue"], "consumer_state", entry, ("queue",))

    def _stream_state(self, entry: Mapping[str, Any]) -> list[Check]:
        """DELIVERY-30: the queue as a JetStream stream (capability stream_state)."""
        return self._state("queue", "stream_state", entry["queue"], "stream_state", entry, ("queue",))

    def _retention(self, entry: Mapping[str, Any]) -> list[Check]:
        """RETENTION-1..10: a stream address's stored messages (capability retention)."""
        return self._state("address", "retention_state", entry["address"], "retention", entry, ("address",))

    def _throttle(self, entry: Mapping[str, Any]) -> list[Check]:
        return self._state("throttle", "throttle_state", entry["name"], "throttle", entry, ("name",))

    def _store(self, entry: Mapping[str, Any]) -> list[Check]:
        return self._state("store", "store_state", entry["name"], "storage", entry, ("name",))

    def _request(self, entry: Mapping[str, Any]) -> list[Check]:
        msg = entry["id"]
        kwargs = {"id": msg} | ({"admission": entry["admission"]} if "admission" in entry else {})

        def pick(field: str) -> Callable[[Any], Any]:
            def get(value: Any) -> Any:
                return None if value is None else value.get(field)
            return get

        return [self._compare(f"request {msg} {field}", expected, "admission", ("request", msg),
                              lambda: self.adapter.call("request", **kwargs), pick(field))
                for field, expected in entry.items() if field not in ("id", "admission")]
