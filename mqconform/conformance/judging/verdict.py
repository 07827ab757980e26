"""The one verdict of a run: which findings a registered deviation explains, each rule's outcome,
the exit code and the coverage figure. ``mqconform run``, ``mqconform matrix`` and the pytest plugin
all take it here, with the same registry (the shipped file plus any given), so one difference is
never a deviation in one and a failure in another.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mqconform.reference_model.bugs.model import BugModel
from mqconform.text import one_line

from ..exploring.runner import Finding, MachineResult, merge_outcomes
from .bug_replay import Replay, holds_under
from .deviations import DEFAULT_PATH, Deviation, Registry, load_registry

#: the outcomes that are a verdict on a rule: a check that names it ran to the end, or failed
VERDICT_STATES = ("pass", "fail", "deviation")


def _unexplained_label(finding: Finding) -> str:
    """The line label of a finding no registered deviation explains."""
    return "NOT SHOWN" if finding.unshown else "FLAKY" if finding.flaky else "FAIL"


def load_deviations(extra: Iterable[Path | str] | None = None) -> Registry:
    """The shipped registry plus `extra` files (DeviationError with file:line)."""
    return load_registry([DEFAULT_PATH, *(Path(p) for p in extra or ())])


@attrs.frozen
class Judge:
    """Explains findings of one adapter at one server version, checked against one profile.

    An entry with a bug model explains a finding only by a replay of its counterexample on the
    implementation (`adapter_factory`, while it answers) against the model with that bug; without a
    factory no such entry explains anything. Each finding is decided once (the answer is kept, so the
    verdict taken after the adapter stopped is the one its area's lines printed)."""

    registry: Registry
    adapter: str
    server_version: str
    profile: str
    claimed: str
    strict: bool = False
    #: the implementation the run checked (a bug model's replay runs on it); None: no replay
    adapter_factory: Callable[[], Any] | None = attrs.field(default=None, eq=False)
    #: id(finding) -> (the finding, the deviation that explains it or None)
    _decided: dict[int, tuple[Any, Deviation | None]] = attrs.field(factory=dict, init=False, eq=False,
                                                                    repr=False)
    #: id(finding) -> (an unexplained finding, why each bug model's replay made for it did not hold)
    _unheld: dict[int, tuple[Any, list[str]]] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def label(self, finding: Finding) -> str:
        """``DEVIATION``, ``FLAKY`` or ``FAIL``, for the finding's line (as Verdict.label)."""
        return "DEVIATION" if self.deviation(finding) is not None else _unexplained_label(finding)

    def deviation(self, finding: Finding) -> Deviation | None:
        """The registered deviation that explains `finding`, else None (always None when strict)."""
        if self.strict:
            return None
        kept = self._decided.get(id(finding))
        if kept is not None and kept[0] is finding:
            return kept[1]
        unheld: list[str] = []
        found = self.registry.find(finding, self.adapter, self.server_version, self.profile, self.claimed,
                                   self.replay(unheld))
        self._decided[id(finding)] = (finding, found)
        if found is None and unheld:
            self._unheld[id(finding)] = (finding, unheld)
        return found

    def second_look(self, findings: Iterable[Finding]) -> list[str]:
        """Decide once more each of `findings` that a bug model's replay left unexplained, now that the
        areas are over (the first replay ran beside the other areas' brokers, and a replay's timing
        on a loaded machine is not the broker's answer). A finding the second replay explains is a
        deviation from here on (the verdict is taken after this); each such finding, and each still
        unexplained, gets a line saying why (the replay's first difference)."""
        lines: list[str] = []
        for finding in findings:
            kept = self._unheld.pop(id(finding), None)
            if kept is None or kept[0] is not finding or finding.unshown:
                continue  # not shown: the implementation followed the specification, nothing to explain
            del self._decided[id(finding)]
            found = self.deviation(finding)
            where = getattr(finding, "scenario_path", None) or finding.check
            if found is not None:
                lines.append(f"  DEVIATION {where}: replayed again after the areas, the bug model "
                             f"{found.model} held (during them: {kept[1][0]})")
            else:
                again = self._unheld.get(id(finding), (None, kept[1]))[1]
                lines.append(f"  FAIL {where}: no registered bug model held on replay ({again[0]})")
        return lines

    def bug_model(self, finding: Finding) -> BugModel | None:
        """The model of the registered bug that explains `finding` (an entry with ``model:``), else
        None: what the area explores on against after it (runner.run_machine's `explain`)."""
        found = self.deviation(finding)
        if found is None or not found.model:
            return None
        from mqconform.reference_model.bugs import bug_model

        return bug_model(found.model)

    def replay(self, unheld: list[str] | None = None) -> Replay | None:
        """The bug models' replay on this judge's implementation (None without one); `unheld` gets a
        line per replay made that did not hold (the bug model's name and the replay's verdict line)."""
        factory = self.adapter_factory
        if factory is None:
            return None
        from mqconform.adapters.contract import model_for
        from mqconform.reference_model.profiles import profile as load_profile

        def replay(steps: Sequence[Mapping[str, Any]], model: str | Sequence[str],
                   options: Mapping[str, Any] | None = None) -> bool:
            """False also when the implementation cannot be reached for the replay: a finding no
            replay decided stays a failure, never a pass."""
            try:
                claimed = model_for(load_profile(self.profile), frozenset(factory().capabilities))
                why: list[str] = []
                held = holds_under(steps, model, claimed, factory, options, why)
                if unheld is not None:
                    named = model if isinstance(model, str) else " with ".join(model)
                    unheld.extend(f"{named}: {line}" for line in why)
                return held
            except Exception as exc:  # an adapter that cannot start or answer: not explained
                print(f"mqconform: the replay under bug model {model} could not run on {self.adapter}: "
                      f"{one_line(exc)} (the finding stays unexplained)", file=sys.stderr)
                return False

        return replay


@attrs.frozen
class Coverage:
    """Rules of the profile with a verdict (pass, fail or deviation), of the rules of the profile an
    implementation can evidence: the rules of areas its product does not have at all (an adapter's
    ``absent_areas``: e.g. the WebSphere MDB throttle on an Artemis broker) are set aside, and said so."""

    covered: int
    total: int
    #: area -> why the implementation's product has nothing there, for the areas set aside
    set_aside: dict[str, str] = attrs.field(factory=dict)
    set_aside_rules: int = 0

    def __str__(self) -> str:
        percent = f" ({100 * self.covered // self.total} %)" if self.total else ""
        if not self.set_aside_rules:
            return f"{self.covered} of {self.total}{percent}"
        return (f"{self.covered} of {self.total}{percent}; {self.set_aside_rules} rule(s) set aside: "
                f"{', '.join(self.set_aside)} (absent from the implementation's product)")


def profile_rules(profile: str, without_areas: Iterable[str] = ()) -> set[str]:
    """The ids of the catalogue's rules that apply to `profile` (the coverage denominator), without
    those of `without_areas`."""
    from mqconform.spec import load_catalogue

    skip = set(without_areas)
    return {rule.id for rule in load_catalogue().for_profile(profile) if rule.area not in skip}


def absent_areas(adapter: object) -> dict[str, str]:
    """An adapter's ``absent_areas`` (area -> why its product has nothing there); {} without one."""
    value = getattr(adapter, "absent_areas", None) or {}
    return {str(area): str(why) for area, why in dict(value).items()}


def coverage(covered: Iterable[str], profile: str, set_aside: Mapping[str, str] | None = None) -> Coverage:
    """How many of the rules that apply to `profile` are among `covered` (`mqconform run`: the rules
    with a verdict; `mqconform spec --coverage`: the rules a run can reach), the rules of the
    `set_aside` areas left out of both."""
    from mqconform.spec import load_catalogue

    aside = dict(set_aside or {})
    rules = load_catalogue().for_profile(profile)
    applicable = {rule.id for rule in rules if rule.area not in aside}
    dropped_areas = {rule.area for rule in rules if rule.area in aside}
    return Coverage(len(set(covered) & applicable), len(applicable),
                    {a: w for a, w in aside.items() if a in dropped_areas}, len(rules) - len(applicable))


def covered_rules(outcomes: dict[str, str]) -> set[str]:
    """The rules whose checks reached a verdict: not unknown, not not-applicable."""
    return {rule for rule, state in outcomes.items() if state in VERDICT_STATES}


@attrs.frozen
class Verdict:
    """What a run's machine results come to."""

    #: rule -> pass | fail | deviation | unknown | not_applicable
    outcomes: dict[str, str]
    #: per finding (by identity), the deviation that explains it
    explained: dict[int, Deviation]
    #: rule -> the deviation of a finding naming it, for each rule whose outcome is deviation
    by_rule: dict[str, Deviation]
    #: rule -> why it is unknown (its area stopped, or never ran)
    unknown_why: dict[str, str] = attrs.field(factory=dict)

    def deviation_of(self, finding: Finding) -> Deviation | None:
        return self.explained.get(id(finding))

    def label(self, finding: Finding) -> str:
        """``DEVIATION``, ``FLAKY`` or ``FAIL``, for the finding's line."""
        return "DEVIATION" if id(finding) in self.explained else _unexplained_label(finding)

    def counts(self) -> dict[str, int]:
        states = ("pass", "fail", "deviation", "unknown", "not_applicable")
        return {s: sum(1 for v in self.outcomes.values() if v == s) for s in states}

    def coverage(self, profile: str, set_aside: Mapping[str, str] | None = None) -> Coverage:
        return coverage(covered_rules(self.outcomes), profile, set_aside)

    def exit_code(self, aborted: bool = False) -> int:
        """0 every applicable rule holds, 1 a rule fails, 3 a rule is unknown or the run stopped."""
        counts = self.counts()
        if counts["fail"]:
            return 1
        return 3 if counts["unknown"] or aborted else 0


def judge(results: Sequence[MachineResult], profile: str, judge_: Judge | None,
          areas: Sequence[str] = ()) -> Verdict:
    """The verdict on `results` checked against `profile`: each finding a deviation of `judge_`
    explains (none without it) gives its rules ``deviation``; every other finding fails them. A
    machine stopped by an `info` answer or a fault proves nothing, nor does an area of `areas` with no
    result (the run stopped before it): their rules that are not fail or deviation are unknown."""
    explained: dict[int, Deviation] = {}
    if judge_ is not None:
        for result in results:
            for finding in result.findings:
                deviation = judge_.deviation(finding)
                if deviation is not None:
                    explained[id(finding)] = deviation
    outcomes = merge_outcomes(results, profile, excused=lambda f: id(f) in explained)
    by_rule: dict[str, Deviation] = {}
    for result in results:
        for finding in result.findings:
            deviation = explained.get(id(finding))
            if deviation is None:
                continue
            for rule in finding.rules:
                if outcomes.get(rule) == "deviation":
                    by_rule.setdefault(rule, deviation)
    ran = {r.machine for r in results}
    unknown_why = _mark_interrupted(outcomes, results, [a for a in areas if a not in ran])
    applicable = profile_rules(profile)
    for result in results:
        for finding in result.findings:
            if finding.flaky and id(finding) not in explained:
                for rule in finding.rules:
                    if rule in applicable and outcomes.get(rule) in ("pass", "not_applicable"):
                        outcomes[rule] = "unknown"
                        unknown_why.setdefault(rule, finding.message)
    return Verdict(outcomes, explained, by_rule, unknown_why)


def _mark_interrupted(outcomes: dict[str, str], results: Sequence[MachineResult],
                      not_run: list[str]) -> dict[str, str]:
    """A machine stopped by an `info` answer or a fault proves nothing: none of its rules passes
    (nor is "not applicable" for want of a step that never ran). Rules of areas never run are
    unknown too. Returns rule -> why it is unknown."""
    from .rules import rules_for

    why: dict[str, str] = {}
    stopped = [(r.machine, f"not established: the run of area {r.machine} stopped: {r.unknown}")
               for r in results if r.unknown]
    stopped += [(area, "not established: area not run (the run stopped earlier)") for area in not_run]
    for machine, reason in stopped:
        for rules in rules_for(machine).values():
            for rule in rules:
                if outcomes.get(rule) not in ("fail", "deviation"):
                    outcomes[rule] = "unknown"
                    why.setdefault(rule, reason)
    return why
