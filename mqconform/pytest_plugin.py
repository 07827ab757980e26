"""The pytest plugin (entry point `pytest11`): the conformance suite inside a broker team's own pytest.

    pytest --mqconform-adapter NAME|module:Class [--mqconform-profile P] [--mqconform-areas a,b]
           [--mqconform-settings dev|ci|thorough] [--mqconform-option key=value ...]
           [--mqconform-seed N] [--mqconform-max-examples N] [--mqconform-max-findings N]
           [--mqconform-deviations FILE ...] [--mqconform-strict] [--mqconform-out DIR] [-n auto]

Each conformance machine is one test item, named by its area (``mqconform::ring``); each scenario
file named ``*.mqc.yaml`` in the collected folders is one item too, run through the scenario
runner against the same adapter. Every item carries its rule ids: a ``rules`` marker, and a
``rules`` property that pytest's ``--junitxml`` writes. A failing machine shows each shrunk
counterexample (the scenario YAML) and the command that replays it. An area the adapter or the
profile cannot run is *skipped* with ``n/a (needs: ...)``, never passed. A finding is judged as
``mqconform run`` judges it (mqconform.conformance.judging.verdict, the shipped known-deviation registry plus
``--mqconform-deviations`` files): one a registered deviation explains does not fail the item (it is
listed in the item's ``deviations`` property and report section), ``--mqconform-strict`` fails it.

The items run the same code as ``mqconform run`` (conformance.runner.run_area_job: each item loads
its adapter by name, runs, shuts it down), so they work in pytest-xdist workers. Without
``--mqconform-adapter`` the plugin only registers its options: no items, no markers, no side effects.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: shared by the controller and its xdist workers (they inherit the environment): one run id and
#: one drawn seed per pytest session
_RUN_ENV = "MQCONFORM_PYTEST_RUN"
_SEED_ENV = "MQCONFORM_PYTEST_SEED"
_RULE_ID = re.compile(r"\b[A-Z]+-\d+\b")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mqconform", "mqconform conformance suite (active with --mqconform-adapter)")
    group.addoption("--mqconform-adapter", metavar="NAME|module:Class",
                    help="run the conformance machines and *.mqc.yaml scenarios against this adapter")
    group.addoption("--mqconform-profile", metavar="P",
                    help="profile checked against (default: the one the adapter claims)")
    group.addoption("--mqconform-areas", metavar="a,b", help="comma-separated areas (default: all)")
    group.addoption("--mqconform-settings", choices=("dev", "ci", "thorough"),
                    help="Hypothesis settings profile (default: ci when CI=true, else dev)")
    group.addoption("--mqconform-option", action="append", metavar="KEY=VALUE",
                    help="option passed to the adapter (repeatable)")
    group.addoption("--mqconform-seed", type=int, metavar="N",
                    help="Hypothesis seed (default: drawn once per session and shown on each item)")
    group.addoption("--mqconform-max-examples", type=int, metavar="N", help="examples per machine")
    group.addoption("--mqconform-max-findings", type=int, metavar="N",
                    help="stop exploring an area after N violations, each shrunk (default 9)")
    group.addoption("--mqconform-deviations", action="append", metavar="FILE",
                    help="another known-deviation registry file (repeatable; added to the shipped one)")
    group.addoption("--mqconform-strict", action="store_true",
                    help="registered known deviations count as failures")
    group.addoption("--mqconform-out", metavar="DIR",
                    help="where the run directories go (default: mqconform-runs/pytest-<run id>)")


class _Options:
    """The validated --mqconform-* options of one session."""

    def __init__(self, config: pytest.Config) -> None:
        from mqconform.adapters.registry import AdapterLoadError, load_adapter, load_class
        from mqconform.commands._common import parse_options
        from mqconform.conformance.exploring import settings as suite_settings
        from mqconform.history import new_run_id
        from mqconform.reference_model.errors import ModelMisuse
        from mqconform.reference_model.profiles import profile as load_profile

        get = config.getoption
        self.adapter: str = get("mqconform_adapter")
        try:
            self.adapter_options: dict[str, Any] = parse_options(get("mqconform_option"))
            claimed = getattr(load_class(self.adapter), "profile", None)
            if not isinstance(claimed, str) or not claimed:  # set per instance: ask one (not opened)
                claimed = str(load_adapter(self.adapter, **self.adapter_options).profile)
            #: the profile the adapter claims; `profile` is the one it is checked against
            self.claimed: str = claimed
            self.profile: str = get("mqconform_profile") or claimed
            load_profile(self.profile)
        except (AdapterLoadError, ModelMisuse, ValueError) as exc:
            raise pytest.UsageError(f"mqconform: {exc}") from None
        from mqconform.conformance.judging.deviations import DeviationError
        from mqconform.conformance.judging.verdict import load_deviations

        try:
            self.deviations = load_deviations(get("mqconform_deviations"))
        except DeviationError as exc:
            raise pytest.UsageError(f"mqconform: deviation registry: {exc}") from None
        self.strict = bool(get("mqconform_strict"))
        from mqconform.conformance.plan import RunPlan

        settings_name = get("mqconform_settings") or suite_settings.default_profile()
        seed = get("mqconform_seed")
        profile = suite_settings.PROFILES.get(settings_name)
        if seed is None and profile is not None and not profile.get("derandomize"):
            # one seed for the session, shared by the xdist workers through the environment
            seed = int(os.environ.setdefault(_SEED_ENV, str(random.getrandbits(32))))
        try:
            #: the plan every area of the session runs (validated once, as `mqconform run` does)
            self.plan = RunPlan.build(self.adapter, self.adapter_options, profile=self.profile,
                                      settings_name=settings_name, areas=get("mqconform_areas"),
                                      max_examples=get("mqconform_max_examples"),
                                      max_findings=get("mqconform_max_findings"), seed=seed,
                                      draw_seed=False)
        except ValueError as exc:
            raise pytest.UsageError(f"mqconform: {exc}") from None
        self.areas = list(self.plan.areas)
        self.settings: str = self.plan.settings_name
        self.max_examples: int | None = self.plan.max_examples
        self.seed: int | None = self.plan.seed
        self.run_id = os.environ.setdefault(_RUN_ENV, new_run_id())
        out = get("mqconform_out")
        default = Path(config.invocation_params.dir) / "mqconform-runs" / f"pytest-{self.run_id}"
        self.out = Path(out) if out else default

    def replay_args(self) -> str:
        options = "".join(f" -o {k}={str(v).lower() if isinstance(v, bool) else v}"
                          for k, v in self.adapter_options.items())
        return f"--adapter {self.adapter}{options}"


_options_key = pytest.StashKey[_Options]()


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("mqconform_adapter", None):
        return
    config.addinivalue_line("markers", "rules(*ids): the spec rule ids a test checks")
    config.stash[_options_key] = _Options(config)


def _options(config: pytest.Config) -> _Options | None:
    return config.stash.get(_options_key, None)


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so it applies to these items too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    options = _options(config)
    if options is None:
        return
    suite = ConformanceSuite.from_parent(session, name="mqconform")
    items.extend(suite.collect())


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(".mqc.yaml") and _options(parent.config) is not None:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def pytest_report_header(config: pytest.Config) -> str | None:
    options = _options(config)
    if options is None:
        return None
    seed = f"seed {options.seed}" if options.seed is not None else "seed derandomized"
    return (f"mqconform: adapter {options.adapter}, profile {options.profile}, settings {options.settings}, "
            f"{seed}, run directories under {options.out}")


class ConformanceSuite(pytest.Collector):
    """The conformance machines, one item per area."""

    def collect(self) -> list[pytest.Item]:
        options = _options(self.config)
        assert options is not None
        return [AreaItem.from_parent(self, name=area) for area in options.areas]


def _rules_of_area(area: str) -> list[str]:
    from mqconform.conformance.judging.rules import rules_for

    return sorted({rule for rules in rules_for(area).values() for rule in rules})


class ConformanceFailure(Exception):
    """A machine found violations, or could not establish its rules (the text is the report)."""


class _Item(pytest.Item):
    """A conformance item: a ConformanceFailure is shown as its own text (the counterexample and the
    replay command), not as a traceback."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | Any:
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class AreaItem(_Item):
    """One conformance machine against the adapter."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rule_ids = _rules_of_area(self.name)
        self.add_marker(pytest.mark.rules(*self.rule_ids))
        self.user_properties.append(("rules", ",".join(self.rule_ids)))

    def runtest(self) -> None:
        from mqconform.conformance.run import Run

        options = _options(self.config)
        assert options is not None
        path = options.out / self.name
        path.mkdir(parents=True, exist_ok=True)
        settings = {"settings": options.settings, "areas": [self.name], "seed": options.seed,
                    "max_examples": options.max_examples, "runner": "pytest"}
        with Run(options.plan, registry=options.deviations, strict=options.strict, out=path,
                 run_id=f"{options.run_id}-{self.name}", settings=settings) as session:
            # the area builds its own adapter (as an xdist worker's would): a known bug's model
            # explains a finding by a replay on it while it explores (and it explores on against
            # that model), then on one built for the verdict's replays when a finding needs them
            session.take(options.adapter, options.claimed, options.plan.claimed(None), "")
            self.user_properties.append(("run_directory", str(path)))
            if options.seed is not None:
                self.user_properties.append(("seed", str(options.seed)))
            outcome = session.job(self.name)
            verdict = session.verdict([self.name])
        run, result, fault = session.run_dir, outcome.result, outcome.fault
        assert run is not None
        for rule, state in sorted(verdict.outcomes.items()):
            deviation = verdict.by_rule.get(rule)
            run.outcome(self.name, rule, state, examples=result.examples,  # type: ignore[arg-type]
                        message=deviation.describe() if deviation is not None else None)
        failing = [f for f in result.findings if verdict.deviation_of(f) is None]
        lines = [f"DEVIATION {f.check} [{', '.join(f.rules)}]: {d.describe()} ({d.where})"
                 for f in result.findings if (d := verdict.deviation_of(f)) is not None]
        exit_code = verdict.exit_code(aborted=fault is not None)
        run.finish(exit_code, complete=fault is None, outcomes=verdict.counts(), strict=options.strict,
                   server_version=result.server_version,
                   deviations={r: d.where for r, d in sorted(verdict.by_rule.items())},
                   not_run={self.name: result.needs.as_json()} if result.needs else {})
        self.user_properties.append(("examples", str(result.examples)))
        if lines:
            self.user_properties.append(("deviations", "; ".join(lines)))
            self.add_report_section("call", "mqconform known deviations", "\n".join(lines))
        failed = bool(failing or result.unknown)
        if result.needs is not None and not failed:
            pytest.skip(f"{result.needs.describe()}: {result.needs.reason()}")
        if failed:
            raise ConformanceFailure(self._report(result, failing, path, options))

    def _report(self, result: Any, failing: list[Any], path: Path, options: _Options) -> str:
        state = f"{len(failing)} violation(s)" if failing else "UNKNOWN"
        lines = [f"{state} in area {self.name}: adapter {options.adapter}, checked against "
                 f"{options.profile}, {result.examples} examples"
                 + (f", seed {options.seed}" if options.seed is not None else ", seed derandomized")]
        for finding in failing:
            scenario = path / (finding.scenario_path or "")
            lines += ["", f"FAIL {finding.check} [{', '.join(finding.rules)}] {len(finding.steps)} steps: "
                          f"{' '.join(finding.message.split())}",
                      f"counterexample ({scenario}):", ""]
            lines += ["    " + line for line in scenario.read_text().splitlines()]
            lines += ["", f"replay: mqconform scenario {scenario} {options.replay_args()}"]
        if result.unknown:
            lines += ["", f"UNKNOWN: {result.unknown}"]
        return "\n".join(lines)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"mqconform area {self.name}"


class ScenarioFile(pytest.File):
    """A scenario file `*.mqc.yaml`: one item."""

    def collect(self) -> Iterator[pytest.Item]:
        yield ScenarioItem.from_parent(self, name=self.path.name.removesuffix(".mqc.yaml"))


class ScenarioItem(_Item):
    """One scenario file stepped through the adapter (mqconform.scenario, as `mqconform scenario`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        text = self.path.read_text(encoding="utf-8", errors="replace")
        comments = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))
        self.rule_ids = sorted(set(_RULE_ID.findall(comments)))
        if self.rule_ids:
            self.add_marker(pytest.mark.rules(*self.rule_ids))
        self.user_properties.append(("rules", ",".join(self.rule_ids)))

    def runtest(self) -> None:
        import contextlib

        from mqconform.adapters.registry import AdapterLoadError
        from mqconform.reference_model.errors import ModelMisuse
        from mqconform.scenario import ScenarioError, load, run_scenario

        options = _options(self.config)
        assert options is not None
        lines: list[str] = []
        adapter: Any = None
        try:
            scenario = load(self.path)
            if options.adapter == "reference" and not options.adapter_options:
                from mqconform.adapters.reference import ReferenceAdapter

                adapter = ReferenceAdapter(options=scenario.model_options(options.profile))
            else:
                adapter = options.plan.open_adapter()
            outcome = run_scenario(scenario, adapter, printer=lines.append)
        except (ScenarioError, AdapterLoadError, ModelMisuse, ValueError) as exc:
            raise ConformanceFailure(str(exc)) from None
        finally:
            shutdown = getattr(adapter, "shutdown", None)
            if callable(shutdown):
                with contextlib.suppress(Exception):
                    shutdown()
        for note in outcome.not_applicable:
            lines.append(f"      not applicable: {note}")
        if outcome.verdict == "not_applicable":  # cut short, so not a pass: shown as a skip with the step
            pytest.skip(outcome.verdict_line())
        if outcome.verdict != "pass":
            lines = [outcome.verdict_line(), "", *lines, "",
                     f"replay: mqconform scenario {self.path} {options.replay_args()}"]
            raise ConformanceFailure("\n".join(lines))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"mqconform scenario {self.name}"
