"""Apply one operation to the model and to the adapter under test, record it, compare them.

The model is itself behind the adapter contract (a ReferenceAdapter under the *claimed* profile), so
both sides answer with a Result and one comparison path serves every operation. Each executed
operation is kept as a scenario step (for counterexamples) and written to the history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from mqconform.adapters.contract import Adapter, Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.history import HistoryWriter
from mqconform.reference_model.config import (
    DEFAULT_PRIORITY,
    AddressConfig,
    ConsumerConfig,
    Message,
    QueueConfig,
)
from mqconform.reference_model.options import ModelOptions


class Inconclusive(BaseException):
    """The adapter answered `info` (timeout, lost connection) or refused a declared capability.

    A BaseException so Hypothesis does not treat it as a counterexample to shrink: the run stops
    and its rules are reported *unknown*, never pass or fail.
    """


class Violation(AssertionError):
    """The implementation did something the claimed profile forbids (a conformance failure)."""

    def __init__(self, check: str, rules: tuple[str, ...], message: str) -> None:
        super().__init__(f"[{check}] {', '.join(rules)}: {message}")
        self.check = check
        self.rules = rules
        self.message = message


@attrs.define
class Step:
    """One executed operation in scenario form, with what the model expected."""

    op: str
    args: Any
    expect: dict[str, Any] | None = None

    def as_scenario(self) -> dict[str, Any]:
        step: dict[str, Any] = {self.op: self.args}
        if self.expect:
            step["expect"] = self.expect
        return step


def _message(args: Mapping[str, Any]) -> Message:
    return Message(id=args["id"], size=args.get("size", 100), priority=args.get("priority", DEFAULT_PRIORITY),
                   scheduled_at_ms=args.get("scheduled_at_ms"), properties=args.get("properties") or {})


def _send_args(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k != "to"}


#: scenario op -> how to call an adapter with the scenario arguments
DISPATCH: dict[str, Callable[[Adapter, Any], Result]] = {
    "address": lambda a, x: a.declare_address(AddressConfig(**x)),
    "queue": lambda a, x: a.declare_queue(QueueConfig(**x)),
    "consumer": lambda a, x: a.open_consumer(ConsumerConfig(**x)),
    "send": lambda a, x: a.send(x["to"], _message(_send_args(x))),
    "receive": lambda a, x: a.receive(x),
    "ack": lambda a, x: a.ack(x["consumer"], x["id"], x.get("tx", False)),
    "nack": lambda a, x: a.nack(x["consumer"], x["id"]),
    "commit": lambda a, x: a.commit(x),
    "rollback": lambda a, x: a.rollback(x),
    "close": lambda a, x: a.close_consumer(x),
    "browse": lambda a, x: a.browse(x),
    "set_ring_size": lambda a, x: a.set_ring_size(x["queue"], x["size"]),
    "advance": lambda a, x: a.advance(x),
}
FLOW_OPS = ("throttle", "offer", "complete", "admission", "submit", "take", "lock", "store", "put",
            "remove", "open_requester", "close_requester", "truncate")
#: scalar-argument flow ops and the keyword their scalar stands for
FLOW_SCALAR = {"take": "queue", "lock": "state", "open_requester": "store", "close_requester": "store"}


def call_operation(adapter: Adapter, op: str, args: Any) -> Result:
    """Run one scenario-language operation on an adapter (the one dispatch table for every caller)."""
    if op in DISPATCH:
        return DISPATCH[op](adapter, args)
    if op in FLOW_OPS:
        kwargs = {FLOW_SCALAR[op]: args} if op in FLOW_SCALAR else dict(args)
        return adapter.call(op, **kwargs)
    raise ValueError(f"unknown operation {op!r}")


def _process(op: str, args: Any) -> str:
    if op in ("receive", "commit", "rollback", "close"):
        return str(args)
    if isinstance(args, Mapping) and "consumer" in args:
        return str(args["consumer"])
    return "producer" if op == "send" else "control"


def _queue_of(args: Any) -> str | None:
    if isinstance(args, Mapping):
        for key in ("queue", "to", "name"):
            if isinstance(args.get(key), str):
                return str(args[key])
    return None


class Driver:
    """Runs operations on the model and the adapter side by side."""

    def __init__(self, adapter: Adapter, claimed: ModelOptions, history: HistoryWriter | None,
                 rules: Mapping[str, tuple[str, ...]], disabled: Iterable[str] = ()) -> None:
        self.adapter = adapter
        self.model = ReferenceAdapter(options=claimed)
        self.claimed = claimed
        self.history = history
        self.rules = rules
        self.disabled = frozenset(disabled)
        self.steps: list[Step] = []
        self.checked: set[str] = set()

    # ------------------------------------------------------------------ recording
    def _record(self, type_: str, op: str, value: Any, args: Any) -> None:
        if self.history is not None:
            self.history.record(type_, op, value, process=_process(op, args),  # type: ignore[arg-type]
                                queue=_queue_of(args))

    def observe(self, f: str, queue: str | None, value: Any) -> None:
        """Record an observation (counters, delivery counts, browse) in the history."""
        if self.history is not None:
            self.history.record("ok", f, value, process="observer", queue=queue)

    # ------------------------------------------------------------------ checks
    def check(self, name: str, ok: bool, message: Callable[[], str]) -> None:
        """Fail check `name` (with its rule ids) unless `ok`; disabled checks are skipped."""
        if name in self.disabled:
            return
        self.checked.add(name)
        if not ok:
            raise Violation(name, self.rules.get(name, ()), message())

    def expect_equal(self, name: str, expected: Any, actual: Any, context: str = "") -> None:
        self.check(name, expected == actual,
                   lambda: f"{context}expected {expected!r}, the implementation gave {actual!r}")

    # ------------------------------------------------------------------ operations
    def both(self, op: str, args: Any, compare: str | None = None) -> Any:
        """Apply `op` to both sides; the model's value (see both_values)."""
        return self.both_values(op, args, compare)[0]

    def both_values(self, op: str, args: Any, compare: str | None = None) -> tuple[Any, Any]:
        """Apply `op` to both sides; compare the values under check `compare` (if given).

        Returns (the model's value, the implementation's value). An `info` answer stops the run
        (Inconclusive); a `fail` where the model succeeded is a violation of check `compare`
        (or `<op>.accepted`).
        """
        self._record("invoke", op, args, args)
        expected = call_operation(self.model, op, args)
        if not expected.is_ok:
            raise RuntimeError(f"the machine generated an operation the claimed model rejects: {op} "
                               f"{args!r}: {expected.error}")
        actual = call_operation(self.adapter, op, args)
        self._record(actual.type, op, actual.value if actual.is_ok else actual.error, args)
        step = Step(op, args, {"result": expected.value} if compare else None)
        self.steps.append(step)
        if actual.type == "info":
            raise Inconclusive(f"{op}: {actual.error}")
        if actual.type == "fail":
            if (actual.error or "").startswith("unsupported"):
                raise Inconclusive(f"{op}: the adapter refused an operation its capabilities claim: "
                                   f"{actual.error}")
            self.check(compare or f"{op}.accepted", False,
                       lambda: f"{op} {args!r} failed on the implementation: {actual.error}")
            return expected.value, None
        if compare is not None:
            self.expect_equal(compare, expected.value, actual.value, f"{op} {args!r}: ")
        return expected.value, actual.value

    def observe_both(self, method: str, *args: Any) -> tuple[Any, Any]:
        """Read the same observation from the model and the adapter (no step is recorded)."""
        expected = getattr(self.model, method)(*args)
        actual = getattr(self.adapter, method)(*args)
        if actual.type == "info":
            raise Inconclusive(f"{method}: {actual.error}")
        if not actual.is_ok:
            raise Inconclusive(f"{method}: the adapter could not answer: {actual.error}")
        return expected.value, actual.value
