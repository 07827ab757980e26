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

from mqconform.adapters.contract import COUNTERS, Adapter, Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.driver import call_operation

from .expect import Check, Observer, expected_result, normal, show
from .loader import Scenario, ScenarioStep

Verdict = Literal["pass", "fail", "unknown", "invalid"]
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "invalid": 2, "unknown": 3}
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

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def verdict_line(self) -> str:
        where = f"step {self.step} ({self.op or 'expect'}): " if self.step is not None else ""
        if self.verdict == "pass":
            na = f", {len(self.not_applicable)} not applicable" if self.not_applicable else ""
            return f"PASS {self.name}: {self.steps_run} steps, {self.held} expectations held{na}"
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


class _Run:
    def __init__(self, scenario: Scenario, adapter: Adapter, strict: bool, printer: Printer,
                 on_step: Callable[[int, str], None] | None) -> None:
        self.scenario = scenario
        self.adapter = adapter
        self.strict = strict
        self.print = printer
        self.on_step = on_step
        self.observer = Observer(adapter, scenario.addresses)
        self.outcome = Outcome("pass", scenario.name)
        self.queues: list[str] = []

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
            result = self.execute(step)
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
            line = _counter_line(self.adapter, queue)
            if line:
                self.print(f"{'':>6}{line}")
        for check in self.checks(step, value):
            stopped = self.account(step, check)
            if stopped is not None:
                return stopped
        return None

    def refused(self, step: ScenarioStep, error: str) -> Outcome | None:
        if error.startswith("unsupported"):
            message = f"{step.op} is not supported by the adapter ({error})"
            if self.strict:
                return self.stop("fail", step, message + " [strict]")
            self.outcome.not_applicable.append(f"step {step.number}: {message}; the rest was not run")
            self.print(f"{step.number:>4}  {_describe(step.op, step.args)}  NOT APPLICABLE: {error}")
            self.outcome.step = step.number
            return self.outcome
        if isinstance(self.adapter, ReferenceAdapter):
            return self.stop("invalid", step, f"line {step.line}: the model rejects {step.op}: {error}")
        return self.stop("fail", step, f"{step.op} failed on the implementation: {error}")

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
            return self.stop("fail", step, check.describe())
        if check.state == "unknown":
            return self.stop("unknown", step, check.describe())
        if self.strict:
            return self.stop("fail", step, check.describe() + " [strict]")
        self.print(f"{'':>6}n/a {check.describe()}")
        self.outcome.not_applicable.append(f"step {step.number}: {check.describe()}")
        return None


#: operations whose value is the point of the step (a null there is shown, not "ok")
RESULT_OPS = frozenset({"send", "receive", "ack", "nack", "browse", "offer", "complete", "submit", "take",
                        "put", "remove", "truncate"})


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
