"""`mqconform spec`: list the spec rules (id, kind, profiles, statement, source)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--area", help="only this area (ring, paging, ...)")
    parser.add_argument("--profile", help="only rules that apply to this profile")


def run(args: argparse.Namespace) -> int:
    from mqconform.commands._common import fail
    from mqconform.spec import PROFILES, SpecError, load_catalogue

    try:
        catalogue = load_catalogue()
    except SpecError as exc:
        return fail(str(exc))
    if args.profile and args.profile not in PROFILES:
        return fail(f"unknown profile {args.profile!r} (known: {', '.join(PROFILES)})")
    rules = list(catalogue.for_profile(args.profile)) if args.profile else list(catalogue)
    if args.area:
        rules = [r for r in rules if r.area == args.area]
        if not rules:
            return fail(f"no rules in area {args.area!r}")
    for rule in rules:
        print(f"{rule.id:<15} {rule.kind:<8} {rule.statement}")
        print(f"{'':<15} source: {rule.source}")
    print(f"{len(rules)} rules")
    return 0
