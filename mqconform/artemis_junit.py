"""The Artemis collection bugs as JUnit tests in Artemis' own style (docs/findings/junit/), run
against one release's classes: the ``artemis-commons`` jar of that release and its dependencies, with
the JUnit console launcher Artemis 2.56.0 builds with, fetched once through ``mvn`` into the cache
(``$MQCONFORM_CACHE`` or ``~/.cache/mqconform``, folder ``junit/artemis-<version>/lib``); the tests are
compiled with ``javac`` (or, on a machine with only a Java runtime, the ``jdk.compiler`` module it
ships) and run with ``org.junit.platform.console.ConsoleLauncher``, whose XML report gives each
test's outcome and assertion message.

``python -m mqconform.artemis_junit [--version V]`` prints one line per finding: present (the test
fails with the bug's assertion message), not in this release (it passes: fixed, or before
the bug came), or another failure.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs

from mqconform.adapters.artemis.room import artemis_group
from mqconform.releases import ReleaseError, cache_root, maven_jars

#: the release the findings cite (tag 2.56.0 of apache/artemis)
ARTEMIS_VERSION = "2.56.0"
#: the JUnit of Artemis 2.56.0's build (``junit.version`` in its pom: the junit-bom it imports)
JUNIT_VERSION = "6.1.3"
#: the JUnit test sources, beside the write-ups they belong to
SOURCES = Path(__file__).resolve().parent.parent / "docs" / "findings" / "junit"
TOOL_TIMEOUT_S = 300
#: the JVM of a short run (javac, the launcher): the C1 compiler only and the serial collector
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class JUnitError(Exception):
    """The tests could not be compiled or run (a fetch, javac or the launcher failed)."""


@attrs.frozen
class Finding:
    """One collection bug: its JUnit test and the assertion message it fails with while the bug is
    there (the start of JUnit's message: ours, then ``==> expected: ... but was: ...``)."""

    test: str
    writeup: str
    message: str


FINDINGS = (
    Finding("org.apache.activemq.artemis.tests.unit.util.LinkedListRepeatNudgeTest#testRepeatAfterNudgeNoReplay",
            "artemis-non-destructive-ring-repeats-replaced.md",
            "iterator replays 2 after the repeat returned it ==> expected: <false> but was: <true>"),
    Finding("org.apache.activemq.artemis.core.list.PriorityLinkedListRemoveResetTest"
            "#testIteratorPicksUpHigherPriorityAfterLevelEmptied",
            "artemis-priority-after-cancel.md",
            "d (priority 5) must come before b (priority 4) ==> expected: <Wibble[s1=d, id=4]> "
            "but was: <Wibble[s1=b, id=2]>"),
    Finding("org.apache.activemq.artemis.core.list.PriorityLinkedListSameLevelResetTest"
            "#testIteratorPicksUpSamePriorityAfterMovingDown",
            "artemis-non-destructive-priority-same-level.md",
            "c (priority 9) must come before a (priority 0) ==> expected: <Wibble[s1=c, id=3]> "
            "but was: <Wibble[s1=a, id=1]>"),
)


@attrs.frozen
class Outcome:
    """What one JUnit test did: ``failure`` is its failure's message (None when it passed)."""

    test: str
    failure: str | None


def jars(version: str = ARTEMIS_VERSION) -> list[Path]:
    """The jars the tests compile and run with: artemis-commons `version` with its runtime
    dependencies and the JUnit console launcher (fetched once; JUnitError when that fails)."""
    try:
        lib = maven_jars(cache_root() / "junit" / f"artemis-{version}",
                         [(artemis_group(version), "artemis-commons", version),
                          ("org.junit.platform", "junit-platform-console-standalone", JUNIT_VERSION)],
                         f"artemis-commons-{version}.jar")
    except ReleaseError as exc:
        raise JUnitError(str(exc)) from None
    return sorted(lib.glob("*.jar"))


def _tool(args: list[str], what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JUnitError(f"{what}: {exc}") from None


def _compiler() -> list[str]:
    javac = shutil.which("javac")
    if javac is not None:
        return [javac, *(f"-J{o}" for o in JVM_OPTIONS)]
    java = shutil.which("java")
    if java is None:
        raise JUnitError("no java on PATH (apt-get install openjdk-17-jre-headless)")
    return [java, *JVM_OPTIONS, "-m", "jdk.compiler/com.sun.tools.javac.Main"]


def compiled(version: str, sources: Path, classpath: str) -> Path:
    """The test classes of `sources` compiled against `version`'s jars, kept in the cache under a
    digest of the sources (compiled again only when a source changes)."""
    files = sorted(sources.glob("*.java"))
    if not files:
        raise JUnitError(f"no JUnit sources under {sources}")
    digest = hashlib.sha256(version.encode())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    target = cache_root() / "junit" / f"artemis-{version}" / "classes" / digest.hexdigest()[:16]
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        done = _tool([*_compiler(), "-nowarn", "-d", str(Path(tmp) / "out"), "-cp", classpath,
                      *(str(p) for p in files)], "javac")
        if done.returncode != 0:
            raise JUnitError(f"javac failed: {(done.stderr or done.stdout).strip()[:600]}")
        with contextlib.suppress(OSError):  # another process got there first: its classes are the same
            os.replace(Path(tmp) / "out", target)
    return target


def run(version: str = ARTEMIS_VERSION, sources: Path = SOURCES) -> dict[str, Outcome]:
    """Compile every ``*.java`` under `sources` against `version`'s jars (once) and run them; the
    outcome of each test (``Class#method``) from the launcher's XML report."""
    java = shutil.which("java")
    if java is None:
        raise JUnitError("no java on PATH (apt-get install openjdk-17-jre-headless)")
    classpath = os.pathsep.join(str(j) for j in jars(version))
    classes = compiled(version, sources, classpath)
    with tempfile.TemporaryDirectory(prefix="artemis-junit-") as reports:
        done = _tool([java, *JVM_OPTIONS, "-cp", os.pathsep.join([str(classes), classpath]),
                      "org.junit.platform.console.ConsoleLauncher", "execute", "--disable-banner",
                      "--disable-ansi-colors", "--details=none", f"--reports-dir={reports}",
                      f"--scan-classpath={classes}"], "junit")
        report = Path(reports) / "TEST-junit-jupiter.xml"
        if not report.is_file():
            raise JUnitError(f"the JUnit launcher wrote no report (exit {done.returncode}): "
                             f"{(done.stderr or done.stdout).strip()[:600]}")
        return _outcomes(report)


def _outcomes(report: Path) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}#{str(case.get('name', '')).removesuffix('()')}"
        failed = case.find("failure")
        if failed is None:
            failed = case.find("error")
        outcomes[name] = Outcome(name, None if failed is None else str(failed.get("message", "")))
    return outcomes


def verdict(finding: Finding, outcome: Outcome | None) -> str:
    """One line: whether `finding`'s bug is present in the release the outcome came from."""
    if outcome is None:
        return f"{finding.test}: did not run"
    if outcome.failure is None:
        return f"{finding.test}: passes: the bug is not in this release ({finding.writeup})"
    if outcome.failure == finding.message:
        return f"{finding.test}: bug present ({outcome.failure})"
    return f"{finding.test}: fails otherwise: {outcome.failure}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mqconform.artemis_junit",
                                     description="The Artemis collection bugs' JUnit tests on one release.")
    parser.add_argument("--version", default=ARTEMIS_VERSION,
                        help="the Artemis release (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        outcomes = run(args.version)
    except JUnitError as exc:
        print(f"artemis-junit: {exc}", file=sys.stderr)
        return 2
    for finding in FINDINGS:
        print(f"{args.version}: {verdict(finding, outcomes.get(finding.test))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
