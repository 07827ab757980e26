"""Argument helpers shared by sub-commands."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any


def parse_options(pairs: list[str] | None) -> dict[str, Any]:
    """`key=value` strings to a dict; values that look like ints/bools become them."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"adapter option {pair!r} is not key=value")
        low = value.lower()
        options[key] = (True if low == "true" else False if low == "false"
                        else int(value) if value.lstrip("-").isdigit() else value)
    return options


def add_adapter_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--adapter", default=os.environ.get("MQCONFORM_ADAPTER", default),
                        help=f"built-in adapter name, module:Class or entry point (default: {default})")
    parser.add_argument("--adapter-option", "-o", action="append", metavar="KEY=VALUE",
                        help="option passed to the adapter (repeatable), e.g. -o url=nats://127.0.0.1:4222")
    parser.add_argument("--url", help="shorthand for -o url=URL (use an existing broker)")


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds must be positive")
    return value


def add_shrink_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shrink-seconds", type=positive_seconds, metavar="S",
                        help="stop shrinking a failure after S seconds and report the smallest "
                             "counterexample found until then, marked as cut (default: 90 on an "
                             "adapter with a real clock, else Hypothesis' 300)")


def adapter_options(args: argparse.Namespace) -> dict[str, Any]:
    options = parse_options(args.adapter_option)
    if args.url:
        options["url"] = args.url
    return options


def fail(message: str, code: int = 2) -> int:
    import sys

    print(f"mqconform: {message}", file=sys.stderr)
    return code


class Replayer:
    """The adapter a bug model's replay runs on (verdict.Judge): the probe while it answers, else one
    built on the first call and shut down with the run."""

    def __init__(self, probe: Any | None, build: Callable[[], Any]) -> None:
        self.adapter = probe
        self.build = build
        self.built = False

    def __call__(self) -> Any:
        if self.adapter is None:
            self.adapter, self.built = self.build(), True
        return self.adapter

    def shutdown(self) -> None:
        if self.built:
            from mqconform.conformance.execution import shutdown

            shutdown(self.adapter)
