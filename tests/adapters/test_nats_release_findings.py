"""What `mqconform matrix --adapter nats` found that depends on the release: each finding's scenario
holds on the model and on the current release, fails on an old release at the recorded step, and is
a registered deviation for exactly the releases it names (mqconform/conformance/judging/deviations.yaml).

Uses the 2.10.25 and 2.15.1 releases the matrix test caches too; the 2.11.x finding (2.11.0-2.11.9)
is checked on the model and in the registry (its replays are in the scenario's header)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform import releases
from mqconform.adapters.nats import NatsAdapter
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.judging.deviations import load_registry
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario

HERE = Path(__file__).parent / "scenarios"

#: scenario -> (the release it fails on, the step, the checks registered, first fixed release); a bug
#: registered by its bug model has one entry for every check ("": the model's replay decides)
FINDINGS = {
    "nats-2.10-max-age-late.yaml": ("2.10.25", 4, {"expiry.counts", "counters.message_count",
                                                   "counters.expired", "consumer_state.counts",
                                                   "stream_state.stream", "receive.id",
                                                   "consumer_state.delivered", "consumer_state.ack_floor"},
                                    "2.11.0"),
    "nats-restart-keeps-redelivered-at-max-deliver.yaml":
        ("2.10.25", 11, {""}, "2.14.1"),
    "nats-2.11-max-age-late-after-ttl.yaml": ("2.11.3", 5, {"expiry.counts", "counters.message_count",
                                                           "counters.expired"}, "2.11.10"),
}


#: runs of a scenario on the release it fails on, of which one must fail: 2.10's late max_age shows only
#: when the server's age check fires before the messages are due (it then waits a second); a timer that
#: fires late on a loaded machine finds them due and removes them in time
ATTEMPTS = 3


def _on_release(scenario_name: str, version: str, namespace: str) -> tuple[str, int | None]:
    binary = releases.binary(releases.line("nats").release(version))
    adapter = NatsAdapter(server_bin=str(binary))
    try:
        outcome = run_scenario(load(HERE / scenario_name), adapter, namespace=namespace)
        return outcome.verdict, outcome.step
    finally:
        adapter.shutdown()


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_each_finding_holds_on_the_model_and_is_registered_for_its_releases(name: str) -> None:
    """Its entries (one per check that shows it, or one with its bug model) name the scenario and cover
    the failing release, not the fixed one nor 2.15.1 (tests/adapters/test_deviations.py checks they
    match its shape)."""
    failing, _, checks, fixed = FINDINGS[name]
    assert run_scenario(load(HERE / name), ReferenceAdapter("jetstream")).verdict == "pass"
    entries = [d for d in load_registry().deviations if d.scenario == f"tests/adapters/scenarios/{name}"]
    assert {d.check for d in entries} == checks
    assert all((d.model is not None) == (d.check == "") for d in entries)
    for entry in entries:
        assert entry.applies("nats", failing, "jetstream", "jetstream"), entry.location
        assert not entry.applies("nats", fixed, "jetstream", "jetstream"), entry.location
        assert not entry.applies("nats", "2.15.1", "jetstream", "jetstream"), entry.location
        assert failing in entry.measured.fails and fixed in entry.measured.holds, entry.location


@pytest.mark.rules("EXPIRY-1", "RESTART-5")
@pytest.mark.parametrize("name", sorted(n for n, f in FINDINGS.items() if f[0] == "2.10.25"))
def test_an_old_release_fails_where_the_current_one_holds(name: str, namespace: str) -> None:
    failing, step, _, _ = FINDINGS[name]
    outcomes: list[tuple[str, int | None]] = []
    while len(outcomes) < ATTEMPTS and (not outcomes or outcomes[-1][0] != "fail"):
        outcomes.append(_on_release(name, failing, f"{namespace}-{len(outcomes)}"))
    assert outcomes[-1] == ("fail", step), outcomes
    assert _on_release(name, "2.15.1", namespace)[0] == "pass"


def test_scenario_versions_bisects_a_finding(capsys: pytest.CaptureFixture[str]) -> None:
    """`mqconform scenario --versions`: the file on each release's own server, then where it fails. The
    file is the regression scenario of a registered bug of 2.10: a DEVIATION there, naming the bug
    (exit 0, as `run` exits on a known deviation), a failure under --strict."""
    from mqconform.cli import main

    path = HERE / "nats-2.10-max-age-late.yaml"
    for strict, code, cell in ((False, 0, "DEVIATION"), (True, 1, "FAIL")):
        argv = ["scenario", "-q", "--adapter", "nats", "--versions", "2.10.25,2.15.1", str(path)]
        for _ in range(ATTEMPTS):  # the bug shows in some runs only (ATTEMPTS)
            exit_code = main([*argv, *(["--strict"] if strict else [])])
            out = capsys.readouterr().out
            if f"  2.10.25  {cell}" in out:
                break
        assert exit_code == code, out
        assert "known bug: " in out and "registered: https://github.com/nats-io" in out
        table = out[out.index("releases: 2.10.25, 2.15.1"):].splitlines()
        assert table[1:3] == [str(path), f"  2.10.25  {cell}"]
        if not strict:  # (--strict also fails an expectation 2.15.1 cannot observe)
            assert table[3:5] == ["  2.15.1   PASS", "  fails on: 2.10.25 .. 2.10.25 (1 of 2)"]
