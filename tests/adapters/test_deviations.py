"""The known-deviation registry: the shipped file, the loader's file:line errors, version ranges, and
`mqconform run` turning a registered failing rule into `deviation` (and back to `fail` with --strict)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from mqconform.adapters.deviations import (
    DEFAULT_PATH,
    DeviationError,
    VersionRange,
    load_registry,
    parse_version,
)
from mqconform.cli import main
from mqconform.conformance.rules import rules_for
from mqconform.spec import load_catalogue

ENTRY = """\
deviations:
  - rule: RING-3
    adapter: rabbitmq
    versions: ">=3.10, <3.11"
    reason: drop-head keeps the redelivered head
    source: https://www.rabbitmq.com/maxlength.html
"""


def write(tmp_path: Path, text: str, name: str = "dev.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_shipped_registry_loads_and_names_only_catalogue_rules() -> None:
    registry = load_registry()
    ids = {rule.id for rule in load_catalogue()}
    assert all(d.rule in ids and d.source.startswith("http") for d in registry.deviations)
    assert load_registry([DEFAULT_PATH]) == registry


def test_an_entry_is_a_few_lines_and_matches_adapter_version_and_claimed_profile(tmp_path: Path) -> None:
    registry = load_registry([write(tmp_path, ENTRY)])
    (entry,) = registry.deviations
    assert entry.location == "dev.yaml:2"
    assert registry.find("RING-3", "rabbitmq", "3.10.8", "rabbitmq-classic", "rabbitmq-classic") is entry
    # another broker version, adapter, rule, or a profile the adapter does not claim: no match
    assert registry.find("RING-3", "rabbitmq", "3.11.0", "rabbitmq-classic", "rabbitmq-classic") is None
    assert registry.find("RING-3", "redis", "3.10.8", "rabbitmq-classic", "rabbitmq-classic") is None
    assert registry.find("RING-4", "rabbitmq", "3.10.8", "rabbitmq-classic", "rabbitmq-classic") is None
    assert registry.find("RING-3", "rabbitmq", "3.10.8", "artemis", "rabbitmq-classic") is None
    assert "drop-head" in entry.describe() and "https://www.rabbitmq.com" in entry.describe()


def test_explicit_profiles_widen_the_match(tmp_path: Path) -> None:
    text = ENTRY.replace("    reason:", "    profiles: [artemis, rabbitmq-quorum]\n    reason:")
    registry = load_registry([write(tmp_path, text)])
    assert registry.find("RING-3", "rabbitmq", "3.10.8", "artemis", "rabbitmq-classic") is not None
    assert registry.find("RING-3", "rabbitmq", "3.10.8", "rabbitmq-classic", "rabbitmq-classic") is None


@pytest.mark.parametrize(("text", "version", "inside"), [
    ("*", "", True), ("*", "2.9.10", True), (">=2.9, <2.12", "2.9.10", True),
    (">=2.9, <2.12", "2.12.0", False), (">=2.9, <2.12", "2.8.99", False), (">=2.9", "", False),
    ("7.0.15", "7.0.15", True), ("==7.0", "7.0.15", True), ("!=7.0", "7.2.4", True),
    ("<=3.10.8", "3.10.9", False), (">3", "3.0.1", False), (">3", "4.0", True),
])
def test_version_ranges(text: str, version: str, inside: bool) -> None:
    assert VersionRange.parse(text).contains(version) is inside


def test_parse_version() -> None:
    assert parse_version("v2.9.10") == (2, 9, 10)
    assert parse_version("7.0.15-rc1") == (7, 0, 15)
    assert parse_version("unknown") is None


@pytest.mark.parametrize(("text", "error"), [
    (ENTRY.replace("    reason:", "    severity: high\n    reason:"), r"dev\.yaml:5: unknown key 'severity'"),
    (ENTRY.replace("RING-3", "RING-999"), r"dev\.yaml:2: unknown rule id 'RING-999'"),
    (ENTRY.replace('">=3.10, <3.11"', '"about 3.10"'), r"dev\.yaml:4: bad version clause 'about 3.10'"),
    (ENTRY.replace('">=3.10, <3.11"', '">=3.10, =<3.11"'), r"dev\.yaml:4: bad version clause '=<3.11'"),
    (ENTRY.replace("https://www.rabbitmq.com/maxlength.html", "the docs"),
     r"dev\.yaml:6: source must be an http\(s\) link"),
    (ENTRY.replace("    reason:", "    profiles: [rabbit]\n    reason:"),
     r"dev\.yaml:5: unknown profile 'rabbit'"),
    (ENTRY.replace("    adapter: rabbitmq\n", ""), r"dev\.yaml:2: missing key 'adapter'"),
    (ENTRY + ENTRY.split("\n", 1)[1], r"dev\.yaml:7: duplicate deviation RING-3 for rabbitmq"),
    ("deviations:\n  - rule: [RING-3\n", r"dev\.yaml:\d+: malformed YAML"),
    ("rules: []\n", r"dev\.yaml:1: unknown key 'rules'"),
    ("deviations: {}\n", r"dev\.yaml:1: deviations must be a list"),
])
def test_errors_name_file_and_line(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(DeviationError, match=f"^{error}"):
        load_registry([write(tmp_path, text)])


def test_empty_registries_register_nothing(tmp_path: Path) -> None:
    assert len(load_registry([write(tmp_path, "deviations: []\n"), write(tmp_path, "", "e.yaml")])) == 0


# ---------------------------------------------------------------------------------- mqconform run
def _run(out: Path, *extra: str) -> int:
    """The reference adapter (claims artemis) checked against rabbitmq-classic: delivery fails."""
    return main(["run", "--adapter", "reference", "--profile", "rabbitmq-classic", "--areas", "delivery",
                 "--settings", "ci", "--max-examples", "10", "--max-findings", "3", "--no-report", "--out",
                 str(out), *extra])


def _outcomes(out: Path) -> dict[str, dict[str, object]]:
    return {o["rule"]: o for o in map(json.loads, (out / "outcomes.jsonl").read_text().splitlines())}


def _registry_for_delivery(tmp_path: Path) -> Path:
    rules = sorted({rule for ids in rules_for("delivery").values() for rule in ids})
    lines = ["deviations:"]
    for rule in rules:
        lines += [f"  - rule: {rule}", "    adapter: reference", "    versions: '*'",
                  "    profiles: [rabbitmq-classic]",
                  "    reason: the reference adapter follows artemis, not rabbitmq-classic",
                  "    source: https://www.rabbitmq.com/queues.html"]
    return write(tmp_path, "\n".join(lines) + "\n", "reference.yaml")


def test_registered_failures_become_deviations_and_strict_turns_them_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    registry = _registry_for_delivery(tmp_path)
    # --strict: every registered deviation is a failure again
    assert _run(tmp_path / "strict", "--deviations", str(registry), "--strict") == 1
    failed = {r for r, o in _outcomes(tmp_path / "strict").items() if o["outcome"] == "fail"}
    assert failed
    assert json.loads((tmp_path / "strict" / "run.json").read_text())["strict"] is True
    strict_out = capsys.readouterr().out

    assert _run(tmp_path / "known", "--deviations", str(registry)) == 0  # the same run (ci: derandomized)
    printed = capsys.readouterr().out
    outcomes = _outcomes(tmp_path / "known")
    deviations = {r for r, o in outcomes.items() if o["outcome"] == "deviation"}
    # the same first finding; a known deviation ends the area's exploration (what the example does
    # after it are consequences), so the later strict findings are not explored again
    first_line = next(line for line in strict_out.splitlines() if line.lstrip().startswith("FAIL "))
    first = {r for r in failed if r in first_line.split("[", 1)[1].split("]", 1)[0].split(", ")}
    assert first and first <= deviations <= failed
    assert all(o["outcome"] != "fail" for o in outcomes.values())
    some = outcomes[sorted(deviations)[0]]
    assert "follows artemis" in str(some["message"]) and some["counterexample"]
    assert "DEVIATION" in printed and "known deviation(s)" in printed
    assert "exploration of the area ended at the known deviation" in printed
    meta = json.loads((tmp_path / "known" / "run.json").read_text())
    assert meta["exit_code"] == 0 and meta["outcomes"]["deviation"] == len(deviations)
    assert meta["outcomes"]["fail"] == 0 and set(meta["deviations"]) == deviations


def test_a_bad_registry_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, ENTRY.replace("RING-3", "RING-999"))
    assert _run(tmp_path / "out", "--deviations", str(bad)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mqconform: deviation registry: dev.yaml:2: unknown rule id") and "\n" not in err
