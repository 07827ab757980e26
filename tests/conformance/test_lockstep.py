"""Several releases explored in lockstep by one Hypothesis run (mqconform.conformance.exploring.lockstep), on
in-process adapters: a conforming member explores what it explores alone, a diverging one gets its
findings while the others go on, an `info` answer makes only its member unknown, and a check is
shrunk once and replayed on the other members that found it."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.commands.matrix import release_groups
from mqconform.conformance.exploring import lockstep
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.lockstep import Member, partition, run_lockstep
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import run_machine
from mqconform.history import RunDirectory
from mqconform.reference_model.profiles import ARTEMIS as _ARTEMIS
from mqconform.reference_model.profiles import JETSTREAM
from mqconform.releases import Release
from mqconform.selftest.mutants import MUTANTS

#: the seeds' profile without restarts (RESTART-6 is tested on its own): these tests pin the lockstep
#: exploration the delivery machine had before the model could restart
ARTEMIS = _ARTEMIS.evolve(features=_ARTEMIS.features - {"restart"})
MUTANT = next(m for m in MUTANTS if m.name == "priority-ignored")
DELIVERY = MACHINES["delivery"]


def _no_restart(adapter: Any) -> Any:
    """The mutant on the same capability set as the members above (no restart)."""
    adapter.capabilities = adapter.capabilities - {"restart"}
    return adapter


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
                                      Member("bad", _no_restart(MUTANT.adapter()))], ARTEMIS, _hyp(),
                           max_reruns=2)
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
    one, two = run_lockstep(DELIVERY, [Member("one", _no_restart(MUTANT.adapter())),
                                       Member("two", _no_restart(MUTANT.adapter()))],
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


def _records(path: Path) -> list[tuple[Any, ...]]:
    return [(r["example"], r["type"], r["f"], json.dumps(r.get("value"), sort_keys=True))
            for r in map(json.loads, path.read_text().splitlines())]


def test_a_member_records_the_history_it_records_alone(tmp_path: Path) -> None:
    """Every operation and answer, the final drains included."""
    area = "redelivery"
    hyp = suite_settings.get("dev", database=None, max_examples=25)
    model = ReferenceAdapter(options=JETSTREAM)
    alone = RunDirectory(tmp_path / "alone", "reference", "jetstream", {})
    run_machine(MACHINES[area], lambda: model, JETSTREAM, hyp, alone, seed_value=1)
    together = RunDirectory(tmp_path / "together", "reference", "jetstream", {})
    members = [Member("one", ReferenceAdapter(options=JETSTREAM), together.history(area)),
               Member("two", ReferenceAdapter(options=JETSTREAM))]
    run_lockstep(MACHINES[area], members, JETSTREAM, hyp, seed_value=1)
    one = _records(alone.path / "history" / f"{area}.jsonl")
    two = _records(together.path / "history" / f"{area}.jsonl")
    assert len(one) > 1000 and one == two


def test_an_example_ended_by_an_exception_is_torn_down_with_one_in_hand() -> None:
    """Hypothesis ends an example that runs out of data by raising in a draw; a machine's teardown
    then drains nothing (QueueMachine.teardown looks at sys.exc_info()), and a member's teardown,
    in its own thread, must see an exception in hand too."""
    seen: list[bool] = []

    class Machine:
        adapter = ReferenceAdapter(options=ARTEMIS)

        def teardown(self) -> None:
            seen.append(sys.exc_info()[0] is not None)

    member = Member("m", Machine.adapter, machine=Machine())
    group = lockstep._Group(DELIVERY, [member], 1, 0.0)
    try:
        raise ValueError("out of data")
    except ValueError:
        group.finish(object())
    member.machine = Machine()
    group.finish(object())
    assert seen == [True, False]
