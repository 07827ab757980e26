"""Releases compared by replay (mqconform.conformance.exploring.corpus, corpus_replay) on in-process adapters:
an exploration's corpus covers every check it reached, the distilled set keeps that coverage with at
most K examples a check, a "release" with a seeded difference (the model under another option) is
caught by replaying the corpus and its finding is shrunk there, and a conforming one gets the
exploration's own outcomes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import attrs

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import corpus
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.corpus_replay import attribute, baseline, finding_rules, replay_area
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import RECORDER, MachineResult, run_machine
from mqconform.conformance.judging.rules import rules_for
from mqconform.reference_model.profiles import ARTEMIS as _ARTEMIS
from mqconform.selftest.mutants import MUTANTS

ARTEMIS = _ARTEMIS.evolve(features=_ARTEMIS.features - {"restart"})
#: "another release": plain FIFO where the profile has priorities (a model option, not a code change)
MUTANT = next(m for m in MUTANTS if m.name == "priority-ignored")


def _explore(area: str, examples: int = 20) -> tuple[MachineResult, corpus.Recorder]:
    recorder = corpus.Recorder()
    model = ReferenceAdapter(options=ARTEMIS)
    token = RECORDER.set(recorder)
    try:
        result = run_machine(MACHINES[area], lambda: model, ARTEMIS,
                             suite_settings.get("ci", database=None, max_examples=examples), seed_value=3)
    finally:
        RECORDER.reset(token)
    return result, recorder


def _no_restart(adapter: Any) -> Any:
    adapter.capabilities = adapter.capabilities - {"restart"}
    return adapter


def test_the_corpus_covers_every_check_the_exploration_reached_and_distils_to_k_each(tmp_path: Path) -> None:
    result, recorder = _explore("delivery")
    assert not result.findings and result.checked
    assert recorder.examples and recorder.dropped == 0
    assert set().union(*(ex.reached() for ex in recorder.examples)) == result.checked
    distilled = corpus.distil(recorder.examples, k=2)
    assert len(distilled) < len(recorder.examples)
    assert set().union(*(ex.reached() for ex in distilled)) == result.checked
    count = Counter(check for ex in distilled for check in ex.reached())
    available = Counter(check for ex in recorder.examples for check in ex.reached())
    assert all(count[check] >= min(2, available[check]) for check in result.checked)
    # written and read back as it was
    corpus.write(tmp_path / "delivery.jsonl", distilled)
    assert corpus.read(tmp_path / "delivery.jsonl") == distilled
    # on the explored "release" itself every distilled example holds
    assert baseline(distilled, ARTEMIS, ReferenceAdapter(options=ARTEMIS), "delivery") == distilled


def test_a_release_with_a_seeded_difference_is_caught_by_replay_and_shrunk_there() -> None:
    result, recorder = _explore("delivery")
    distilled = corpus.distil(recorder.examples, k=3)
    longest = max(len(ex.steps) for ex in distilled)
    mutant = _no_restart(MUTANT.adapter())
    replayed = replay_area("delivery", distilled, lambda: mutant, ARTEMIS, reached=frozenset(result.checked),
                           explored="model")
    assert replayed.findings and replayed.unknown is None
    finding = replayed.findings[0]
    assert finding.check in rules_for("delivery") and finding.rules == rules_for("delivery")[finding.check]
    assert "replayed from model" in finding.message
    assert not finding.flaky and finding.shown is not None  # its minimised replay fails on the mutant
    assert len(finding.steps) <= longest
    assert len({f.check for f in replayed.findings}) == len(replayed.findings)  # one finding a check
    # the shrunk counterexample replayed on a conforming release holds, on the mutant it fails again
    again = corpus.counterexamples(replayed.findings)
    assert not replay_area("delivery", again, lambda: ReferenceAdapter(options=ARTEMIS), ARTEMIS).findings
    assert replay_area("delivery", again, lambda: _no_restart(MUTANT.adapter()), ARTEMIS).findings


def test_a_conforming_release_gets_the_explorations_outcomes() -> None:
    result, recorder = _explore("delivery")
    distilled = corpus.distil(recorder.examples)
    replayed = replay_area("delivery", distilled, lambda: ReferenceAdapter(options=ARTEMIS), ARTEMIS,
                           reached=frozenset(result.checked))
    assert not replayed.findings and replayed.unknown is None
    assert replayed.checked == result.checked
    table = rules_for("delivery")
    assert replayed.rule_outcomes(table) == result.rule_outcomes(table)


def test_a_divergence_speaks_for_the_check_of_what_differs() -> None:
    checks = ((1, "send.result", ""), (2, "counters.pending_count", "pending_count"),
              (3, "pending.order", ""))
    example = corpus.Example(({"send": {}},) * 4, checks=checks)
    assert attribute(example, 2, "queue q pending_count") == "counters.pending_count"
    assert attribute(example, 3, "result") == "pending.order"
    assert attribute(example, 4, "result") == "pending.order"  # past the last check: the last one
    # a count no check of the example compared speaks for the area's counter check, not for the
    # result check made at that step (a replay on Artemis 2.35.0: a send whose message expired at once)
    sent = corpus.Example(({"send": {}},) * 2, checks=((2, "send.result", ""),))
    assert attribute(sent, 2, "queue q message_count") == "send.result"
    declared = ("send.result", "counters.message_count")
    assert attribute(sent, 2, "queue q message_count", declared=declared) == "counters.message_count"
    assert attribute(sent, 2, "result", declared=declared) == "send.result"
    failing = corpus.Example(({"send": {}},), failing="pending.order", rules=("DELIVERY-3",))
    assert attribute(failing, 1, "result") == "pending.order"
    # a counterexample whose replay differs in another field than its check compared (a release that
    # shows one bug earlier): the check the exploration made there on the most alike example
    drop = {"address": {"name": "a", "full_policy": "DROP", "max_size_messages": 2}}
    page = {"address": {"name": "a", "full_policy": "PAGE", "max_size_messages": 2}}
    batch = {"send_batch": {"to": "a", "ids": ["m2", "m3"]}}
    counted = corpus.Example((drop, {"queue": {"name": "q"}}, batch),
                             ((3, "counters.message_count", "message_count"),),
                             failing="counters.message_count", rules=("PAGING-2",))
    alike = [corpus.Example((page, {"queue": {"name": "q"}}, batch), ((3, "send.page_full", ""),)),
             corpus.Example((page, {"queue": {"name": "q2"}}, batch), ((3, "send.page_full", ""),)),
             corpus.Example((drop, {"queue": {"name": "q"}}, {"send": {}}, batch),
                            ((3, "send.result", ""), (4, "send.dropped", "")))]
    assert attribute(counted, 3, "result", alike) == "send.dropped"
    assert attribute(counted, 3, "queue q message_count", alike) == "counters.message_count"
    assert attribute(counted, 3, "result") == "counters.message_count"  # nothing made it: its own
    # and its finding names the rules of the check it is attributed to (a registry entry of that
    # check names those), its own rules only through its own check
    table = {"send.dropped": ("PAGING-5",), "counters.message_count": ("PAGING-2", "PAGING-10")}
    assert finding_rules(counted, "send.dropped", table) == ("PAGING-5",)
    assert finding_rules(counted, "counters.message_count", table) == ("PAGING-2",)
    assert finding_rules(example, "counters.message_count", table) == ("PAGING-2", "PAGING-10")
    # a replay differing where the explored release differed in the same way holds
    held = corpus.Example(example.steps, example.checks, baseline=(3, "result"))
    assert held.covered() == {"send.result", "counters.pending_count"}


def test_a_release_showing_a_capability_the_explored_one_lacks_explores_instead_of_replaying(
        monkeypatch: Any) -> None:
    """An adapter without capabilities_for puts every release in one group; a release whose server
    shows a capability the explored one's lacks explores the area itself (the corpus cannot reach
    it), one showing the same or fewer replays."""
    from mqconform.conformance import campaign
    from mqconform.conformance.plan import RunPlan
    from mqconform.releases import Release

    release_adapter = ReferenceAdapter(options=ARTEMIS)
    monkeypatch.setattr(campaign, "_open_release", lambda plan, release, area: (release_adapter, "1.0", None))
    explored: list[Any] = []

    def explore(task: Any) -> Any:
        explored.append(task)
        return "explored"

    monkeypatch.setattr(campaign, "run_task", explore)
    plan = RunPlan.build("reference", {}, profile=None, settings_name="dev", areas="delivery", max_examples=2,
                         max_findings=None, seed=1, shrink_seconds=None)
    release = Release("reference", "1.0", "none")
    shown = frozenset(release_adapter.capabilities)
    assert "scheduling" in shown
    task = campaign.ReplayTask(plan, release, "delivery", "run", "2.0", (), frozenset(), None,
                               shown - {"scheduling"})
    assert campaign.run_replay(task) == "explored"  # type: ignore[comparison-overlap]
    assert [(t.release, t.area, t.corpus_k) for t in explored] == [(release, "delivery", 0)]
    for explored_caps in (shown, shown | {"scheduling-extra"}):
        replayed = campaign.run_replay(attrs.evolve(task, capabilities=explored_caps))
        assert replayed.replayed_from == "2.0" and not explored[1:]


def test_a_release_with_fewer_capabilities_replays_what_it_can_express() -> None:
    """The explored release restarts, the replayed one cannot (an older Artemis without scheduling, say):
    the examples with a restart are inexpressible there and check nothing (their checks n/a, never
    unknown or a pass); the others are replayed and judged as on any release."""
    result, recorder = _explore("delivery", examples=40)
    explored = _ARTEMIS.evolve(features=_ARTEMIS.features)
    full = corpus.distil(recorder.examples)
    # a check only the examples with a restart reached (as DELIVERY's restart checks on Artemis)
    restart = [corpus.Example(({"restart": {}}, *e.steps), (*e.checks, (1, "restart.only", "")),
                              failing=e.failing, rules=e.rules) for e in full[:3]]
    older = lambda: _no_restart(ReferenceAdapter(options=explored))  # noqa: E731
    replayed = replay_area("delivery", [*full, *restart], older, explored,
                           reached=frozenset(result.checked) | {"restart.only"})
    assert not replayed.findings and replayed.unknown is None
    assert replayed.checked == result.checked


def test_a_release_that_refuses_an_operation_as_unsupported_leaves_its_checks_not_applicable() -> None:
    """An older release whose management cannot set a setting the examples use (Artemis before 2.32 and
    maxSizeMessages) answers Unsupported: those examples check nothing there (n/a), the area is not
    unknown and nothing passes that only they reached."""
    from mqconform.adapters.contract import Result

    result, recorder = _explore("delivery", examples=40)
    full = corpus.distil(recorder.examples)
    queues = [[s["queue"]["name"] for s in e.steps if "queue" in s] for e in full]
    refused = [corpus.Example((*e.steps, {"consumer": {"name": "refused", "queue": q[0]}}),
                              (*e.checks, (len(e.steps) + 1, "refused.only", "")), failing=e.failing,
                              rules=e.rules)
               for e, q in zip(full, queues, strict=True) if q and not e.failing][:3]
    assert refused

    class Older(ReferenceAdapter):
        def open_consumer(self, config: Any) -> Any:
            if config.name == "refused":
                return Result.fail("unsupported: a consumer this release cannot open")
            return super().open_consumer(config)

    replayed = replay_area("delivery", [*full, *refused], lambda: Older(options=ARTEMIS), ARTEMIS,
                           reached=frozenset(result.checked) | {"refused.only"})
    assert replayed.unknown is None and not replayed.findings
    assert "refused.only" not in replayed.checked and replayed.checked == result.checked
    # each example's verdict is kept, in corpus order (the matrix writes <area>.replays.jsonl)
    assert [r["example"] for r in replayed.replays] == list(range(1, len(full) + len(refused) + 1))
    assert [r["verdict"] for r in replayed.replays[len(full):]] == ["invalid"] * len(refused)


def test_a_release_checks_only_what_its_replays_compared() -> None:
    """On the mutant release with a cap of one finding, the counterexamples first in the corpus: the
    examples that held on the explored release are still replayed (before the counterexamples), and
    every check counted as checked was compared by some replay: in an example that held there, or in
    one that differs, before the step that differs or as the check that differs."""
    result, recorder = _explore("delivery")
    distilled = corpus.distil(recorder.examples, k=3)
    mutant = _no_restart(MUTANT.adapter())
    found = replay_area("delivery", distilled, lambda: mutant, ARTEMIS, reached=frozenset(result.checked))
    examples = [*corpus.counterexamples(found.findings), *distilled]
    capped = replay_area("delivery", examples, lambda: _no_restart(MUTANT.adapter()), ARTEMIS,
                         reached=frozenset(result.checked), max_findings=1)
    assert len(capped.findings) == 1
    by_number = dict(enumerate(examples, start=1))
    assert any(r["verdict"] == "pass" and not by_number[r["example"]].failing for r in capped.replays)
    evidenced: set[str] = set()
    for r in capped.replays:
        example = by_number[r["example"]]
        if r["verdict"] == "pass":
            evidenced |= example.reached()
        elif r["verdict"] == "fail":
            evidenced |= {name for at, name, _ in example.checks if at < r["step"]}
            evidenced |= {r["check"]} if r.get("check") else set()
    assert capped.checked and capped.checked <= evidenced
