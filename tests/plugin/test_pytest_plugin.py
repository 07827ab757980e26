"""The pytest plugin (mqconform/pytest_plugin.py), run by pytest itself in a temporary project."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mqconform.conformance.exploring.registry import MACHINES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "spec" / "examples" / "cumulative-ack.yaml"
QUICK = ("--mqconform-settings", "ci", "--mqconform-max-examples", "5", "-p", "no:cacheprovider")


def _example_adapter(pytester: pytest.Pytester) -> None:
    shutil.copy(ROOT / "tests" / "example_adapter.py", pytester.path / "example_adapter.py")


def test_without_the_adapter_option_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_one():\n    assert True\n")
    shutil.copy(EXAMPLE, pytester.path / "ack.mqc.yaml")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "mqconform: adapter" not in result.stdout.str()  # no report header
    assert not (pytester.path / "mqconform-runs").exists()
    assert "--mqconform-adapter" in pytester.runpytest_subprocess("--help").stdout.str()


def test_reference_adapter_passes_in_an_empty_directory_under_xdist(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--mqconform-adapter", "reference", "-n", "2", *QUICK,
                                           "--junitxml", "junit.xml")
    # one item per area; the reference adapter (artemis) runs them all but JetStream's retention
    result.assert_outcomes(passed=len(MACHINES) - 1, skipped=1)
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    rules = {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}["rules"]
             for case in cases}
    assert set(rules) == set(MACHINES)
    assert "RING-1" in rules["ring"].split(",")


def test_example_adapter_passes_and_areas_it_cannot_run_are_skipped(pytester: pytest.Pytester) -> None:
    _example_adapter(pytester)
    result = pytester.runpytest_subprocess("--mqconform-adapter", "example_adapter:FifoAdapter", *QUICK,
                                           "-rs")
    result.assert_outcomes(passed=2, skipped=len(MACHINES) - 2)
    result.stdout.fnmatch_lines(["*n/a (needs: ring): applies but not covered (capability missing: ring)*"])


def test_a_broken_adapter_fails_with_the_counterexample_and_the_replay_command(
        pytester: pytest.Pytester) -> None:
    _example_adapter(pytester)
    result = pytester.runpytest_subprocess(
        "--mqconform-adapter", "example_adapter:FifoAdapter", "--mqconform-option", "lose_returns=true",
        "--mqconform-areas", "delivery,redelivery", "--mqconform-settings", "ci", "--mqconform-seed", "3",
        "--mqconform-max-examples", "40", "--mqconform-max-findings", "1", "-p", "no:cacheprovider",
        "-n", "2")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1 and result.ret == 1
    text = result.stdout.str()
    result.stdout.fnmatch_lines(["*FAIL counters.* steps: *", "*counterexample (*.yaml):*",
                                 "*profile: rabbitmq-classic*", "*steps:*",
                                 "*replay: mqconform scenario *.yaml --adapter example_adapter:FifoAdapter "
                                 "-o lose_returns=true*"])
    assert "seed 3" in text
    scenario = next(pytester.path.glob("mqconform-runs/pytest-*/*/counterexamples/*.yaml"))
    assert "steps:" in scenario.read_text()


def test_scenario_files_are_items_that_pass_and_fail(pytester: pytest.Pytester) -> None:
    shutil.copy(EXAMPLE, pytester.path / "ack.mqc.yaml")
    broken = EXAMPLE.read_text().replace("expect: {result: m3}", "expect: {result: m2}")
    assert broken != EXAMPLE.read_text()
    (pytester.path / "broken.mqc.yaml").write_text(broken)
    (pytester.path / "ignored.yaml").write_text(broken)  # only *.mqc.yaml files are scenarios
    result = pytester.runpytest_subprocess("--mqconform-adapter", "reference", "--mqconform-areas",
                                           "delivery", *QUICK, "--junitxml", "junit.xml")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAIL *broken.mqc.yaml: step 9 (receive): result: expected m2, actual m3",
                                 "*MISMATCH*",
                                 "replay: mqconform scenario *broken.mqc.yaml --adapter reference"])
    props = {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
             for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}
    assert props["ack"]["rules"] == "DELIVERY-11,DELIVERY-8"


@pytest.mark.parametrize(("args", "message"), [
    (["--mqconform-adapter", "nosuch"], "mqconform: unknown adapter 'nosuch'"),
    (["--mqconform-adapter", "reference", "--mqconform-areas", "nosuch"], "mqconform: unknown area 'nosuch'"),
    (["--mqconform-adapter", "reference", "--mqconform-profile", "nosuch"], "mqconform: unknown profile"),
])
def test_bad_options_are_one_usage_error(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_items_are_selected_like_any_other(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--mqconform-adapter", "reference", *QUICK, "-k", "ring or paging")
    result.assert_outcomes(passed=2, deselected=len(MACHINES) - 2)


#: a made-up counters bug in the shape of rabbitmq-server#5609 (tests/buggy_quorum.py KillingNackSkews)
#: registered with entries that have no bug model: the check, the shape and the observed difference decide
MADE_UP_REGISTRY = """\
deviations:
""" + "".join(f"""\
  - rules: [DELIVERY-16]
    adapter: rabbitmq
    profiles: [rabbitmq-quorum]
    versions: "==3.10.8"
    measured: {{fails: [3.10.8]}}
    check: {check}
    shape: nack-at-delivery-limit
    observed: {observed}
    field: {check.split(".")[1]}
    reason: a made-up counters bug in the shape of rabbitmq-server#5609 (tests/buggy_quorum.py)
    unmodelled: a made-up bug of the plugin's test, whose judge replays no bug model
    source: https://github.com/rabbitmq/rabbitmq-server/pull/5609
""" for check, observed in (("counters.pending_count", "lower"), ("counters.delivering_count", "higher")))


def test_the_plugin_judges_findings_with_the_deviation_registry_the_cli_applies(
        pytester: pytest.Pytester) -> None:
    """A finding a registered deviation explains does not fail the item (it is listed in the item's
    report section and `deviations` property); --mqconform-strict fails it, as `mqconform run`."""
    shutil.copy(ROOT / "tests" / "buggy_quorum.py", pytester.path / "buggy_quorum.py")
    (pytester.path / "made-up.yaml").write_text(MADE_UP_REGISTRY)
    args = ("--mqconform-adapter", "buggy_quorum:KillingNackSkews", "--mqconform-areas", "redelivery",
            "--mqconform-settings", "ci", "--mqconform-max-examples", "120", "--mqconform-max-findings", "2",
            "--mqconform-deviations", "made-up.yaml",
            "-p", "no:cacheprovider", "-rA", "--junitxml", "junit.xml",
            "--ignore", "mqconform-runs")  # the first run's counterexample programs are test files
    known = pytester.runpytest_subprocess(*args)
    known.assert_outcomes(passed=1)
    known.stdout.fnmatch_lines(["*mqconform known deviations*",
                                "DEVIATION counters.pending_count [[]*DELIVERY-16*[]]: *5609* "
                                "(made-up.yaml:*)"])
    root = ET.parse(pytester.path / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert "counters.delivering_count" in props["deviations"]
    # strict: the first finding, a registered deviation, already fails the item
    first = [*args[:args.index("--mqconform-max-findings") + 1], "1",
             *args[args.index("--mqconform-max-findings") + 2:]]
    strict = pytester.runpytest_subprocess(*first, "--mqconform-strict")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*FAIL counters.*_count*"])


def test_a_bad_deviation_registry_is_one_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "bad.yaml").write_text("deviations:\n  - rules: [REDELIVERY-8]\n")
    result = pytester.runpytest_subprocess("--mqconform-adapter", "reference", "--mqconform-deviations",
                                           "bad.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "mqconform: deviation registry: bad.yaml:2: missing key" in result.stderr.str()


def test_the_plugin_explains_a_finding_by_a_registered_bug_model(pytester: pytest.Pytester) -> None:
    """A registry entry with a bug model explains a finding in the plugin as in `mqconform run`: the
    counterexample replays on the implementation against the model with the bug (the area's own
    adapter while it explores on against that model, then one built for the verdict); --mqconform-strict
    is the registry's, as in the test above."""
    shutil.copy(ROOT / "tests" / "buggy_artemis.py", pytester.path / "buggy_artemis.py")
    # the ci settings' 200 examples (derandomized: seeded from the machine's source, whose edits redraw
    # them; 100 stopped finding the bug when the checks moved beside their steps)
    args = ("--mqconform-adapter", "buggy_artemis:DropsAtLimitNegative", "--mqconform-areas", "redelivery",
            "--mqconform-settings", "ci", "--mqconform-max-examples", "200", "--mqconform-max-findings", "2",
            "-p", "no:cacheprovider", "-rA", "--ignore", "mqconform-runs")
    known = pytester.runpytest_subprocess(*args)
    known.assert_outcomes(passed=1)
    known.stdout.fnmatch_lines(["*mqconform known deviations*", "DEVIATION *delivery limit*"])
