"""The Artemis collection bugs as upstream would take them: the JUnit tests of docs/findings/junit/,
compiled and run against the Artemis 2.56.0 classes (artemis-commons from Maven Central, fetched once
through mvn into the cache; no skips: without mvn or java the fixture fails). Each must fail with its
bug's assertion message; on a release where the bug is fixed, the test says so in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform import artemis_junit
from mqconform.artemis_junit import FINDINGS, Finding, Outcome

FINDINGS_DIR = artemis_junit.SOURCES.parent


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    return artemis_junit.run(artemis_junit.ARTEMIS_VERSION)


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda f: f.writeup.removesuffix(".md"))
def test_junit_test_fails_with_the_bug_on_2_56_0(outcomes: dict[str, Outcome], finding: Finding) -> None:
    outcome = outcomes.get(finding.test)
    line = artemis_junit.verdict(finding, outcome)
    assert outcome is not None, line
    assert outcome.failure is not None, f"{artemis_junit.ARTEMIS_VERSION}: {line}"
    assert outcome.failure == finding.message, line


def test_only_the_findings_tests_ran(outcomes: dict[str, Outcome]) -> None:
    assert sorted(outcomes) == sorted(f.test for f in FINDINGS)


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda f: f.writeup.removesuffix(".md"))
def test_writeup_links_its_junit_test(finding: Finding) -> None:
    source = f"junit/{finding.test.split('#')[0].rsplit('.', 1)[1]}.java"
    assert (FINDINGS_DIR / source).is_file()
    assert f"]({source})" in (FINDINGS_DIR / finding.writeup).read_text()


def test_report_outcomes_and_verdicts(tmp_path: Path) -> None:
    """The launcher's XML report read back: a failure's message, a pass, and the one-line verdicts."""
    report = tmp_path / "TEST-junit-jupiter.xml"
    report.write_text(
        '<testsuite><testcase name="testA()" classname="p.ATest">'
        '<failure message="boom ==&gt; expected: &lt;1&gt; but was: &lt;2&gt;" type="x"/></testcase>'
        '<testcase name="testB()" classname="p.BTest"/></testsuite>')
    got = artemis_junit._outcomes(report)
    assert got == {"p.ATest#testA": Outcome("p.ATest#testA", "boom ==> expected: <1> but was: <2>"),
                   "p.BTest#testB": Outcome("p.BTest#testB", None)}
    a = Finding("p.ATest#testA", "a.md", "boom ==> expected: <1> but was: <2>")
    b = Finding("p.BTest#testB", "b.md", "whatever")
    other = Finding("p.ATest#testA", "a.md", "other")
    failed, passed = got["p.ATest#testA"], got["p.BTest#testB"]
    assert artemis_junit.verdict(a, failed) == f"p.ATest#testA: bug present ({a.message})"
    assert artemis_junit.verdict(b, passed) == "p.BTest#testB: passes: the bug is not in this release (b.md)"
    assert artemis_junit.verdict(other, failed).startswith("p.ATest#testA: fails otherwise: boom")
    assert artemis_junit.verdict(a, None) == "p.ATest#testA: did not run"
