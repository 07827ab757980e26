"""The base of every conformance machine: one Driver per example, capabilities, shared checks."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, ClassVar

import attrs
from hypothesis.stateful import RuleBasedStateMachine

from mqconform.adapters.contract import COUNTERS, EXTRA_CAPABILITIES, Adapter
from mqconform.history import HistoryWriter
from mqconform.reference_model.options import ModelOptions

from .checks import Checks, check, rule_table
from .driver import Driver
from .timing import TimeLedger

_namespaces = itertools.count(1)

#: ConformanceMachine.compare_counters: each counter both sides show (its capability counter:<name>),
#: and DELIVERY-1's identity over the five stored counts
COUNTER_RULES = {"message_count": ("DELIVERY-1",), "pending_count": ("DELIVERY-1",),
                 "delivering_count": ("DELIVERY-1",), "scheduled_count": ("SCHED-6",),
                 "paged_count": ("PAGING-2",), "added": ("DELIVERY-9",), "acknowledged": ("DELIVERY-10",),
                 "replaced": ("RING-3",), "killed": ("REDELIVERY-6",), "expired": ("EXPIRY-7",)}
_STORED = ("message_count", "pending_count", "delivering_count", "scheduled_count", "paged_count")
COUNTER_CHECKS = Checks(
    *(check(f"counters.{name}", *COUNTER_RULES[name], needs=(f"counter:{name}",)) for name in COUNTERS
      if name != "expired"),
    check("counters.identity", "DELIVERY-1", needs=tuple(f"counter:{name}" for name in _STORED)))
#: the expired counter, compared by the machines that expire messages (machines/expiry.py)
EXPIRED_COUNTER = Checks(check("counters.expired", *COUNTER_RULES["expired"], needs=("counter:expired",)))


@attrs.define
class RunContext:
    """What a machine class needs to run: the adapter, the claimed profile, where to record."""

    adapter_factory: Callable[[], Adapter]
    claimed: ModelOptions
    history: HistoryWriter | None = None
    disabled: frozenset[str] = frozenset()
    namespace_prefix: str = "mqc"
    #: the machine of the example running now (the runner reads its steps after a failure)
    current: Any = None
    checked: set[str] = attrs.field(factory=set)
    examples: int = 0
    #: the violation with the fewest steps any example of this run raised, and those steps. Hypothesis
    #: forgets a failure when replaying its choices does not generate the same run (a real broker's
    #: timing feeds the model's state); the runner then reports this one instead of nothing.
    smallest_violation: tuple[Any, list[Any]] | None = None
    #: time.perf_counter() of the first violation (shrinking starts there; the runner bounds it)
    first_violation_at: float | None = None
    #: how many examples had run when the first violation came (that one included; shrinking's not):
    #: what the exploration spent of the area's budget (the runner explores the rest after it)
    examples_at_violation: int | None = None
    #: (a violation, the steps that showed it) -> does a registered known bug explain it as it stands?
    #: Then Hypothesis does not shrink it (a known bug's story need not be the smallest: the runner's
    #: own step-by-step minimisation still cuts it); None: every failure is shrunk
    known_bug: Callable[[Any, list[Any]], bool] | None = None
    #: known_bug explained the first violation as found: Hypothesis did not shrink it
    known_as_found: bool = False
    #: the first violation and its steps, judged once its example closed (judge_as_found)
    _to_judge: tuple[Any, list[Any]] | None = None
    #: where the area's time goes (mqconform.conformance.exploring.timing), shared by its examples
    ledger: TimeLedger = attrs.field(factory=TimeLedger)
    #: Hypothesis stopped the exploration, no violation seen, because an example's choices generated
    #: another run than before (a real broker's timing decided a discard or a step's answer)
    generation_flaky: bool = False

    def saw_violation(self, violation: Any, steps: list[Any]) -> None:
        if self.first_violation_at is None:
            self.first_violation_at = time.perf_counter()
            self.examples_at_violation = self.examples
            if self.known_bug is not None:
                self._to_judge = (violation, list(steps))
        if self.smallest_violation is None or len(steps) < len(self.smallest_violation[1]):
            self.smallest_violation = (violation, list(steps))

    def judge_as_found(self) -> None:
        """After the example of the first violation closed its adapter (a bug model's replay may run
        on the same one): does a registered bug explain it as found? Then Hypothesis' shrinking of it
        ends at once (:attr:`known_bug`)."""
        pending, self._to_judge = self._to_judge, None
        if pending is not None and self.known_bug is not None and self.known_bug(*pending):
            self.known_as_found = True
            _end_shrinking_at_once()


def _end_shrinking_at_once() -> None:
    """Hypothesis' shrinking of the failure found now ends at its first step: its time bound
    (hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS, documented as monkeypatchable and
    read when shrinking starts) is 0; runner.shrink_budget puts the bound back after the exploration."""
    from hypothesis.internal.conjecture import engine

    engine.MAX_SHRINKING_SECONDS = 0


class ConformanceMachine(RuleBasedStateMachine):
    """Common set-up: model and adapter side by side, capabilities, model-free invariants."""

    area: ClassVar[str] = ""
    #: capabilities without which the whole machine is not applicable (any one of ANY_OF too)
    REQUIRES: ClassVar[tuple[str, ...]] = ()
    ANY_OF: ClassVar[tuple[str, ...]] = ()
    #: the checks the machine's steps make, declared beside them (mqconform.conformance.exploring.checks)
    CHECKS: ClassVar[Checks] = Checks()
    #: check name -> spec rule ids it verifies, collected from CHECKS when the class is made
    RULES: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: an area whose examples sleep seconds on an adapter with a real clock (``real_time``) runs
    #: 1/REAL_TIME_SHARE of the settings' examples there, unless the user set --max-examples
    REAL_TIME_SHARE: ClassVar[int] = 1
    context: ClassVar[RunContext]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.RULES = rule_table(cls.area, cls.CHECKS)

    def __init__(self) -> None:
        super().__init__()
        ctx = self.context
        ctx.examples += 1
        ctx.current = self
        self.adapter = ctx.adapter_factory()
        with ctx.ledger.timed("setup"):
            self.adapter.open(f"{ctx.namespace_prefix}-{self.area}-{next(_namespaces)}")
        if ctx.history is not None:
            ctx.history.next_example()
        self.d = Driver(self.adapter, ctx.claimed, ctx.history, self.RULES, ctx.disabled, ctx.ledger)
        self.d.checked = ctx.checked
        self.d.on_violation = ctx.saw_violation
        claimed = frozenset(ctx.claimed.features) | EXTRA_CAPABILITIES
        self.caps = claimed & frozenset(self.adapter.capabilities)
        #: the counters both sides show (fixed per example: looked up once, not at every step)
        self.observable_counters = tuple(c for c in COUNTERS if f"counter:{c}" in self.caps)

    @classmethod
    def applicable(cls, caps: frozenset[str]) -> bool:
        """Can this machine run at all with these (claimed & offered) capabilities?"""
        return all(c in caps for c in cls.REQUIRES) and (not cls.ANY_OF or any(c in caps for c in cls.ANY_OF))

    def can(self, *capabilities: str) -> bool:
        return all(c in self.caps for c in capabilities)

    @property
    def options(self) -> ModelOptions:
        return self.context.claimed

    def teardown(self) -> None:
        with self.context.ledger.timed("setup"):
            self.adapter.close()
        self.context.judge_as_found()

    def identity_holds(self, queue: str) -> bool:
        """Does DELIVERY-1's counter identity hold for `queue`? (not on the queues of DELIVERY-12)"""
        return True

    # ------------------------------------------------------------------ shared observations
    def compare_counters(self, queue: str) -> dict[str, int] | None:
        """Compare every counter both sides show; check the counter identity (DELIVERY-1)."""
        observable = self.observable_counters
        if not observable:
            return None
        observed = self.d.observe_if_observable("counters", queue)
        if observed is None:  # not observable in this state: nothing compared at this step
            return None
        expected, actual = observed
        actual = {k: v for k, v in actual.items() if k in observable}
        self.last_counters = (expected, actual)  # for a machine's own checks on the same reading
        d = self.d
        d.observe("counters", queue, actual)
        for name in observable:
            want, got = expected[name], actual.get(name)
            if want == got and f"counters.{name}" in d.checked:  # the common case: already recorded
                continue
            d.expect_equal(f"counters.{name}", want, got, f"queue {queue} {name}: ", field=name)
        parts = ("pending_count", "delivering_count", "scheduled_count", "paged_count")
        if all(p in actual for p in parts) and "message_count" in actual and self.identity_holds(queue):
            total = sum(actual[p] for p in parts)
            self.d.check("counters.identity", actual["message_count"] == total,
                         lambda: f"queue {queue}: message_count {actual['message_count']} != "
                                 f"pending + delivering + scheduled + paged = {total}")
        return actual
