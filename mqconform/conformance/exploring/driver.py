"""Apply one operation to the model and to the adapter under test, record it, compare them.

The model is itself behind the adapter contract (a ReferenceAdapter under the *claimed* profile), so
both sides answer with a Result and one comparison path serves every operation. Each executed
operation is kept as a scenario step (for counterexamples) and written to the history.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from hypothesis.errors import UnsatisfiedAssumption

from mqconform.adapters.contract import Adapter, ClockLead, Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.history import HistoryWriter
from mqconform.operations import batch_items, call_operation, process_of
from mqconform.reference_model.options import ModelOptions

from .timing import TimeLedger, category


class Inconclusive(BaseException):
    """The adapter answered `info` (timeout, lost connection) or refused a declared capability.

    A BaseException so Hypothesis does not treat it as a counterexample to shrink: the run stops
    and its rules are reported *unknown*, never pass or fail.
    """


class Violation(AssertionError):
    """The implementation did something the claimed profile forbids (a conformance failure)."""

    def __init__(self, check: str, rules: tuple[str, ...], message: str, *, field: str = "",
                 expected: Any = None, actual: Any = None, clock_lead_limit_ms: float | None = None) -> None:
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
        #: the margin the machine gave timer comparisons on a real clock (ClockLead.limit_ms), if any:
        #: the counterexample's scenario keeps it (clock_lead_limit_ms)
        self.clock_lead_limit_ms = clock_lead_limit_ms


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


def _queue_of(args: Any) -> str | None:
    if isinstance(args, Mapping):
        for key in ("queue", "to", "name"):
            if isinstance(args.get(key), str):
                return str(args[key])
    return None


class Driver:
    """Runs operations on the model and the adapter side by side."""

    def __init__(self, adapter: Adapter, claimed: ModelOptions, history: HistoryWriter | None,
                 rules: Mapping[str, tuple[str, ...]], disabled: Iterable[str] = (),
                 ledger: TimeLedger | None = None) -> None:
        self.adapter = adapter
        #: where the time of every call on each side goes (mqconform.conformance.exploring.timing)
        self.ledger = ledger if ledger is not None else TimeLedger()
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
        #: called with each violation and the steps so far instead of raising it, when set: true means
        #: the check is disabled from here on and the example goes on, as a run that had disabled it
        #: from the start would go on (a lockstep group records each release's findings this way,
        #: mqconform.conformance.exploring.lockstep); false raises it as usual
        self.keep_going: Callable[[Violation, list[Step]], bool] | None = None
        #: how far the broker's clock ran ahead of the model's in this example, measured after each call
        #: on the implementation while a machine that compares timers on a real clock sets its
        #: ``limit_ms`` (past it, a failing check can no longer be trusted)
        self.clock_lead = ClockLead()
        #: every check made, in order: (the 1-based number of the last step run before it, its name,
        #: the field it compared); a matrix keeps it with the example (mqconform.conformance.exploring.corpus)
        self.check_log: list[tuple[int, str, str]] = []

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
        self.check_log.append((len(self.steps), name, field))
        if not ok:
            self._discard_if_clock_ran_ahead()
            violation = Violation(name, self.rules.get(name, ()), message(), field=field,
                                  expected=expected, actual=actual,
                                  clock_lead_limit_ms=self.clock_lead.limit_ms)
            if self.keep_going is not None and self.keep_going(violation, self.steps):
                self.disabled = self.disabled | {name}
                return
            self.violated = True
            if self.on_violation is not None:
                self.on_violation(violation, self.steps)
            raise violation

    def _discard_if_clock_ran_ahead(self) -> None:
        """Throw the example away (Hypothesis ``reject``: neither a pass nor a counterexample) when
        the broker's real clock ran further ahead of the model's than the machine's margin: a timer
        the broker started late or fired early then decides the comparison, not the broker's rules
        (a loaded machine, a slow round trip). Likewise after timers started at different logical
        instants came due together on the model (ClockLead.tie_ms). Counted in the area's ledger."""
        self.clock_lead.note_tie(self.model)
        if self.clock_lead.undecided:
            self.ledger.discarded += 1
            raise UnsatisfiedAssumption  # what hypothesis.reject() raises inside a test

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
        """A batch op (operations.BATCH_OPS) as ONE step: its single operations run on both sides one by one,
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
                break  # the model has nothing more for the consumer: the batch ends (see operations._each)
        return pairs

    def _apply(self, op: str, args: Any, compare: str | None, label: str,
               keep: Callable[[Any], None]) -> tuple[Any, Any, bool]:
        """The one path of every operation: record it, run it on the model (its value goes to
        `keep`, which records the step) and on the adapter, record the answer, then handle `info`
        and refusals and compare. Returns (model value, implementation value, whether the
        implementation accepted the operation); the implementation's value is None when it failed."""
        history = self.history
        if history is not None:
            process, queue = process_of(op, args), _queue_of(args)
            history.record("invoke", op, args, process=process, queue=queue)
        with self.ledger.timed("model"):
            expected = call_operation(self.model, op, args)
        if not expected.is_ok:
            raise RuntimeError(f"the machine generated an operation the claimed model rejects: {op} "
                               f"{args!r}: {expected.error}")
        keep(expected.value)
        actual = self._call(op, args)
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

    def _call(self, op: str, args: Any) -> Result:
        """`op` on the implementation, its time booked by what it answered (timing.category)."""
        start = time.perf_counter()
        actual = call_operation(self.adapter, op, args)
        # only an ok answer can be empty: a refused or unanswered call is booked with the answers
        seconds = time.perf_counter() - start
        self.ledger.add(category(op, actual.value) if actual.is_ok else "answers", seconds)
        self.clock_lead.measure(self.adapter)
        return actual

    def both_refused(self, op: str, args: Any) -> Result:
        """Apply an operation the claimed model answers ``unsupported`` (SCHED-13) to both sides;
        the implementation's Result, for the caller to check (an `info` answer stops the run). The
        step is kept without an expectation: replayed, the model refuses it again."""
        history = self.history
        process, queue = process_of(op, args), _queue_of(args)
        if history is not None:
            history.record("invoke", op, args, process=process, queue=queue)
        with self.ledger.timed("model"):
            expected = call_operation(self.model, op, args)
        if expected.is_ok or not (expected.error or "").startswith("unsupported"):
            raise RuntimeError(f"the machine expected the claimed model to refuse {op} {args!r} as "
                               f"unsupported; it answered {expected}")
        self.steps.append(Step(op, args))
        actual = self._call(op, args)
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
        with self.ledger.timed("model"):
            expected = getattr(self.model, method)(*args)
        with self.ledger.timed("observe"):
            actual = getattr(self.adapter, method)(*args)
        self.clock_lead.measure(self.adapter)
        if actual.is_not_observable:
            self.not_observed[method] = self.not_observed.get(method, 0) + 1
            return None
        if actual.type == "info":
            raise Inconclusive(f"{method}: {actual.error}")
        if not actual.is_ok:
            raise Inconclusive(f"{method}: the adapter could not answer: {actual.error}")
        return expected.value, actual.value
