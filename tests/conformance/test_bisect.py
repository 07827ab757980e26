"""`mqconform bisect`: the search itself on made-up release lines (every shape of verdicts it must
answer, flaky and verdict-less probes), its usage errors, and the NATS finding on real releases."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import attrs
import pytest

from mqconform.cli import main
from mqconform.commands import bisect as command
from mqconform.scenario.runner import Outcome

ROOT = Path(__file__).resolve().parents[2]
RESTART = ROOT / "tests/adapters/scenarios/nats-restart-keeps-redelivered-at-max-deliver.yaml"


@attrs.frozen
class Release:
    version: str


class FakeProbe(command._Probe):
    """Replays answered from a table (release -> the verdict of each replay) instead of a server."""

    def __init__(self, verdicts: dict[str, list[str]], repeat: int = 2) -> None:
        super().__init__(argparse.Namespace(repeat=repeat, adapter="fake"), None, {})
        self.table = {v: iter(said) for v, said in verdicts.items()}
        self.asked: list[str] = []

    def _server(self, release: Any) -> Path:
        self.asked.append(release.version)
        return Path(release.version)

    def _replay(self, path: Path) -> Any:
        return Outcome(next(self.table[str(path)]), "fake")  # type: ignore[arg-type]


VERDICT = {"F": "fail", "P": "pass", "N": "not_applicable"}


def _search(pattern: str) -> tuple[str, list[str]]:
    """Bisect a line whose release i gives pattern[i] (F fail, P pass, N not applicable)."""
    releases = [Release(f"1.{i}") for i in range(len(pattern))]
    probe = FakeProbe({r.version: [VERDICT[c]] * 2 for r, c in zip(releases, pattern, strict=True)})
    return command.bisect(probe, releases), probe.asked


@pytest.mark.parametrize(("pattern", "answer"), [
    ("FFFFFFFFPPPP", "fails on 1.0 .. 1.7; first release that holds: 1.8 (holds through 1.11)"),
    ("PPPFFFFFFFFFFFFF", "holds on 1.0 .. 1.2; first release that fails: 1.3 (fails through 1.15)"),
    ("PPPPPPPPP", "holds on every release probed (1.0, 1.4, 1.8 of 9): no boundary between 1.0 and 1.8"),
    ("FFFF", "fails on every release probed (1.0, 1.2, 1.3 of 4): no boundary between 1.0 and 1.3"),
    ("PPPFFFFFPPP", "fails from 1.3 through 1.7; holds before 1.3 and again from 1.8"),
    ("F", "fails on 1.0, the only release tried"),
    ("NNNNNFFFFPP", "not applicable on 1.0 .. 1.4; from 1.5: fails on 1.5 .. 1.8; first release that holds: "
                    "1.9 (holds through 1.10)"),
    ("NPPP", "not applicable on 1.0 .. 1.0; from 1.1: holds on every release probed (1.1, 1.2, 1.3 of 3): "
             "no boundary between 1.1 and 1.3"),
])
def test_the_search_answers_every_shape(pattern: str, answer: str) -> None:
    found, asked = _search(pattern)
    assert found == answer
    if len(pattern) > 8 and len(set(pattern)) == 2 and pattern[0] != pattern[-1]:
        assert len(asked) <= 2 + (len(pattern) - 2).bit_length()  # a binary search, not a scan


def test_a_flaky_or_verdictless_release_stops_the_search() -> None:
    releases = [Release(v) for v in ("1.0", "1.1", "1.2")]
    flaky = FakeProbe({"1.0": ["fail", "fail"], "1.1": ["fail", "pass"], "1.2": ["pass", "pass"]})
    with pytest.raises(command._Stop, match=r"1\.1 is flaky: FAIL, PASS"):
        command.bisect(flaky, releases)
    blind = FakeProbe({"1.0": ["unknown", "unknown"], "1.1": ["pass"] * 2, "1.2": ["pass"] * 2})
    with pytest.raises(command._Stop, match="no verdict"):
        command.bisect(blind, releases)
    never = FakeProbe({v.version: ["not_applicable"] * 2 for v in releases})
    with pytest.raises(command._Stop, match=r"not applicable on 1\.0 nor on 1\.2"):
        command.bisect(never, releases)
    # not applicable after an applicable release is no capability the line gained: no verdict
    gap = FakeProbe({"1.0": ["pass"] * 2, "1.1": ["not_applicable"] * 2, "1.2": ["pass"] * 2})
    assert command.bisect(gap, [Release("1.0"), Release("1.2")]).startswith("holds")
    with pytest.raises(command._Stop, match="no verdict"):
        command.bisect(FakeProbe({"1.0": ["fail"] * 2, "1.1": ["not_applicable"] * 2, "1.2": ["pass"] * 2}),
                       releases)


@pytest.mark.parametrize(("argv", "code", "words"), [
    (["--adapter", "reference"], 2, "no releases"),
    (["--adapter", "nats", "--versions", "0.1.0"], 3, "0.1.0"),
    (["--adapter", "nats", "--url", "nats://127.0.0.1:4222"], 2, "own server"),
    (["--adapter", "nats", "--repeat", "0"], 2, "--repeat"),
])
def test_bad_usage_is_one_line_and_a_nonzero_exit(argv: list[str], code: int, words: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bisect", str(RESTART), *argv]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


@pytest.mark.broker("nats")
@pytest.mark.rules("RESTART-3", "RESTART-4", "RESTART-5")
def test_the_nats_restart_finding_holds_again_from_2_14_1(capsys: pytest.CaptureFixture[str]) -> None:
    """nats-server 78fd547a1 ("checkRedelivered only removes below stream's first seq"), in 2.14.1."""
    versions = "2.10.25,2.12.4,2.14.0,2.14.1,2.15.1"
    assert main(["bisect", str(RESTART), "--adapter", "nats", "--versions", versions]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "fails on 2.10.25 .. 2.14.0; first release that holds: 2.14.1 (holds through 2.15.1)" in last
