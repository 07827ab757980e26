"""`mqconform scenario FILE...`: step scenario files through the model (or any adapter).

Exit codes: 0 every applicable `expect` held (``PASS``), or the adapter refused an operation as
unsupported and the rest was not run (``N/A``, never ``PASS``; a failure under ``--strict``), or the file
is the regression scenario of a registered broker bug of that adapter and release and it fails
(``DEVIATION``, with the bug's source and release range; a failure under ``--strict``), 1 a mismatch
(expected vs actual, with the step number), 2 an invalid file (file:line: what is wrong) or bad usage, 3
the adapter answered `info` (unknown) or could not be reached. With ``--versions`` the files run on each
release in turn (the release's own server, as in ``mqconform matrix``), then one table says per file
where it fails; the exit code is the worst over all releases.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

import attrs

from mqconform.commands._common import adapter_options, add_adapter_arguments, fail


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="scenario files (.yaml or .json)")
    add_adapter_arguments(parser, "reference")
    parser.add_argument("--profile",
                        help="profile of the reference model (default: the file's, else artemis)")
    parser.add_argument("--strict", action="store_true",
                        help="an expectation or operation the adapter cannot observe or run fails, and so "
                             "does a failure a registered broker bug explains")
    parser.add_argument("--deviations", action="append", type=Path, default=[], metavar="FILE",
                        help="another known-deviation registry file (repeatable; added to the shipped "
                             "mqconform/conformance/judging/deviations.yaml)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the verdict lines")
    parser.add_argument("--versions", metavar="V1,V2,...|all",
                        help="run the files on each of these releases of the adapter's line (as `mqconform "
                             "matrix --versions`; each on its own server) and print, per file, its verdict "
                             "on every release and the releases it fails on: a bisect")


def _adapter(args: argparse.Namespace, scenario: Any, options: dict[str, Any]) -> Any:
    if args.adapter == "reference":
        from mqconform.adapters.reference import ReferenceAdapter

        if options:
            raise ValueError(f"the reference adapter takes no -o options (got {', '.join(sorted(options))}); "
                             "use --profile or the scenario's options")
        return ReferenceAdapter(options=scenario.model_options(args.profile))
    from mqconform.adapters.registry import load_adapter

    return load_adapter(args.adapter, **options)


def run(args: argparse.Namespace) -> int:
    from mqconform.conformance.judging.deviations import DeviationError
    from mqconform.conformance.judging.verdict import load_deviations
    from mqconform.reference_model.errors import ModelMisuse
    from mqconform.reference_model.profiles import profile as load_profile
    from mqconform.releases import ReleaseError, binary, resolve
    from mqconform.scenario import ScenarioError, load

    try:
        if args.profile:
            load_profile(args.profile)
        options = adapter_options(args)
        scenarios = [load(path) for path in args.files]
        args.registry = load_deviations(args.deviations)
        if args.versions is None:
            return _exit_code(_run_all(args, scenarios, options))
        if args.adapter == "reference" or "url" in options or "server_bin" in options:
            return fail("scenario --versions starts each release's own server: name a release line's "
                        "adapter (nats, redis, artemis, kafka) and drop --url / -o server_bin")
        releases = resolve(args.adapter, args.versions)
        binaries = {release.version: binary(release) for release in releases}  # all fetched up front
    except ScenarioError as exc:
        return fail(str(exc))
    except (ReleaseError, DeviationError) as exc:
        return fail(f"scenario: {exc}")
    except (ModelMisuse, ValueError) as exc:
        return fail(str(exc))
    table: dict[str, list[Any]] = {}
    for version, path in binaries.items():
        if not args.quiet:
            print(f"== {args.adapter} {version}")
        outcomes = _run_all(args, scenarios, {**options, "server_bin": str(path)})
        if isinstance(outcomes, int):
            return outcomes
        table[version] = outcomes
    _print_bisect(table, [scenario.name for scenario in scenarios])
    return _exit_code([outcome for outcomes in table.values() for outcome in outcomes])


def _exit_code(outcomes: list[Any] | int) -> int:
    if isinstance(outcomes, int):
        return outcomes
    codes = [outcome.exit_code for outcome in outcomes]
    for code in (2, 1, 3):
        if code in codes:
            return code
    return 0


#: how a release's verdict on one scenario reads in the bisect table
_CELL = {"pass": "PASS", "fail": "FAIL", "not_applicable": "N/A", "unknown": "UNKNOWN", "invalid": "INVALID",
         "deviation": "DEVIATION"}


def _print_bisect(table: dict[str, list[Any]], names: list[str]) -> None:
    """One line per scenario: its verdict on each release (oldest first) and the releases that fail it,
    first to last: where a behaviour begins and ends."""
    versions = list(table)
    width = max(len(v) for v in versions)
    print()
    print("releases: " + ", ".join(versions))
    for index, name in enumerate(names):
        print(name)
        for version in versions:
            print(f"  {version:<{width}}  {_CELL[table[version][index].verdict]}")
        failing = [v for v in versions if table[v][index].verdict in ("fail", "deviation")]
        span = f"{failing[0]} .. {failing[-1]} ({len(failing)} of {len(versions)})" if failing else "none"
        print(f"  fails on: {span}")


def _run_all(args: argparse.Namespace, scenarios: list[Any], options: dict[str, Any]) -> list[Any] | int:
    """Every scenario on one adapter (a fresh model per scenario); their outcomes, or an exit code when
    the adapter cannot be loaded or reached."""
    from mqconform.adapters.contract import AdapterError
    from mqconform.adapters.registry import AdapterLoadError
    from mqconform.reference_model.errors import ModelMisuse
    from mqconform.scenario import run_scenario

    printer = (lambda _line: None) if args.quiet else print
    outcomes: list[Any] = []
    adapter = None
    try:
        for path, scenario in zip(args.files, scenarios, strict=True):
            try:
                if adapter is None or args.adapter == "reference":
                    adapter = _adapter(args, scenario, options)
            except (AdapterLoadError, ModelMisuse, ValueError) as exc:
                return fail(f"{scenario.name}: {exc}")
            if not args.quiet:
                claimed = scenario.model_options(args.profile).name if args.adapter == "reference" else \
                    getattr(adapter, "profile", "?")
                print(f"{scenario.name}: adapter {args.adapter} ({claimed})")
            try:
                outcome = run_scenario(scenario, adapter, strict=args.strict, printer=printer)
            except AdapterError as exc:
                return fail(f"{args.adapter}: cannot reach the implementation: {exc}", 3)
            if not args.quiet:
                for note in outcome.not_applicable:
                    print(f"      not applicable: {note}")
            if outcome.verdict == "fail" and args.adapter != "reference":
                outcome = _known_bug(args, path, scenario, adapter, outcome)
            print(outcome.verdict_line(), flush=True)
            outcomes.append(outcome)
    finally:
        shutdown = getattr(adapter, "shutdown", None)
        if callable(shutdown):
            with contextlib.suppress(Exception):
                shutdown()
    return outcomes


def _known_bug(args: argparse.Namespace, path: Path, scenario: Any, adapter: Any, outcome: Any) -> Any:
    """A failing outcome, as the registry sees it: a ``deviation`` when the file is the regression
    scenario of a registered bug of this adapter and release (still ``fail`` under ``--strict``), with
    a line naming the bug; registered bugs the scenario only looks like are named and excuse nothing."""
    from mqconform.conformance.judging.known_scenarios import describe, known_bugs

    steps = [{step.op: step.args} for step in scenario.steps if step.op is not None]
    profile = scenario.model_options(args.profile).name
    bugs = known_bugs(args.registry, path, steps, str(getattr(adapter, "name", args.adapter)),
                      str(getattr(adapter, "server_version", "") or ""), profile,
                      str(getattr(adapter, "profile", profile)), implementation=adapter,
                      options=scenario.options)
    for alike in bugs.alike:
        print(f"      alike: registered bug {describe(alike)}, of another scenario: this failure is not "
              "excused")
    entry = bugs.explained_by
    if entry is None:
        return outcome
    for bug in (entry, entry.together) if entry.together is not None else (entry,):
        print(f"      known bug: {bug.reason}")
        print(f"      registered: {describe(attrs.evolve(bug, together=None))}")
    if entry.together is not None:
        print("      the two together: neither bug model alone gives what the implementation answered")
    if args.strict:
        print("      --strict: a registered bug still fails")
        return outcome
    return attrs.evolve(outcome, verdict="deviation")
