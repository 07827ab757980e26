"""A finding written out: a self-checking scenario file and a plain pytest test of its steps
(``<area>-<n>-<check>.yaml`` and ``test_<area>_<n>_<check>.py`` under a run's ``counterexamples/``)."""

from __future__ import annotations

from typing import Any

import yaml

from mqconform.history import RunDirectory

from .runner import Finding


def scenario_text(finding: Finding, profile: str) -> str:
    """The finding as a self-checking scenario file: each step expects what the claimed profile's
    model says (its result, and the counters and pending order of every queue after it)."""
    from mqconform.reference_model.profiles import profile as load_profile
    from mqconform.scenario import ModelRejected, annotate

    raw = [s.as_scenario() for s in finding.steps]
    claimed = load_profile(profile)
    try:
        steps = annotate(raw, claimed.evolve(**finding.options) if finding.options else claimed)
    except ModelRejected:
        steps = raw  # cannot happen for steps the machine ran on the same model; keep the raw form
    options: dict[str, Any] = {"options": dict(finding.options)} if finding.options else {}
    if finding.clock_lead_limit_ms is not None:
        options["clock_lead_limit_ms"] = finding.clock_lead_limit_ms
    return yaml.safe_dump({"profile": profile, **options, "steps": steps}, sort_keys=False,
                          default_flow_style=None, width=110)


def write_counterexample(run: RunDirectory, finding: Finding, adapter_name: str,
                         adapter_options: dict[str, Any], profile: str, index: int) -> None:
    """Write the finding as a self-checking scenario file and as a plain pytest test.

    Each scenario step expects what the claimed profile's model says (its result, and the counters
    and pending order of every queue after it), so `mqconform scenario FILE --adapter X` exits 1 at
    the step where the implementation diverges.
    """
    stem = f"{finding.machine}-{index}-{finding.check.replace('.', '_')}"
    raw = [s.as_scenario() for s in finding.steps]
    header = (f"# Counterexample: {finding.check} ({', '.join(finding.rules)})\n"
              f"# {' '.join(finding.message.split())}\n"
              f"# Replay: mqconform scenario {stem}.yaml --adapter {adapter_name}\n")
    scenario_path = run.path / "counterexamples" / f"{stem}.yaml"
    scenario_path.parent.mkdir(parents=True, exist_ok=True)
    scenario_path.write_text(header + scenario_text(finding, profile))
    program = (
        f'"""Counterexample found by mqconform against {adapter_name}: {finding.check} '
        f'({", ".join(finding.rules)}).\n\n{finding.message}\n"""\n\n'
        "from mqconform.conformance.exploring.replay import replay\n\n"
        f"STEPS = {raw!r}\n\n\n"
        "def test_counterexample() -> None:\n"
        f"    replay(adapter={adapter_name!r}, adapter_options={adapter_options!r}, "
        f"profile={profile!r}, steps=STEPS)\n"
    )
    program_path = run.path / "counterexamples" / f"test_{stem.replace('-', '_')}.py"
    program_path.write_text(program)
    finding.scenario_path = str(scenario_path.relative_to(run.path))
    finding.program_path = str(program_path.relative_to(run.path))
