"""Step a scenario through one adapter, check every `expect`, print what happened.

The verdict: ``pass`` (every applicable expectation held), ``fail`` (the first mismatch, with its
step number), ``unknown`` (the adapter answered ``info`` or broke), ``invalid`` (the reference model
rejected a step as misuse: the scenario is wrong). An expectation the adapter cannot observe, and an
operation it does not support, are *not applicable*; with ``strict`` they fail instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs

from mqconform.adapters.contract import COUNTERS, Adapter, ClockLead, Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.operations import BATCH_OPS, COMPARED, call_operation

from .expect import Check, Observer, expected_result, normal, show
from .loader import Scenario, ScenarioStep

#: not_applicable: the adapter refused an operation as unsupported, so the steps from there were not run
#: (never a pass: nothing after that step was checked; a failure under ``strict``)
Verdict = Literal["pass", "fail", "unknown", "invalid", "not_applicable", "deviation"]
#: ``deviation``: a failure that a registered broker bug explains (as ``mqconform run`` exits on one)
EXIT_CODES: dict[str, int] = {"pass": 0, "not_applicable": 0, "deviation": 0, "fail": 1, "invalid": 2,
                              "unknown": 3}
Printer = Callable[[str], None]

_SHORT = {"message_count": "messages", "pending_count": "pending", "delivering_count": "delivering",
          "scheduled_count": "scheduled", "paged_count": "paged"}


@attrs.define
class Outcome:
    """What running one scenario gave."""

    verdict: Verdict
    name: str
    steps_run: int = 0
    held: int = 0
    not_applicable: list[str] = attrs.field(factory=list)
    step: int | None = None
    op: str | None = None
    message: str = ""
    #: the expectation that failed (expect.Check), for a ``fail`` at a mismatch
    mismatch: Any = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def verdict_line(self) -> str:
        where = f"step {self.step} ({self.op or 'expect'}): " if self.step is not None else ""
        if self.verdict == "pass":
            na = f", {len(self.not_applicable)} not applicable" if self.not_applicable else ""
            return f"PASS {self.name}: {self.steps_run} steps, {self.held} expectations held{na}"
        if self.verdict == "not_applicable":
            return f"N/A {self.name}: {where}{self.message} (after {self.steps_run} steps, {self.held} held)"
        return f"{self.verdict.upper()} {self.name}: {where}{self.message}"


def _describe(op: str | None, args: Any) -> str:
    if op is None:
        return "expect"
    if isinstance(args, dict):
        inner = ", ".join(f"{k}: {v}" for k, v in args.items())
        return f"{op} {{{inner}}}"
    return f"{op} {args}"


def _counter_line(adapter: Adapter, queue: str) -> str | None:
    caps = adapter.capabilities
    if not any(f"counter:{c}" in caps for c in COUNTERS):
        return None
    try:
        result = adapter.counters(queue)
    except Exception:
        return None
    if not result.is_ok or not isinstance(result.value, dict):
        return None
    shown = [f"{_SHORT.get(c, c)} {result.value[c]}" for c in COUNTERS
             if f"counter:{c}" in caps and c in result.value and (c in _SHORT or result.value[c])]
    return f"{queue}: " + ", ".join(shown)


def _pending_line(adapter: Adapter, queue: str) -> str | None:
    """`<queue> order: [ids]` where the adapter shows the pending order (capability pending_order)."""
    if "pending_order" not in adapter.capabilities:
        return None
    try:
        result = adapter.pending_ids(queue)
    except Exception:
        return None
    return f"{queue} order: {show(result.value)}" if result.is_ok else None


def _side_by_side(model: Adapter, impl: Adapter, queues: list[str]) -> list[str]:
    """Model and implementation next to each other: every counter and the pending order per queue."""
    rows = [f"{'':>6}{'':<28} {'model':<30} implementation"]
    for queue in queues:
        observations: list[tuple[str, Result, Result]] = []
        for name in COUNTERS:
            if f"counter:{name}" in impl.capabilities:
                observations.append((name, model.counters(queue), impl.counters(queue)))
        for name, want, got in observations:
            left = want.value.get(name) if want.is_ok else want.error
            right = got.value.get(name) if got.is_ok and isinstance(got.value, dict) else got.error
            mark = "" if left == right else "   <-"
            rows.append(f"{'':>6}{queue + ' ' + name:<28} {show(left):<30} {show(right)}{mark}")
        if "pending_order" in impl.capabilities:
            want, got = model.pending_ids(queue), impl.pending_ids(queue)
            left = show(want.value) if want.is_ok else str(want.error)
            right = show(got.value) if got.is_ok else str(got.error)
            mark = "" if left == right else "   <-"
            rows.append(f"{'':>6}{queue + ' pending':<28} {left:<30} {right}{mark}")
    return rows


class _Run:
    def __init__(self, scenario: Scenario, adapter: Adapter, strict: bool, printer: Printer,
                 on_step: Callable[[int, str], None] | None) -> None:
        #: with an implementation under test, the model runs alongside for the side-by-side view
        self.model: ReferenceAdapter | None = None
        if not isinstance(adapter, ReferenceAdapter):
            try:
                claimed = scenario.model_options(getattr(adapter, "profile", None))
                self.model = ReferenceAdapter(options=claimed)
            except Exception:  # an unknown claimed profile: no side-by-side view
                self.model = None
        self.scenario = scenario
        self.adapter = adapter
        self.strict = strict
        self.print = printer
        self.on_step = on_step
        self.observer = Observer(adapter, scenario.addresses)
        self.outcome = Outcome("pass", scenario.name)
        self.queues: list[str] = []
        #: how far the implementation's real clock ran ahead of the scenario's logical time, measured
        #: after each step when the scenario sets clock_lead_limit_ms
        self.clock_lead = ClockLead(scenario.clock_lead_limit_ms)

    def stop(self, verdict: Verdict, step: ScenarioStep, message: str) -> Outcome:
        self.outcome.verdict = verdict
        self.outcome.step = step.number
        self.outcome.op = step.op
        self.outcome.message = message
        return self.outcome

    def execute(self, step: ScenarioStep) -> Result:
        try:
            return call_operation(self.adapter, step.op or "", step.args)
        except Exception as exc:  # the adapter broke: unknown, never a traceback or a pass
            return Result.info(f"the adapter raised {type(exc).__name__}: {exc}")

    def run(self) -> Outcome:
        for step in self.scenario.steps:
            stopped = self.run_step(step)
            if stopped is not None:
                return stopped
            self.outcome.steps_run += 1
        return self.outcome

    def run_step(self, step: ScenarioStep) -> Outcome | None:
        self.observer.new_step()
        value: Any = None
        if step.op is not None:
            if self.on_step is not None:
                self.on_step(step.number, step.op)
            if self.model is not None:
                try:
                    call_operation(self.model, step.op, step.args)
                except Exception:  # the model view is a help for the reader, never the verdict
                    self.model = None
            result = self.execute(step)
            self.clock_lead.measure(self.adapter)
            if result.type == "info":
                return self.stop("unknown", step, f"{step.op} gave no answer: {result.error}")
            if result.type == "fail":
                return self.refused(step, result.error or "failed")
            value = normal(result.value)
            if step.op == "queue":
                self.queues.append(step.args["name"])
        self.print(f"{step.number:>4}  {_describe(step.op, step.args):<58} "
                   f"{'' if step.op is None else _result_text(step.op, value)}".rstrip())
        for queue in self.queues:
            for line in (_counter_line(self.adapter, queue), _pending_line(self.adapter, queue)):
                if line:
                    self.print(f"{'':>6}{line}")
        for check in self.checks(step, value):
            stopped = self.account(step, check)
            if stopped is not None:
                return stopped
        return None

    def fail(self, step: ScenarioStep, message: str) -> Outcome:
        """A mismatch is a failure, unless the implementation's real clock ran further ahead of the
        scenario's than its margin (a loaded machine, slow round trips): a timer the broker started
        late or fired early may then decide it, so it is not judged (``unknown``, run it again). Nor
        is it after the model running beside it had timers started at different logical instants
        come due together (ClockLead.tie_ms; an implementation that is a model itself tells its own)."""
        lead = self.clock_lead
        lead.note_tie(self.model if self.model is not None else self.adapter)
        if lead.undecided:
            return self.stop("unknown", step, f"{message}; not judged: {lead.why()}")
        return self.stop("fail", step, message)

    def refused(self, step: ScenarioStep, error: str) -> Outcome | None:
        if error.startswith("unsupported"):
            message = f"{step.op} is not supported by the adapter ({error})"
            if self.strict:
                return self.stop("fail", step, message + " [strict]")
            self.outcome.not_applicable.append(f"step {step.number}: {message}; the rest was not run")
            self.print(f"{step.number:>4}  {_describe(step.op, step.args)}  NOT APPLICABLE: {error}")
            return self.stop("not_applicable", step, f"{message}; the rest was not run")
        if isinstance(self.adapter, ReferenceAdapter):
            return self.stop("invalid", step, f"line {step.line}: the model rejects {step.op}: {error}")
        return self.fail(step, f"{step.op} failed on the implementation: {error}")

    def checks(self, step: ScenarioStep, value: Any) -> list[Check]:
        checks: list[Check] = []
        for key, expected in step.expect.items():
            if key == "result":
                want = expected_result(step.op or "", expected)
                checks.append(Check("held" if want == value else "mismatch", "result", want, value))
            else:
                for entry in expected:
                    checks.extend(self.observer.check(key, entry))
        return checks

    def account(self, step: ScenarioStep, check: Check) -> Outcome | None:
        if check.state == "held":
            self.outcome.held += 1
            return None
        if check.state == "mismatch":
            self.print(f"{'':>6}MISMATCH {check.describe()}")
            if self.model is not None:
                for row in _side_by_side(self.model, self.adapter, self.queues):
                    self.print(row)
            self.outcome.mismatch = check
            return self.fail(step, check.describe())
        if check.state == "unknown":
            return self.stop("unknown", step, check.describe())
        if self.strict:
            return self.stop("fail", step, check.describe() + " [strict]")
        self.print(f"{'':>6}n/a {check.describe()}")
        self.outcome.not_applicable.append(f"step {step.number}: {check.describe()}")
        return None


#: operations whose value is the point of the step (a null there is shown, not "ok")
RESULT_OPS = COMPARED - frozenset(BATCH_OPS)


def _result_text(op: str, value: Any) -> str:
    return "-> " + show(value) if value is not None or op in RESULT_OPS else "ok"


def run_scenario(scenario: Scenario, adapter: Adapter, *, strict: bool = False,
                 printer: Printer | None = None, namespace: str = "mqc-scenario",
                 on_step: Callable[[int, str], None] | None = None) -> Outcome:
    """Run `scenario` on `adapter` (opened and closed here) and return its outcome."""
    out = printer or (lambda _line: None)
    try:
        adapter.open(namespace)
    except Exception as exc:
        return Outcome("unknown", scenario.name, message=f"cannot open the adapter: {exc}")
    try:
        return _Run(scenario, adapter, strict, out, on_step).run()
    finally:
        try:
            adapter.close()
        except Exception as exc:
            out(f"      (closing the adapter failed: {exc})")


def run_until_judged(scenario: Scenario, adapter: Adapter, *, attempts: int = 3,
                     namespace: str = "mqc-scenario", **options: Any) -> Outcome:
    """run_scenario, run again (each time in a fresh namespace) while its verdict is ``unknown``
    (the implementation's clock ran past the scenario's margin, or it gave no answer), at most
    `attempts` times in all; the last outcome."""
    outcome = run_scenario(scenario, adapter, namespace=namespace, **options)
    for attempt in range(2, attempts + 1):
        if outcome.verdict != "unknown":
            break
        outcome = run_scenario(scenario, adapter, namespace=f"{namespace}-{attempt}", **options)
    return outcome
