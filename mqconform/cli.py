"""The `mqconform` command: one sub-command per module in mqconform.commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: sub-command -> (module, one-line help). Each module has add_arguments(parser) and run(args) -> int.
COMMANDS = {
    "run": ("mqconform.commands.run", "run the conformance suite against one adapter and report"),
    "scenario": ("mqconform.commands.scenario", "step scenario files through the model or an adapter"),
    "report": ("mqconform.commands.report", "build compliance reports from run directories"),
    "matrix": ("mqconform.commands.matrix", "the suite over many releases of one implementation (Spark)"),
    "bisect": ("mqconform.commands.bisect", "the release where a scenario starts to fail, and to hold again"),
    "soak": ("mqconform.commands.soak", "concurrent workload with a final drain, checked by the pipeline"),
    "bench": ("mqconform.commands.bench", "print benchmark figures (model, suite, adapters, pipeline)"),
    "spec": ("mqconform.commands.spec", "list the spec rules"),
}


def package_version() -> str:
    """The installed distribution's version; from a checkout that is not installed, pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mqconform")
    except PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, object]]:
    parser = argparse.ArgumentParser(
        prog="mqconform", description="Property-based conformance suite for message-queue semantics.")
    parser.add_argument("--version", action="version", version=f"mqconform {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules: dict[str, object] = {}
    for name, (module_name, help_text) in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        command = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        module.add_arguments(command)
        modules[name] = module
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(modules[args.command].run(args))  # type: ignore[attr-defined]
    except KeyboardInterrupt:
        print("mqconform: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `mqconform spec | head`: the reader left; nothing more to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
