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
from mqconform.reference_model.profiles import PROFILES


class Inconclusive(BaseException):
    """The adapter answered `info` (timeout, lost connection) or refused a declared capability.

    A BaseException so Hypothesis does not treat it as a counterexample to shrink: the run stops
    and its rules are reported *unknown*, never pass or fail.
    """


class Violation(AssertionError):
    """The implementation did something the claimed profile forbids (a conformance failure)."""

    def __init__(self, check: str, rules: tuple[str, ...], message: str, *, field: str = "",
                 expected: Any = None, actual: Any = None) -> None:
        super().__init__(f"[{check}] {', '.join(rules)}: {message}")
        self.check = check
        self.rules = rules
        self.message = message
        #: what was compared, when the check compares one value: the observed field (a counter, a
        #: stream-state field; empty for an operation's result), the model's and the implementation's
        #: value (the known-deviation registry matches on them)
        self.field = field
        self.expected = expected
        self.actual = actual


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
                   scheduled_at_ms=args.get("scheduled_at_ms"), properties=args.get("properties") or {},
                   ttl_ms=args.get("ttl_ms"), subject=args.get("subject"))


def _send_args(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k != "to"}


def _missing(adapter: Adapter, needed: Iterable[str]) -> Result | None:
    """Result.fail('unsupported: ...') when the adapter lacks a capability the step needs."""
    missing = [cap for cap in needed if cap not in adapter.capabilities]
    return Result.fail(f"unsupported: {', '.join(missing)}") if missing else None


def _send_needs(args: dict[str, Any]) -> list[str]:
    """EXPIRY-2: a TTL only with ``per_message_ttl``; SCHED-13: a delivery time only with
    ``scheduling`` (the driver answers unsupported itself for an adapter without them)."""
    needs = ["per_message_ttl"] if args.get("ttl_ms") is not None else []
    if args.get("subject") is not None:
        needs.append("max_per_subject")  # RING-31
    return needs + (["scheduling"] if args.get("scheduled_at_ms") else [])


def _default_delivery_limit(adapter: Adapter) -> int | None:
    """REDELIVERY-26: the delivery limit of a queue declared without one is the claimed profile's
    (None for the model: it applies its own options' default)."""
    if isinstance(adapter, ReferenceAdapter):
        return None
    known = PROFILES.get(getattr(adapter, "profile", ""))
    return 10 if known is None else known.default_delivery_limit


def _declare_queue(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """RING-27/28: a byte bound or an overflow policy needs the adapter's capability for it (an
    adapter without it sees neither); the delivery limit defaults to the profile's."""
    needed = [f"overflow:{args['overflow']}"] if args.get("overflow") is not None else []
    if args.get("max_length_bytes", -1) != -1:
        needed.append("max_length_bytes")
    for key, capability in (("message_ttl_ms", "message_ttl"), ("expiry_address", "expiry_address")):
        if args.get(key) is not None:  # EXPIRY-1, EXPIRY-6
            needed.append(capability)
    if args.get("single_active_consumer", False):
        needed.append("single_active_consumer")  # DELIVERY-26
    if args.get("max_per_subject", -1) != -1 or args.get("discard_new_per_subject", False):
        needed.append("max_per_subject")  # RING-31..33
    refused = _missing(adapter, needed)
    if refused is not None:
        return refused
    config = dict(args)
    if "max_delivery_attempts" not in config:
        config["max_delivery_attempts"] = _default_delivery_limit(adapter)
    return adapter.declare_queue(QueueConfig(**config))


#: nack keyword -> (its default, the capability a non-default value needs)
NACK_FORMS = {"requeue": (True, "nack_reject"), "multiple": (False, "nack_multiple"),
              "delay_ms": (0, "nack_delay")}


def _nack(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """REDELIVERY-24/25: the forms of nack are passed only when not the default (an adapter without
    the capability needs no new argument)."""
    forms = {k: args[k] for k, (default, _) in NACK_FORMS.items() if k in args and args[k] != default}
    refused = _missing(adapter, [NACK_FORMS[k][1] for k in forms])
    if refused is not None:
        return refused
    return adapter.nack(args["consumer"], args["id"], **forms)  # type: ignore[call-arg]
def _batch(results: list[Result]) -> Result:
    """One Result for a batch: the first non-ok answer, else ok with the list of values."""
    for result in results:
        if not result.is_ok:
            return result
    return Result.ok([r.value for r in results])


def _each(call: Callable[[Any], Result], items: Iterable[Any], until_empty: bool = False) -> Result:
    """Run the single operations in order up to the first answer that is not ok (and, with
    `until_empty`, up to the first empty receive: a receive_batch ends where the queue has nothing
    more for the consumer, so a pull consumer never waits out its timeout more than once)."""
    results: list[Result] = []
    for item in items:
        result = call(item)
        results.append(result)
        if not result.is_ok or (until_empty and result.value is None):
            break
    return _batch(results)


def batch_items(op: str, args: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The single operations a batch op stands for: send_batch, receive_batch, ack_batch."""
    if op == "send_batch":
        single = {k: v for k, v in args.items() if k != "ids"}
        return [("send", {**single, "id": str(msg_id)}) for msg_id in args["ids"]]
    if op == "receive_batch":
        return [("receive", args["consumer"])] * int(args["count"])
    if op == "ack_batch":
        return [("ack", {"consumer": args["consumer"], "id": str(msg_id)}) for msg_id in args["ids"]]
    raise ValueError(f"not a batch operation: {op!r}")


def _open_consumer(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """REDELIVERY-27 / 32 / DELIVERY-25: a consumer with an ack wait, a BackOff or a priority needs
    the adapter's capability for it (an adapter without it never sees the key)."""
    needed = ["ack_wait"] if args.get("ack_wait_ms") is not None else []
    if args.get("backoff_ms") is not None:  # REDELIVERY-32..35
        needed += ["ack_wait", "backoff"]
    if args.get("priority", 0) != 0:
        needed.append("consumer_priority")
    refused = _missing(adapter, needed)
    if refused is not None:
        return refused
    return adapter.open_consumer(ConsumerConfig(**args))


def _in_progress(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """REDELIVERY-27: +WPI, a new operation only adapters with the ack_wait capability offer."""
    refused = _missing(adapter, ["ack_wait"])
    if refused is not None:
        return refused
    return adapter.in_progress(args["consumer"], args["id"])  # type: ignore[attr-defined,no-any-return]


def _set_subject_limit(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """RING-34: a new per-subject limit, an operation only adapters with max_per_subject offer."""
    refused = _missing(adapter, ["max_per_subject"])
    if refused is not None:
        return refused
    return adapter.set_subject_limit(args["queue"], args["limit"])  # type: ignore[attr-defined,no-any-return]


def _purge(adapter: Adapter, queue: str) -> Result:
    """RING-29: purge, a new operation only adapters with the purge capability offer."""
    refused = _missing(adapter, ["purge"])
    if refused is not None:
        return refused
    return adapter.purge(queue)  # type: ignore[attr-defined,no-any-return]


def _delete(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """DELIVERY-31..33: delete_message(queue, id), a new operation only adapters with the delete
    capability offer."""
    refused = _missing(adapter, ["delete"])
    if refused is not None:
        return refused
    return adapter.delete_message(args["queue"], args["id"])  # type: ignore[attr-defined,no-any-return]


def _restart(adapter: Adapter, mode: Any) -> Result:
    """RESTART-1..4: a restart is routed through ``call("restart", mode=...)`` and needs the
    ``restart`` capability (an adapter without it needs no new method)."""
    refused = _missing(adapter, ["restart"])
    if refused is not None:
        return refused
    return adapter.call("restart", mode=str(mode))


def _pause(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """DELIVERY-34: ``call("pause", queue=..., until_ms=...)`` with the ``consumer_pause`` capability
    (an adapter without it needs no new method)."""
    refused = _missing(adapter, ["consumer_pause"])
    if refused is not None:
        return refused
    return adapter.call("pause", queue=args["queue"], until_ms=int(args["until_ms"]))


def _fetch(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """DELIVERY-38..40: ``call("fetch", consumer=..., batch=..., max_bytes=...)`` with ``pull_batch``."""
    refused = _missing(adapter, ["pull_batch"])
    if refused is not None:
        return refused
    return adapter.call("fetch", consumer=str(args["consumer"]), batch=int(args["batch"]),
                        max_bytes=int(args.get("max_bytes", 0)))


def _declare_address(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """RETENTION-1..11: an address with a retention needs the ``retention`` capability."""
    refused = _missing(adapter, ["retention"]) if args.get("retention") is not None else None
    return refused if refused is not None else adapter.declare_address(AddressConfig(**args))


def _join(adapter: Adapter, args: Mapping[str, Any]) -> Result:
    """RETENTION-9: ``call("join", name=..., address=...)`` with the ``retention`` capability."""
    refused = _missing(adapter, ["retention"])
    if refused is not None:
        return refused
    return adapter.call("join", name=str(args["name"]), address=str(args["address"]))


def _leave(adapter: Adapter, queue: Any) -> Result:
    """RETENTION-2/7: ``call("leave", queue=...)`` with the ``retention`` capability."""
    refused = _missing(adapter, ["retention"])
    if refused is not None:
        return refused
    return adapter.call("leave", queue=str(queue))


#: scenario op -> how to call an adapter with the scenario arguments
DISPATCH: dict[str, Callable[[Adapter, Any], Result]] = {
    "address": lambda a, x: _declare_address(a, x),
    "queue": _declare_queue,
    "consumer": _open_consumer,
    "send": lambda a, x: _missing(a, _send_needs(x)) or a.send(x["to"], _message(_send_args(x))),
    "receive": lambda a, x: a.receive(x),
    "ack": lambda a, x: a.ack(x["consumer"], x["id"], x.get("tx", False)),
    "nack": _nack,
    "commit": lambda a, x: a.commit(x),
    "rollback": lambda a, x: a.rollback(x),
    "close": lambda a, x: a.close_consumer(x),
    "browse": lambda a, x: a.browse(x),
    "set_ring_size": lambda a, x: a.set_ring_size(x["queue"], x["size"]),
    "advance": lambda a, x: a.advance(x),
    # capability `sessions`; through call() so an adapter without it needs no new method
    "close_session": lambda a, x: a.call("close_session", consumer=x),
    # batches: the single operations in order (no adapter method of their own); the value is the list
    # of the single values, or the first answer that is not ok
    "send_batch": lambda a, x: _each(lambda m: DISPATCH["send"](a, m[1]), batch_items("send_batch", x)),
    "receive_batch": lambda a, x: _each(lambda m: a.receive(m[1]), batch_items("receive_batch", x),
                                        until_empty=True),
    "ack_batch": lambda a, x: _each(lambda m: DISPATCH["ack"](a, m[1]), batch_items("ack_batch", x)),
    "in_progress": _in_progress,
    "purge": _purge,
    "set_subject_limit": _set_subject_limit,
    "delete": _delete,
    "restart": _restart,
    "pause": _pause,
    "join": _join,
    "leave": _leave,
    "fetch": _fetch,
}
BATCH_OPS = ("send_batch", "receive_batch", "ack_batch")
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
    if op in ("receive", "commit", "rollback", "close", "close_session"):
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
        #: observation -> how many times the adapter answered *not observable* (not evidenced)
        self.not_observed: dict[str, int] = {}
        #: called with each violation and the steps so far, before it is raised
        self.on_violation: Callable[[Violation, list[Step]], None] | None = None
        #: a check failed in this example (a machine's teardown then adds no checks of its own)
        self.violated = False

    # ------------------------------------------------------------------ recording
    def observe(self, f: str, queue: str | None, value: Any) -> None:
        """Record an observation (counters, delivery counts, browse) in the history."""
        if self.history is not None:
            self.history.record("ok", f, value, process="observer", queue=queue)

    # ------------------------------------------------------------------ checks
    def check(self, name: str, ok: bool, message: Callable[[], str], *, field: str = "",
              expected: Any = None, actual: Any = None) -> None:
        """Fail check `name` (with its rule ids) unless `ok`; disabled checks are skipped. `field`,
        `expected` and `actual` describe the compared values when there are such (see Violation)."""
        if name in self.disabled:
            return
        self.checked.add(name)
        if not ok:
            self.violated = True
            violation = Violation(name, self.rules.get(name, ()), message(), field=field,
                                  expected=expected, actual=actual)
            if self.on_violation is not None:
                self.on_violation(violation, self.steps)
            raise violation

    def expect_equal(self, name: str, expected: Any, actual: Any, context: str = "", field: str = "") -> None:
        """Check `name` holds when the implementation's value equals the model's (`field`: what they are)."""
        self.check(name, expected == actual,
                   lambda: f"{context}expected {expected!r}, the implementation gave {actual!r}",
                   field=field, expected=expected, actual=actual)

    # ------------------------------------------------------------------ operations
    def both(self, op: str, args: Any, compare: str | None = None) -> Any:
        """Apply `op` to both sides; the model's value (see both_values)."""
        return self.both_values(op, args, compare)[0]

    def both_values(self, op: str, args: Any, compare: str | None = None) -> tuple[Any, Any]:
        """Apply `op` to both sides; compare the values under check `compare` (if given).

        Returns (the model's value, the implementation's value). An `info` answer stops the run
        (Inconclusive); a `fail` where the model succeeded is a violation of check `compare`
        (or `<op>.accepted`) and the implementation's value is None.
        """
        steps = self.steps

        def keep(expected: Any) -> None:
            steps.append(Step(op, args, {"result": expected} if compare else None))

        expected, actual, _ = self._apply(op, args, compare, "", keep)
        return expected, actual

    def both_batch(self, op: str, args: Mapping[str, Any], compare: str,
                   after: Callable[[Any, Any], None] | None = None) -> list[tuple[Any, Any]]:
        """A batch op (BATCH_OPS) as ONE step: its single operations run on both sides one by one,
        each recorded in the history under its own name and compared under check `compare`.

        Returns (model value, implementation value) per single operation run; a `fail` where the
        model succeeded is a violation of `compare`, an `info` stops the run. `after(model value,
        implementation value)` runs after each single operation the implementation accepted (its
        observations follow it).
        """
        pairs: list[tuple[Any, Any]] = []
        expected_values: list[Any] = []
        self.steps.append(Step(op, dict(args), {"result": expected_values}))
        label = f"{op}: "
        keep = expected_values.append
        for single, item in batch_items(op, args):
            expected, actual, accepted = self._apply(single, item, compare, label, keep)
            pairs.append((expected, actual))
            if accepted and after is not None:
                after(expected, actual)
            if op == "receive_batch" and expected is None:
                break  # the model has nothing more for the consumer: the batch ends (see _each)
        return pairs

    def _apply(self, op: str, args: Any, compare: str | None, label: str,
               keep: Callable[[Any], None]) -> tuple[Any, Any, bool]:
        """The one path of every operation: record it, run it on the model (its value goes to
        `keep`, which records the step) and on the adapter, record the answer, then handle `info`
        and refusals and compare. Returns (model value, implementation value, whether the
        implementation accepted the operation); the implementation's value is None when it failed."""
        history = self.history
        if history is not None:
            process, queue = _process(op, args), _queue_of(args)
            history.record("invoke", op, args, process=process, queue=queue)
        expected = call_operation(self.model, op, args)
        if not expected.is_ok:
            raise RuntimeError(f"the machine generated an operation the claimed model rejects: {op} "
                               f"{args!r}: {expected.error}")
        keep(expected.value)
        actual = call_operation(self.adapter, op, args)
        kind = actual.type
        if history is not None:
            history.record(kind, op, actual.value if kind == "ok" else actual.error,
                           process=process, queue=queue)
        if kind == "ok":
            if compare is not None:
                value = actual.value
                self.check(compare, expected.value == value,
                           lambda: f"{label}{op} {args!r}: expected {expected.value!r}, the implementation "
                                   f"gave {value!r}", expected=expected.value, actual=value)
            return expected.value, actual.value, True
        if kind == "info":
            raise Inconclusive(f"{op}: {actual.error}")
        if (actual.error or "").startswith("unsupported"):
            raise Inconclusive(f"{op}: the adapter refused an operation its capabilities claim: "
                               f"{actual.error}")
        self.check(compare or f"{op}.accepted", False,
                   lambda: f"{label}{op} {args!r} failed on the implementation: {actual.error}")
        return expected.value, None, False

    def both_refused(self, op: str, args: Any) -> Result:
        """Apply an operation the claimed model answers ``unsupported`` (SCHED-13) to both sides;
        the implementation's Result, for the caller to check (an `info` answer stops the run). The
        step is kept without an expectation: replayed, the model refuses it again."""
        history = self.history
        process, queue = _process(op, args), _queue_of(args)
        if history is not None:
            history.record("invoke", op, args, process=process, queue=queue)
        expected = call_operation(self.model, op, args)
        if expected.is_ok or not (expected.error or "").startswith("unsupported"):
            raise RuntimeError(f"the machine expected the claimed model to refuse {op} {args!r} as "
                               f"unsupported; it answered {expected}")
        self.steps.append(Step(op, args))
        actual = call_operation(self.adapter, op, args)
        if history is not None:
            history.record(actual.type, op, actual.value if actual.is_ok else actual.error,
                           process=process, queue=queue)
        if actual.type == "info":
            raise Inconclusive(f"{op}: {actual.error}")
        return actual

    def observe_both(self, method: str, *args: Any) -> tuple[Any, Any]:
        """Read the same observation from the model and the adapter (no step is recorded). Any
        answer but ok stops the run (Inconclusive); see observe_if_observable."""
        observed = self.observe_if_observable(method, *args)
        if observed is None:
            raise Inconclusive(f"{method}: the adapter could not answer: not observable")
        return observed

    def observe_if_observable(self, method: str, *args: Any) -> tuple[Any, Any] | None:
        """observe_both, except that None is returned when the adapter answers *not observable*
        (Result.not_observable: it cannot make this observation in this state). The caller then
        skips the check: the observation is not applicable for this step and evidences nothing."""
        expected = getattr(self.model, method)(*args)
        actual = getattr(self.adapter, method)(*args)
        if actual.is_not_observable:
            self.not_observed[method] = self.not_observed.get(method, 0) + 1
            return None
        if actual.type == "info":
            raise Inconclusive(f"{method}: {actual.error}")
        if not actual.is_ok:
            raise Inconclusive(f"{method}: the adapter could not answer: {actual.error}")
        return expected.value, actual.value
