"""Rule coverage derived from the checks and the capability gates (mqconform.conformance.judging.coverage)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import Phase, settings

from mqconform.adapters.rabbitmq.adapter import CAPABILITIES as RABBIT
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.cli import main
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import merge_outcomes, run_machine
from mqconform.conformance.judging.coverage import CHECK_NEEDS, rule_coverage, run_capabilities
from mqconform.conformance.judging.rules import TABLES
from mqconform.conformance.judging.verdict import Coverage, coverage, covered_rules, judge
from mqconform.reference_model.profiles import profile
from mqconform.spec import load_catalogue


def _rules(name: str) -> list[str]:
    return [r.id for r in load_catalogue().for_profile(name)]


def test_every_gated_check_is_a_check_of_some_area() -> None:
    checks = {check for table in TABLES.values() for check in table}
    assert set(CHECK_NEEDS) <= checks
    assert CHECK_NEEDS["purge.result"] == ("purge",)  # collected from queue_machine's declaration


def test_a_rule_is_coverable_only_through_a_check_whose_gate_is_open() -> None:
    quorum, classic = profile("rabbitmq-quorum"), profile("rabbitmq-classic")
    q = rule_coverage(_rules("rabbitmq-quorum"), quorum, RABBIT["quorum"])
    c = rule_coverage(_rules("rabbitmq-classic"), classic, RABBIT["classic"])
    without = rule_coverage(_rules("rabbitmq-quorum"), quorum, RABBIT["quorum"] - {"delivery_count"})
    gained = {r for r in q if q[r].coverable and not without[r].coverable}
    assert gained and all("delivery_count" in without[r].reason() for r in gained)
    assert c["RING-14"].coverable and c["DELIVERY-1"].coverable
    # the seeds' components are not in a broker's profile; under artemis an adapter without one lacks it
    assert "THROTTLE-1" not in c
    artemis = rule_coverage(_rules("artemis"), profile("artemis"), RABBIT["classic"])
    assert not artemis["THROTTLE-1"].coverable and artemis["THROTTLE-1"].reason() == "needs throttle"
    # RING-1 is named only by queue.accepted, which can only fail: never evidence
    assert "RING-1" not in c or not c["RING-1"].coverable
    mosquitto = rule_coverage(["DELIVERY-1"], profile("mosquitto"), {"queues", "ring", "consumer_pull"})
    assert mosquitto["DELIVERY-1"].reason().startswith("needs counter:")
    assert "counter:pending_count" in mosquitto["DELIVERY-1"].reason()


README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_coverage_table() -> list[str]:
    """The Markdown table of README.md's "Rule coverage" paragraph (its header row onwards)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    section = next(i for i, line in enumerate(lines) if line.startswith("**Rule coverage.**"))
    first = next(i for i in range(section, len(lines)) if lines[i].startswith("| adapter | profile |"))
    last = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[first:last]


def test_the_readme_coverage_table_is_what_spec_coverage_prints(capsys) -> None:  # type: ignore[no-untyped-def]
    """README.md's rule coverage table is the one `mqconform spec --coverage` prints (regenerate it
    with that command when a check, a gate or a rule changes)."""
    assert main(["spec", "--coverage"]) == 0
    printed = capsys.readouterr().out.splitlines()
    from mqconform.commands.spec import BUILTIN_TARGETS

    assert printed[0].startswith("| adapter | profile | rules coverable")
    assert len(printed) == 2 + len(BUILTIN_TARGETS)
    assert _readme_coverage_table() == printed
    # and one adapter's last line gives the same figure as its row
    assert main(["spec", "--coverage", "--adapter", "rabbitmq"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    row = next(r for r in printed if r.startswith("| rabbitmq | rabbitmq-classic |"))
    assert last.endswith("rules coverable " + row.split(" | ")[2])


def test_bad_adapter_is_one_line() -> None:
    assert main(["spec", "--coverage", "--adapter", "nope"]) == 2


@pytest.mark.parametrize("area", ["delivery", "ring", "redelivery"])
def test_a_run_covers_no_rule_the_derivation_calls_uncoverable(area: str) -> None:
    """The derivation is an upper bound of what a run reaches: the reference model restricted to the
    rabbitmq classic adapter's capabilities covers only rules derived as coverable."""
    claimed = profile("rabbitmq-classic")

    def factory() -> ReferenceAdapter:
        adapter = ReferenceAdapter("rabbitmq-classic")
        adapter.capabilities = frozenset(RABBIT["classic"])
        return adapter

    hyp = settings(suite_settings.get("ci", max_examples=10), phases=[Phase.generate], database=None)
    result = run_machine(MACHINES[area], factory, claimed, hyp, max_reruns=0)
    assert result.unknown is None and not result.findings
    reached = {r for r, s in merge_outcomes([result], claimed.name).items() if s == "pass"}
    assert reached, "the run evidenced nothing"
    derived = rule_coverage(_rules(claimed.name), claimed, run_capabilities(claimed, RABBIT["classic"]))
    assert all(derived[r].coverable for r in reached if r in derived), reached
    # the run's figure and `mqconform spec --coverage`'s are counted by one function over the same
    # rules: the run covers at most what spec calls coverable
    ran = judge([result], claimed.name, None).coverage(claimed.name)
    spec = coverage((r for r in derived if derived[r].coverable), claimed.name)
    assert ran.total == spec.total == len(_rules(claimed.name)) and 0 < ran.covered <= spec.covered


def test_coverage_counts_only_rules_whose_checks_reached_a_verdict() -> None:
    outcomes = {"DELIVERY-1": "pass", "DELIVERY-2": "fail", "DELIVERY-3": "deviation",
                "DELIVERY-4": "unknown",
                "DELIVERY-5": "not_applicable"}
    assert covered_rules(outcomes) == {"DELIVERY-1", "DELIVERY-2", "DELIVERY-3"}
    assert str(Coverage(41, 46)) == "41 of 46 (89 %)" and str(Coverage(0, 0)) == "0 of 0"
    assert coverage(["DELIVERY-1", "THROTTLE-1"], "jetstream").covered == 1  # only the profile's rules


def test_an_interrupted_area_lowers_coverage_instead_of_raising_it() -> None:
    """An area stopped by an `info` answer or a fault marks its rules unknown: they are not covered."""
    claimed = profile("jetstream")
    hyp = settings(suite_settings.get("ci", max_examples=5), phases=[Phase.generate], database=None)
    result = run_machine(MACHINES["delivery"], lambda: ReferenceAdapter("jetstream"), claimed, hyp,
                         max_reruns=0)
    whole = judge([result], claimed.name, None, ["delivery", "ring"])
    broken = judge([attrs.evolve(result, unknown="receive: no answer within 2 s")], claimed.name, None,
                   ["delivery", "ring"])
    assert broken.counts()["unknown"] > whole.counts()["unknown"] > 0  # ring never ran: unknown in both
    assert broken.coverage(claimed.name).covered < whole.coverage(claimed.name).covered
    assert broken.coverage(claimed.name).total == whole.coverage(claimed.name).total



def test_readme_figures_are_what_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """README.md's figures block (rules per area, the deviation registry) is `mqconform spec --figures`."""
    from mqconform.cli import main

    assert main(["spec", "--figures"]) == 0
    printed = capsys.readouterr().out
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- figures: begin -->\n", 1)[1].split("<!-- figures: end -->", 1)[0]
    assert block == printed, "README figures are stale: paste `mqconform spec --figures` between the markers"


def test_areas_of_other_products_are_set_aside_and_named() -> None:
    """An adapter whose product has no throttle, fast failure or queue files (``absent_areas``) is
    not measured against them: its figure leaves their rules out and names the areas."""
    everything = coverage([], "artemis")
    aside = coverage([], "artemis", {"throttle": "another product's", "ordering": "not in the profile"})
    throttle = sum(1 for rule in load_catalogue().for_profile("artemis") if rule.area == "throttle")
    assert throttle > 0 and aside.total == everything.total - throttle
    assert aside.set_aside == {"throttle": "another product's"} and aside.set_aside_rules == throttle
    assert "set aside: throttle" in str(aside) and "set aside" not in str(everything)


def test_a_core_client_without_rings_reaches_its_cumulative_ack_in_the_redelivery_area() -> None:
    """DELIVERY-11: the cumulative ack is checked by the ring and redelivery machines (ack.cumulative);
    an adapter that offers it but no ring (HornetQ) reached it nowhere until the redelivery machine drew
    such a consumer too (a hornetq ci run covered 33 of the 34 rules spec called coverable)."""
    from mqconform.adapters.hornetq.adapter import CAPABILITIES as HORNETQ

    claimed = profile("hornetq-2.4")

    def factory() -> ReferenceAdapter:
        return ReferenceAdapter(options=claimed)

    assert "ring" not in HORNETQ and "cumulative_ack" in HORNETQ
    assert "ring" not in factory().capabilities and "cumulative_ack" in factory().capabilities
    hyp = settings(suite_settings.get("ci", max_examples=200), phases=[Phase.generate], database=None)
    result = run_machine(MACHINES["redelivery"], factory, claimed, hyp, max_reruns=0)
    assert result.unknown is None and not result.findings
    assert merge_outcomes([result], claimed.name)["DELIVERY-11"] == "pass"
