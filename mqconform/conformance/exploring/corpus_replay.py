"""A distilled corpus (mqconform.conformance.exploring.corpus) replayed on a release, without Hypothesis.

Each example is replayed as a counterexample is (:mod:`mqconform.conformance.exploring.replay`, minimize): its
steps annotated with what the claimed model expects after each of them (results, counters, pending
order) and run through the scenario runner on the release's adapter. A scenario compares more than
the machine's checks did, so an example is first replayed on the explored release itself
(:func:`baseline`): where it already differs there, that is kept with it, and a replay elsewhere
that differs at the same step in the same way holds (it can show nothing after that step).

A replay that differs otherwise is a finding of the release: its check is the example's check
that compared what differs (an example's: the check of that field, else the first check at or after
the step; a counterexample's: its own check, unless the replay differs in another field than its
check compared, as a release that shows one bug earlier does: then the check the exploration made
on that operation and field in the most alike example of the corpus, see :func:`attribute`), its
rules that check's, its steps shrunk on that release (minimize.shrink) and judged flaky as the
runner judges one (runner.finding_of: replayed again when its minimised replay does not fail). One
finding per check, as a run disables a check after its finding. The release's checked checks are
those a replay compared: every check of an example that held, and of one that differs the checks
made before the step that differs and the check it is attributed to (the later ones were never
compared there). Examples that held on the explored release are replayed before its
counterexamples, so that the finding cap leaves their evidence in. Examples that got no answer
(``unknown``, tried twice) leave theirs out, and when that leaves out a check the exploration
reached, the area is unknown.

A release with fewer capabilities than the explored one (an older Artemis without scheduling or page
limits) replays the examples the model of its own capabilities can express; the others check
nothing there, so a check that only they reached is not checked on that release (its rules n/a,
never a pass), as an exploration of that release could not reach it either. An example the release
refuses as unsupported (``invalid``: an address setting its management cannot set, say) is one it
cannot express either: n/a, not unknown, since the release answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import attrs

from mqconform.adapters.contract import EXTRA_CAPABILITIES, Adapter, contract_changes, model_for
from mqconform.reference_model.options import ModelOptions

from .corpus import Example
from .driver import Step, Violation
from .runner import MachineResult, finding_of, not_run

#: attempts per example while its replay gets no answer (scenario.run_until_judged)
ATTEMPTS = 2


@attrs.frozen
class Replayed:
    """One example's replay: its verdict (pass, fail, unknown; invalid: the release refused one of
    its operations as unsupported; inexpressible: the model of the release's capabilities rejects
    it, as on an older release without a capability the explored one has) and, for a fail, where and
    what differs."""

    verdict: str
    steps_run: int = 0
    step: int = 0
    what: str = ""
    message: str = ""
    expected: Any = None
    actual: Any = None


def replay_example(example: Example, claimed: ModelOptions, adapter: Adapter, namespace: str) -> Replayed:
    """Replay `example` on `adapter` against the model of `claimed` (see the module docstring)."""
    from mqconform.scenario import ModelRejected, annotate, from_data
    from mqconform.scenario.runner import run_until_judged

    try:
        annotated = annotate(list(example.steps), claimed)
        scenario = from_data({"profile": claimed.name, "steps": annotated}, "corpus")
    except (ModelRejected, ValueError) as exc:
        return Replayed("inexpressible", message=str(exc))
    outcome = run_until_judged(scenario, adapter, attempts=ATTEMPTS, namespace=namespace)
    if outcome.verdict in ("pass", "not_applicable", "unknown", "invalid"):
        # an operation the release refused as unsupported: the replay evidences nothing (invalid)
        verdict = "invalid" if outcome.verdict == "not_applicable" else outcome.verdict
        return Replayed(verdict, outcome.steps_run, message=outcome.message)
    mismatch = outcome.mismatch
    what = str(getattr(mismatch, "what", "") or "result")
    step = int(outcome.step) if outcome.step is not None else outcome.steps_run
    return Replayed("fail", outcome.steps_run, step, what, outcome.message,
                    getattr(mismatch, "expected", None), getattr(mismatch, "actual", None))


def baseline(examples: Sequence[Example], claimed: ModelOptions, adapter: Adapter,
             area: str) -> list[Example]:
    """`examples` as replayed on the explored release: each with where its replay differed there
    (None where it held); the counterexamples are kept as they are, and examples whose replay the
    model rejects or that got no answer are left out."""
    claimed = model_for(claimed, frozenset(adapter.capabilities))
    kept = []
    for n, example in enumerate(examples, start=1):
        if example.failing:
            kept.append(example)
            continue
        got = replay_example(example, claimed, adapter, f"mqc-corpus-{area}-{n}")
        if got.verdict == "pass":
            kept.append(example)
        elif got.verdict == "fail":
            kept.append(attrs.evolve(example, baseline=(got.step, got.what)))
    return kept


def compared_field(what: str) -> str:
    """The field a replay's difference `what` names (``queue q message_count`` -> ``message_count``);
    "" for an operation's result."""
    return "" if what in ("", "result") else what.rsplit(" ", 1)[-1]


def attribute(example: Example, step: int, what: str, corpus: Sequence[Example] = (),
              declared: Collection[str] = ()) -> str | None:
    """The check of `example` that a replay differing at `step` in `what` speaks for (see the module
    docstring; `corpus`: the area's examples, for a counterexample's); None for an example that made
    no check. `declared`: the area's checks; a field no check of the example names or compared speaks
    for the area's ``counters.<field>`` (the per-step counter comparison, which the example's check log
    does not list), never for the check made at that step on something else (a send's result)."""
    field = compared_field(what)
    if example.failing:
        own = [f for _, name, f in example.checks if name == example.failing]
        if not own or own[0] == field:
            return example.failing
        return _made_alike(example, step, field, corpus) or example.failing
    later = [c for c in example.checks if c[0] >= step]
    if field:
        # a check named for the field (counters.<field>, <field>.order), else one comparing it
        named = [c for c in example.checks if c[1] == f"counters.{field}" or c[1].startswith(f"{field}.")]
        named = named or [c for c in example.checks if c[2] == field]
        if named:
            return min(named, key=lambda c: (c[0] < step, abs(c[0] - step)))[1]
        if f"counters.{field}" in declared:
            return f"counters.{field}"
    else:
        at = [c for c in later if c[0] == step and not c[2]]
        if at:
            return at[0][1]
    if later:
        return later[0][1]
    return example.checks[-1][1] if example.checks else None


def _made_alike(example: Example, step: int, field: str, corpus: Sequence[Example]) -> str | None:
    """The check the exploration made after the same operation as `example`'s `step`, comparing
    `field`, in the corpus example that shares the longest run of first steps with it (then the
    check made most often); None when no example made one there."""
    if not 1 <= step <= len(example.steps):
        return None
    op = next(iter(example.steps[step - 1]), None)
    score: dict[str, tuple[int, int]] = {}
    for other in corpus:
        if other.failing:
            continue
        shared = 0
        for mine, theirs in zip(example.steps, other.steps, strict=False):
            if mine != theirs:
                break
            shared += 1
        for at, name, compared in other.checks:
            made_on = next(iter(other.steps[at - 1]), None) if 1 <= at <= len(other.steps) else None
            if compared == field and made_on == op:
                best, count = score.get(name, (0, 0))
                score[name] = (max(best, shared), count + 1)
    return max(sorted(score), key=lambda name: score[name]) if score else None


def _diverges(example: Example, got: Replayed) -> bool:
    """Does a failed replay show a difference the explored release did not show?"""
    if got.verdict != "fail":
        return False
    if example.failing or example.baseline is None:
        return True
    step, what = example.baseline
    return got.step < step or (got.step == step and got.what != what)


def finding_rules(example: Example, check: str, table: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The rules a replay's finding under `check` names: the counterexample's own when the replay
    differs through the check its exploration failed, else the area's rules of `check` (a difference
    attributed to another check speaks for that check's rules, as its registry entries do)."""
    return example.rules if example.failing and check == example.failing else table.get(check, ())


def replay_area(area: str, examples: Sequence[Example], adapter_factory: Callable[[], Adapter],
                claimed: ModelOptions, *, reached: frozenset[str] = frozenset(), explored: str = "",
                max_findings: int | None = None) -> MachineResult:
    """The area's MachineResult on one release from replaying `examples` (see the module
    docstring). `reached`: the checks the exploration reached; `explored`: its release."""
    from ..judging.rules import rules_for
    from .registry import MACHINES

    started = time.perf_counter()
    result = MachineResult(area)
    probe = adapter_factory()
    caps = frozenset(probe.capabilities)
    held_to = contract_changes(claimed, caps)
    claimed = model_for(claimed, caps)
    why = not_run(MACHINES[area], frozenset(claimed.features) | EXTRA_CAPABILITIES, caps)
    if why is not None:
        result.needs = why
        return result
    table = rules_for(area)
    if reached and not examples:
        result.unknown = f"the exploration on {explored or 'its release'} left no example to replay"
        return result
    unanswered: set[str] = set()
    # the examples that held on the explored release first, so that a release whose counterexamples
    # reach the finding cap (max_findings) still has the checks they evidence compared
    order = sorted(enumerate(examples, start=1), key=lambda item: bool(item[1].failing))
    for n, example in order:
        if example.failing and any(f.check == example.failing for f in result.findings):
            continue
        t0 = time.perf_counter()
        got = replay_example(example, claimed, probe, f"mqc-replay-{area}-{n}")
        result.examples += 1
        result.steps += got.steps_run
        diverges = _diverges(example, got)
        result.replays.append({"example": n, "verdict": got.verdict, "step": got.step, "what": got.what,
                               "message": got.message[:400], "diverges": diverges})
        if got.verdict in ("inexpressible", "invalid"):  # evidences nothing: its checks stay n/a
            continue
        if got.verdict == "unknown":
            unanswered |= example.reached()
            continue
        if not diverges:
            result.checked |= example.covered()
            continue
        check = attribute(example, got.step, got.what, examples, declared=table)
        result.replays[-1]["check"] = check
        # what the replay evidenced: the checks made before the step that differs, and the check
        # that differs there; the example's later checks (a counterexample's own one among them when
        # another difference came first) were never compared on this release
        result.checked |= {name for at, name, _ in example.checks if at < got.step}
        if check is not None:
            result.checked.add(check)
        if check is None or any(f.check == check for f in result.findings):
            continue
        field = compared_field(got.what)
        rules = finding_rules(example, check, table)
        steps = [Step(op, args) for step in example.steps for op, args in step.items()]
        violation = Violation(check, tuple(rules), f"step {got.step}: {got.message}", field=field,
                              expected=got.expected, actual=got.actual)
        from .minimize import shrink

        shrunk = shrink(steps, claimed, adapter_factory)
        finding = finding_of(area, violation, shrunk, time.perf_counter() - t0, claimed, adapter_factory,
                             options=held_to)
        finding.message = f"replayed from {explored or 'the exploration'}: {finding.message}"
        result.findings.append(finding)
        if max_findings is not None and len(result.findings) >= max_findings:
            break
    result.replays.sort(key=lambda r: int(r["example"]))
    missing = (reached - result.checked) & unanswered
    if missing:
        result.unknown = (f"the replays reaching {', '.join(sorted(missing)[:3])}"
                          f"{' ...' if len(missing) > 3 else ''} got no answer")
    result.seconds = time.perf_counter() - started
    return result
