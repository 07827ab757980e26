"""`mqconform scenario FILE...`: step scenario files through the model (or any adapter).

Exit codes: 0 every applicable `expect` held, 1 a mismatch (expected vs actual, with the step
number), 2 an invalid file (file:line: what is wrong) or bad usage, 3 the adapter answered `info`
(unknown) or could not be reached.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from mqconform.commands._common import adapter_options, add_adapter_arguments, fail


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="scenario files (.yaml or .json)")
    add_adapter_arguments(parser, "reference")
    parser.add_argument("--profile",
                        help="profile of the reference model (default: the file's, else artemis)")
    parser.add_argument("--strict", action="store_true",
                        help="an expectation or operation the adapter cannot observe or run fails")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the verdict lines")


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
    from mqconform.adapters.contract import AdapterError
    from mqconform.adapters.registry import AdapterLoadError
    from mqconform.reference_model.errors import ModelMisuse
    from mqconform.reference_model.profiles import profile as load_profile
    from mqconform.scenario import ScenarioError, load, run_scenario

    try:
        if args.profile:
            load_profile(args.profile)
        options = adapter_options(args)
        scenarios = [load(path) for path in args.files]
    except ScenarioError as exc:
        return fail(str(exc))
    except (ModelMisuse, ValueError) as exc:
        return fail(str(exc))

    printer = (lambda _line: None) if args.quiet else print
    codes: list[int] = []
    adapter = None
    try:
        for scenario in scenarios:
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
            print(outcome.verdict_line(), flush=True)
            codes.append(outcome.exit_code)
    finally:
        shutdown = getattr(adapter, "shutdown", None)
        if callable(shutdown):
            with contextlib.suppress(Exception):
                shutdown()
    for code in (2, 1, 3):
        if code in codes:
            return code
    return 0
