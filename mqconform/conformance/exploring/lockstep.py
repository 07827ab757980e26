"""Several releases of one implementation explored by one Hypothesis run, step by step together.

One Hypothesis exploration of an area drives a *leader* machine whose adapter is the claimed
profile's model itself (the reference adapter, shown with the group's capabilities and clock, every
check off), and beside it one ordinary machine per release (each with its own adapter, driver and
history). Every step Hypothesis chooses runs on the leader and then on every release's machine
concurrently (threads), so Hypothesis' generation is paid once and the broker waits (advances,
settles) overlap.

Why this explores, for each release, what a run of that release alone explores: the machines draw
nothing themselves (every choice comes from Hypothesis' data through the rules' arguments), their
preconditions read the model's state, their own bookkeeping and the capabilities, and the answers of
the implementation that feed their state (an ack's `ok`, a send's `accepted`) equal the model's
whenever the check comparing them holds. So the group holds releases of one capability set only
(:func:`partition`), and before each step every release's machine must enable the same rules as the
leader; one that does not (its state followed an answer a disabled check let through) leaves that
example (counted in `left`, never a verdict). Hypothesis never sees a release's failure: exploration
goes on for all. When release k's check fails, the finding is recorded (the check, the steps so far)
and that check is disabled for k from there on while the example goes on, which is what a run of k
alone does after that finding (it disables the check and explores again from the first example, the
same examples under the same seed up to that point). After its `max_findings`-th finding, an `info`
answer (its rules *unknown*, never pass) or an adapter error, k leaves the exploration; the others go
on.

After the exploration each distinct check found is shrunk once, on the first release that shows it
(minimize.shrink, with the time the single-release runner gives Hypothesis' shrinking and its own
pass), and that counterexample is replayed on every other release whose exploration found the same
check: where it fails there too, it is that release's counterexample; where it does not, that
release's own steps are shrunk. Each release's MachineResult is then what
:func:`mqconform.conformance.exploring.runner.run_machine` returns for it, and goes through the same verdict.

What differs from a run of one release: no Hypothesis shrinking (the counterexample is the
exploration's example cut and minimised step by step, so it may be longer), the findings' checks are
those the exploration met (Hypothesis' shrinker may end on another check at the same place), and
under a seed with an example database a run of one release replays its saved failures first on each
rerun; the examples count those run once.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
from hypothesis import Verbosity, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from mqconform.adapters.contract import EXTRA_CAPABILITIES, Adapter, contract_changes, model_for
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.history import HistoryWriter
from mqconform.reference_model.options import ModelOptions
from mqconform.text import first_line

from .base import ConformanceMachine, RunContext
from .driver import Inconclusive, Step, Violation
from .minimize import BUDGET_S, shrink
from .runner import (
    MAX_RERUNS,
    REAL_TIME_SHRINK_S,
    MachineResult,
    finding_of,
    machine_class,
    not_run,
    stable_imports,
)


class _Aborted(Exception):
    """The example ended by an exception on the leader (see _Group.finish)."""


class _Everything(frozenset):  # type: ignore[type-arg]
    """Every check: the leader's driver makes none (model against model)."""

    def __contains__(self, item: object) -> bool:
        return True


@attrs.define(eq=False)
class Member:
    """One release of a lockstep group: its adapter, where it records, what it found."""

    label: str
    adapter: Adapter
    history: HistoryWriter | None = None
    result: MachineResult = attrs.field(factory=lambda: MachineResult(""))
    #: (violation, steps so far, seconds into the exploration) in the order the exploration met them
    raw: list[tuple[Violation, list[Step], float]] = attrs.field(factory=list)
    disabled: set[str] = attrs.field(factory=set)
    #: still exploring (not stopped by an `info` answer, an adapter error or its last finding)
    live: bool = True
    #: examples this release left because its state no longer enabled the leader's rules
    left: int = 0
    context: RunContext | None = None
    machine_class: Any = None
    machine: Any = None


def partition(adapters: Sequence[Any]) -> list[list[int]]:
    """Indexes of `adapters` by capability set and clock (a lockstep group needs one of each), in
    order of first appearance."""
    groups: dict[tuple[frozenset[str], bool], list[int]] = {}
    for index, adapter in enumerate(adapters):
        key = (frozenset(adapter.capabilities), bool(getattr(adapter, "real_time", False)))
        groups.setdefault(key, []).append(index)
    return list(groups.values())


class _LeaderAdapter(ReferenceAdapter):
    """The claimed model behind the contract, showing the group's capabilities and clock (so the
    machines' choices that read them are the group's)."""

    def __init__(self, claimed: ModelOptions, capabilities: frozenset[str], real_time: bool) -> None:
        super().__init__(options=claimed)
        self.capabilities = capabilities
        self.real_time = real_time


class _Group:
    """The release machines of the running example, stepped together with the leader."""

    def __init__(self, base: type[ConformanceMachine], members: list[Member], max_findings: int,
                 started: float) -> None:
        self.base = base
        self.members = members
        self.max_findings = max_findings
        self.started = started
        self.pool = ThreadPoolExecutor(max_workers=max(1, len(members)), thread_name_prefix="lockstep")
        self.rules = base.setup_state().rules

    # ------------------------------------------------------------------ per example
    def start(self) -> None:
        for member in self.members:
            member.machine = None
            if not member.live:
                continue
            assert member.context is not None
            member.context.disabled = frozenset(member.disabled)
            try:
                if member.machine_class is None:  # one class per release (Hypothesis caches per class)
                    member.machine_class = machine_class(self.base, member.context)
                machine = member.machine_class()
            except BaseException as exc:  # opening the example on this release failed
                self._stop(member, exc)
                continue
            machine.d.keep_going = functools.partial(self._found, member)
            member.machine = machine

    def _found(self, member: Member, violation: Violation, steps: list[Step]) -> bool:
        member.raw.append((violation, list(steps), time.perf_counter() - self.started))
        member.disabled.add(violation.check)
        return len(member.raw) < self.max_findings  # the last one is raised: the release stops

    def _enabled(self, machine: Any) -> tuple[bool, ...]:
        return tuple(all(p(machine) for p in rule.preconditions) for rule in self.rules)

    def step(self, leader: Any, call: Callable[[Any], Any], is_rule: bool) -> None:
        """Run `call` on the leader, then on every release still in the example, concurrently."""
        active = [m for m in self.members if m.machine is not None]
        if is_rule:  # the rules a release's machine enables must be the leader's (module docstring)
            want = self._enabled(leader)
            for member in active:
                if self._enabled(member.machine) != want:
                    member.left += 1
                    self._leave(member)
            active = [m for m in active if m.machine is not None]
        call(leader)
        if not active:
            return
        futures = [(m, self.pool.submit(self._guarded, m, call)) for m in active]
        for _, future in futures:
            future.result()

    def _guarded(self, member: Member, call: Callable[[Any], Any]) -> None:
        try:
            call(member.machine)
        except BaseException as exc:  # one release's trouble never stops the others
            self._stop(member, exc)

    def _stop(self, member: Member, exc: BaseException) -> None:
        """`member` leaves the exploration: its last finding, an `info` answer, an adapter error."""
        member.live = False
        if isinstance(exc, Inconclusive):
            member.result.unknown = str(exc)
        elif not isinstance(exc, Violation):
            member.result.unknown = f"the adapter raised {type(exc).__name__}: {first_line(exc)}"
        self._leave(member)

    @staticmethod
    def _leave(member: Member) -> None:
        machine, member.machine = member.machine, None
        if machine is not None:
            with contextlib.suppress(Exception):  # best effort cleanup after an aborted example
                machine.adapter.close()

    def finish(self, leader: Any) -> None:
        """The example's teardown on every release still in it: their final drain, unless the example
        ended by an exception (Hypothesis stops an example that runs out of data by raising in a
        draw): a machine's teardown then only cleans up, so each release's runs with an exception in
        hand too, as it would alone."""
        aborted = sys.exc_info()[0] is not None

        def down(machine: Any) -> None:
            if machine is leader:
                return
            if not aborted:
                machine.teardown()
                return
            try:
                raise _Aborted
            except _Aborted:
                machine.teardown()

        try:
            self.step(leader, down, is_rule=False)
        finally:
            for member in self.members:
                member.machine = None
                if member.context is not None:
                    member.context.current = None


def _leader_class(base: type[ConformanceMachine], context: RunContext, group: _Group) -> type[Any]:
    """A subclass of `base` with the same name and module (so Hypothesis derives the same seed from it
    under derandomized settings) whose rules, initialisers and invariants step the whole group."""
    from hypothesis.stateful import _SetupState  # the per-class rule table Hypothesis reads

    def fan(function: Callable[..., Any], is_rule: bool) -> Callable[..., Any]:
        @functools.wraps(function)
        def stepped(self: Any, **data: Any) -> Any:
            group.step(self, lambda machine: function(machine, **data), is_rule)
        return stepped

    def init(self: Any) -> None:
        base.__init__(self)
        self.d.disabled = _Everything()
        group.start()

    def teardown(self: Any) -> None:
        group.finish(self)

    cls = machine_class(base, context)
    cls.__init__ = init  # type: ignore[method-assign]
    cls.teardown = teardown  # type: ignore[method-assign]
    state = base.setup_state()
    cls._setup_state_per_class[cls] = _SetupState(
        rules=[attrs_replace(r, fan(r.function, True)) for r in state.rules],
        invariants=[type(i)(fan(i.function, False), i.preconditions, i.check_during_init)
                    for i in state.invariants],
        initializers=[attrs_replace(r, fan(r.function, False)) for r in state.initializers])
    return cls


def attrs_replace(rule: Any, function: Callable[..., Any]) -> Any:
    """A copy of a Hypothesis Rule with another function."""
    return type(rule)(targets=rule.targets, function=function, arguments=rule.arguments,
                      preconditions=rule.preconditions)


def run_lockstep(base: type[ConformanceMachine], members: list[Member], claimed: ModelOptions,
                 hyp_settings: settings, max_reruns: int = MAX_RERUNS, seed_value: int | None = None,
                 cap_real_time: bool = True, shrink_seconds: float | None = None) -> list[MachineResult]:
    """Explore one machine on every member at once (see the module docstring); one MachineResult per
    member, in order, as run_machine gives for that member alone. The members share one capability
    set and clock (:func:`partition`)."""
    stable_imports()
    started = time.perf_counter()
    for member in members:
        member.result = MachineResult(base.area)
    if not members:
        return []
    probe = members[0].adapter
    capabilities = frozenset(probe.capabilities)
    real_time = bool(getattr(probe, "real_time", False))
    if any(frozenset(m.adapter.capabilities) != capabilities for m in members):
        raise ValueError("a lockstep group needs one capability set (see lockstep.partition)")
    held_to = contract_changes(claimed, capabilities)  # what the contract asks of these adapters
    claimed = model_for(claimed, capabilities)
    why = not_run(base, frozenset(claimed.features) | EXTRA_CAPABILITIES, capabilities)
    if why is not None:
        for member in members:
            member.result.needs = why
        return [m.result for m in members]
    if cap_real_time and base.REAL_TIME_SHARE > 1 and real_time:
        hyp_settings = settings(hyp_settings,
                                max_examples=max(1, hyp_settings.max_examples // base.REAL_TIME_SHARE))
    quiet = settings(hyp_settings, verbosity=Verbosity.quiet, database=None)
    for member in members:
        member.context = RunContext(_constant(member.adapter), claimed, member.history)
        member.context.checked = member.result.checked
    group = _Group(base, members, max_reruns + 1, started)
    leader_adapter = _LeaderAdapter(claimed, capabilities, real_time)
    cls = _leader_class(base, RunContext(_constant(leader_adapter), claimed), group)
    if seed_value is not None:
        cls = seed(seed_value)(cls)
    explored = time.perf_counter()
    try:
        run_state_machine_as_test(cls, settings=quiet)
    except BaseException as exc:  # the leader is the model: no release's answer
        reason = f"the lockstep exploration stopped: {type(exc).__name__}: {first_line(exc)}"
        for member in members:
            if member.live and member.result.unknown is None:
                member.result.unknown = reason
        if isinstance(exc, KeyboardInterrupt):
            raise
    finally:
        group.pool.shutdown(wait=True)
    explored = time.perf_counter() - explored
    for member in members:
        assert member.context is not None
        member.result.examples = member.context.examples
        if member.history is not None:
            member.result.steps = member.history.index
            member.history.close()
    budget = BUDGET_S + (shrink_seconds if shrink_seconds is not None else
                         REAL_TIME_SHRINK_S if real_time else 60.0)
    _shrink_once(base.area, members, claimed, budget, held_to)
    for member in members:
        member.result.seconds = explored + member.result.seconds
    return [m.result for m in members]


def _shrink_once(area: str, members: list[Member], claimed: ModelOptions, budget_s: float,
                 held_to: dict[str, Any]) -> None:
    """Each distinct check shrunk once, on the first member that found it; replayed on the others
    that found it (their own steps shrunk where the replay holds). A member's shrink and replay time
    is added to its result's seconds."""
    shrunk: dict[str, list[Step]] = {}
    for member in members:
        try:
            _shrink_member(area, member, claimed, budget_s, shrunk, held_to)
        except Exception as exc:  # this release's replay failed: no verdict for it, the others go on
            member.result.unknown = (f"shrinking a finding: the adapter raised {type(exc).__name__}: "
                                     f"{first_line(exc)}")


def _shrink_member(area: str, member: Member, claimed: ModelOptions, budget_s: float,
                   shrunk: dict[str, list[Step]], held_to: dict[str, Any]) -> None:
    """_shrink_once for one member (`shrunk`: check -> the counterexample found first)."""
    factory = _constant(member.adapter)
    for violation, steps, seconds in member.raw:
        t0 = time.perf_counter()
        found = None
        theirs = shrunk.get(violation.check)
        if theirs is not None:
            replayed = shrink(theirs, claimed, factory, 0.0)  # one replay, no deletions
            if replayed.what is not None:
                found = replayed
        if found is None:
            found = shrink(steps, claimed, factory, budget_s)
            if found.what is not None:
                shrunk.setdefault(violation.check, found.steps)
        member.result.findings.append(finding_of(area, violation, found, seconds, claimed, factory,
                                                 options=held_to))
        member.result.seconds += time.perf_counter() - t0


def _constant(adapter: Adapter) -> Callable[[], Adapter]:
    return lambda: adapter
