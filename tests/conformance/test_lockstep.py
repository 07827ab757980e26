"""Several releases explored in lockstep by one Hypothesis run (mqconform.conformance.lockstep), on
in-process adapters: a conforming member explores what it explores alone, a diverging one gets its
findings while the others go on, an `info` answer makes only its member unknown, and a check is
shrunk once and replayed on the other members that found it."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.commands.matrix import release_groups
from mqconform.conformance import lockstep
from mqconform.conformance import settings as suite_settings
from mqconform.conformance.lockstep import Member, partition, run_lockstep
from mqconform.conformance.registry import MACHINES
from mqconform.conformance.runner import run_machine
from mqconform.reference_model.profiles import ARTEMIS
from mqconform.releases import Release
from mqconform.selftest.mutants import MUTANTS

MUTANT = next(m for m in MUTANTS if m.name == "priority-ignored")
DELIVERY = MACHINES["delivery"]


def _hyp(examples: int = 20) -> Any:
    return suite_settings.get("ci", database=None, max_examples=examples)


class InfoAdapter(ReferenceAdapter):
    """Answers `info` (no answer in time) from its 40th receive on."""

    def __init__(self) -> None:
        super().__init__(options=ARTEMIS)
        self.calls = itertools.count()

    def receive(self, consumer: str) -> Result:
        if next(self.calls) >= 40:
            return Result.info("receive: no answer within 2 s")
        return super().receive(consumer)


def test_a_conforming_member_explores_what_it_explores_alone_beside_one_that_diverges() -> None:
    model = ReferenceAdapter(options=ARTEMIS)
    alone = run_machine(DELIVERY, lambda: model, ARTEMIS, _hyp())
    ok, bad = run_lockstep(DELIVERY, [Member("ok", ReferenceAdapter(options=ARTEMIS)),
                                      Member("bad", MUTANT.adapter())], ARTEMIS, _hyp(), max_reruns=2)
    assert not alone.findings and not ok.findings and ok.unknown is None
    assert (ok.examples, ok.checked) == (alone.examples, alone.checked)
    # the diverging member: up to max_reruns + 1 findings, each replaying on it, then it stops
    assert 1 <= len(bad.findings) <= 3 and bad.unknown is None
    assert all(f.shown is not None and not f.flaky for f in bad.findings)
    assert len({f.check for f in bad.findings}) == len(bad.findings)
    assert bad.findings[0].check == "pending.order"


def test_an_info_answer_makes_only_its_member_unknown() -> None:
    ok, info = run_lockstep(DELIVERY, [Member("ok", ReferenceAdapter(options=ARTEMIS)),
                                       Member("info", InfoAdapter())], ARTEMIS, _hyp())
    assert info.unknown == "receive: receive: no answer within 2 s" and not info.findings
    assert ok.unknown is None and not ok.findings
    assert ok.examples > info.examples


def test_a_check_is_shrunk_once_and_replayed_on_the_other_members_that_found_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, float]] = []
    real = lockstep.shrink

    def counted(steps: Any, claimed: Any, factory: Any, budget_s: float) -> Any:
        calls.append((len(steps), budget_s))
        return real(steps, claimed, factory, budget_s)

    monkeypatch.setattr(lockstep, "shrink", counted)
    one, two = run_lockstep(DELIVERY, [Member("one", MUTANT.adapter()), Member("two", MUTANT.adapter())],
                            ARTEMIS, _hyp(), max_reruns=0)
    assert [f.check for f in one.findings] == [f.check for f in two.findings] == ["pending.order"]
    assert one.findings[0].steps == two.findings[0].steps  # the first member's counterexample
    assert [budget for _, budget in calls] == [lockstep.BUDGET_S + 60.0, 0.0]  # shrunk once, replayed once


def test_a_group_needs_one_capability_set() -> None:
    narrow = ReferenceAdapter(options=ARTEMIS)
    narrow.capabilities = narrow.capabilities - {"browse"}
    adapters = [ReferenceAdapter(options=ARTEMIS), narrow, ReferenceAdapter(options=ARTEMIS)]
    assert partition(adapters) == [[0, 2], [1]]
    with pytest.raises(ValueError, match="one capability set"):
        run_lockstep(DELIVERY, [Member(str(i), a) for i, a in enumerate(adapters)], ARTEMIS, _hyp(1))


def test_releases_are_grouped_by_capability_set_in_even_groups() -> None:
    versions = ["1.0", "1.1", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"]
    releases = [Release("x", v, "x") for v in versions]
    groups = release_groups(releases, 4, lambda v: v.split(".")[0])
    assert [[r.version for r in g] for g in groups] == [["1.0", "1.1"], ["2.0", "2.1", "2.2", "2.3"],
                                                        ["2.4", "2.5", "2.6"]]
    assert [len(g) for g in release_groups(releases, 1, None)] == [1] * 9
    assert [len(g) for g in release_groups(releases, 5, None)] == [5, 4]
