"""`mqconform spec`: list the spec rules (id, kind, profiles, statement, source).

``--coverage``: which rules of an adapter's own profile a conformance run can cover, and for each one
it cannot, the capabilities missing (derived from the checks and the machines' capability gates,
mqconform.conformance.judging.coverage). The figure ``N of M (P %)`` is counted as a run counts its
``rules covered`` (mqconform.conformance.judging.verdict.coverage, over the rules of the profile): a run
covers at most the coverable rules. With ``--adapter`` one adapter, rule by rule; without, a Markdown
table over the built-in adapters (the README's).

``--figures``: the README's figures block (rules per area and the registry's counts), which a test
compares with README.md, so the README's counts are never typed by hand.

``--known-bugs``: docs/known-bugs.md, the registered broker bugs, one row per upstream bug (all the
registry's entries with that source), which a test compares with the file.
"""

from __future__ import annotations

import argparse
from typing import Any

from mqconform.adapters.rooms import rooms

#: the built-in adapters (and options) the coverage table covers, each under its own profile: each broker
#: room's coverage options, in the rooms' order
BUILTIN_TARGETS: tuple[tuple[str, dict[str, Any]], ...] = tuple(
    (room.name, dict(options)) for room in rooms() for options in room.coverage_options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from mqconform.commands._common import add_adapter_arguments

    parser.add_argument("--area", help="only this area (ring, paging, ...)")
    parser.add_argument("--profile", help="only rules that apply to this profile")
    parser.add_argument("--coverage", action="store_true",
                        help="rules of an adapter's own profile a run can cover, and the capability "
                             "missing for each other one (without --adapter: a table of the built-ins)")
    parser.add_argument("--figures", action="store_true",
                        help="the README's figures: rules per area and the registry's counts")
    parser.add_argument("--known-bugs", action="store_true",
                        help="docs/known-bugs.md: the registered broker bugs, one row per upstream bug")
    add_adapter_arguments(parser, "")


def run(args: argparse.Namespace) -> int:
    from mqconform.commands._common import fail
    from mqconform.spec import PROFILES, SpecError, load_catalogue

    try:
        catalogue = load_catalogue()
    except SpecError as exc:
        return fail(str(exc))
    if args.profile and args.profile not in PROFILES:
        return fail(f"unknown profile {args.profile!r} (known: {', '.join(PROFILES)})")
    if args.coverage:
        return _coverage(args, catalogue)
    if args.figures:
        print(figures(catalogue), end="")
        return 0
    if args.known_bugs:
        print(known_bugs(), end="")
        return 0
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


def coverage_of(adapter: Any, catalogue: Any, profile_name: str | None = None) -> tuple[str, list[Any]]:
    """(profile name, RuleCoverage per rule of that profile in catalogue order) for one adapter."""
    from mqconform.conformance.judging.coverage import rule_coverage
    from mqconform.reference_model.profiles import profile

    name = profile_name or adapter.profile
    rules = [r.id for r in catalogue.for_profile(name)]
    table = rule_coverage(rules, profile(name), adapter.capabilities)
    return name, [table[r] for r in rules]


def _coverage(args: argparse.Namespace, catalogue: Any) -> int:
    from mqconform.adapters.registry import AdapterLoadError, load_adapter
    from mqconform.commands._common import adapter_options, fail

    try:
        targets = [(args.adapter, adapter_options(args))] if args.adapter else list(BUILTIN_TARGETS)
        loaded = [(name, options, load_adapter(name, **options)) for name, options in targets]
    except (AdapterLoadError, TypeError, ValueError) as exc:
        return fail(str(exc))
    if args.adapter:
        _, options, adapter = loaded[0]
        profile_name, rows = coverage_of(adapter, catalogue, args.profile)
        if args.area:
            rows = [r for r in rows if catalogue[r.rule].area == args.area]
        for row in rows:
            why = _why(row, catalogue)
            unchecked = catalogue[row.rule].unchecked
            if not row.coverable and not row.lacking and unchecked:
                why += f"; spec: {unchecked}"
            print(f"{row.rule:<15} {'covered' if row.coverable else 'not covered'}"
                  f"{'' if row.coverable else ': ' + why}")
        print(f"{args.adapter} ({profile_name}): rules coverable {_figure(rows, profile_name, adapter)}")
        return 0
    print("| adapter | profile | rules coverable | not covered: capability the adapter lacks (rules) |")
    print("|---|---|---|---|")
    for name, options, adapter in loaded:
        profile_name, rows = coverage_of(adapter, catalogue)
        label = name + "".join(f" -o {k}={v}" for k, v in options.items())
        reasons: dict[str, list[str]] = {}
        for row in rows:
            if not row.coverable:
                reasons.setdefault(_why(row, catalogue, detail=False), []).append(row.rule)
        missing = "; ".join(f"{why}: {_ids(rules)}" for why, rules in
                            sorted(reasons.items(), key=lambda kv: -len(kv[1])))
        print(f"| {label} | {profile_name} | {_figure(rows, profile_name, adapter)} | {missing} |")
    return 0


def _why(row: Any, catalogue: Any, detail: bool = True) -> str:
    """Why a rule is not covered: the coverage's reason, or the spec's `unobservable` reason for a rule
    that no check evidences because its subject cannot be observed through the contract."""
    unobservable = catalogue[row.rule].unobservable
    if row.coverable or row.lacking or not unobservable:
        return str(row.reason())
    return "not observable from outside an adapter" + (f": {unobservable}" if detail else "")


def _figure(rows: list[Any], profile_name: str, adapter: Any) -> str:
    """``N of M (P %)``: the coverable rules of the profile, counted by the function that counts a
    run's covered rules (mqconform.conformance.judging.verdict.coverage), over the same rules, the areas the
    adapter's product does not have set aside as a run sets them aside."""
    from mqconform.conformance.judging.verdict import absent_areas, coverage

    return str(coverage((r.rule for r in rows if r.coverable), profile_name, absent_areas(adapter)))


def _ids(rules: list[str]) -> str:
    """Rule ids for the table: listed when few, else counted per area (``THROTTLE-* (12)``)."""
    if len(rules) <= 3:
        return ", ".join(rules)
    areas: dict[str, int] = {}
    for rule in rules:
        area = rule.rsplit("-", 1)[0]
        areas[area] = areas.get(area, 0) + 1
    return ", ".join(f"{area}-* ({n})" if n > 3 else
                     ", ".join(r for r in rules if r.rsplit("-", 1)[0] == area)
                     for area, n in areas.items())


def figures(catalogue: Any) -> str:
    """The README's figures block: the catalogue's rules per area, and the registry's entries and
    upstream bugs per adapter (mqconform.conformance.judging.verdict.load_deviations: the shipped registry),
    whose rows are docs/known-bugs.md (:func:`known_bugs`)."""
    from collections import Counter

    areas = Counter(rule.area for rule in catalogue)
    lines = [f"The catalogue (`spec/`) has **{sum(areas.values())} rules** in {len(areas)} areas: "
             + ", ".join(f"{area} {count}" for area, count in sorted(areas.items())) + ".", ""]
    bugs = _bugs()
    per_adapter = Counter(entries[0].adapter for entries in bugs.values())
    entries = sum(map(len, bugs.values()))
    lines.append(f"The registry (`mqconform/conformance/judging/deviations.yaml`) has **{entries} known "
                 f"deviations** of {len(bugs)} upstream bugs ("
                 + ", ".join(f"{adapter} {n}" for adapter, n in sorted(per_adapter.items()))
                 + "), one entry per check a bug shows through: one row per bug in "
                 "[docs/known-bugs.md](docs/known-bugs.md).")
    return "\n".join(lines) + "\n"


def _bugs() -> dict[str, list[Any]]:
    """The shipped registry's entries by upstream bug (their source), in file order."""
    from mqconform.conformance.judging.verdict import load_deviations

    bugs: dict[str, list[Any]] = {}
    for entry in load_deviations().deviations:
        bugs.setdefault(entry.source, []).append(entry)
    return bugs


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _distinct(values: Any) -> list[Any]:
    return list(dict.fromkeys(values))


def _releases(versions: Any) -> str:
    from mqconform.conformance.judging.deviations import parse_version

    return ", ".join(sorted(set(versions), key=lambda v: parse_version(v) or ())) or "-"


_KNOWN_BUGS_HEAD = """\
# Known broker bugs

<!-- generated by `mqconform spec --known-bugs`: a test fails when this page and the command disagree -->

The broker bugs of the known-deviation registry (`mqconform/conformance/judging/deviations.yaml`; its keys and
how a finding is matched: [deviations.md](deviations.md)), one row per upstream bug. A bug with a bug
model (reference_model/bugs/) is one entry: a finding of any check is that bug only when its
counterexample, replayed on the implementation against the model with the bug, holds at every step.
A bug without one shows through several checks, each an entry; a finding is a known deviation only
when one entry matches its adapter, server release, profile, check and counterexample shape. To
update this page, paste the output of `mqconform spec --known-bugs`.

**{bugs} bugs, {entries} entries.** Columns: the release range of the entries; the releases replayed that
show the bug (fails) and that do not (holds); the rules it breaks; the checks it shows through (with
their number of entries where more than one); the regression scenarios; what the broker does instead
(the bug's first entry); the upstream evidence. Why an end of a range was not replayed: the entry's
`measured` in the registry.

"""


def _rule_order(rule: str) -> tuple[str, int]:
    area, _, number = rule.rpartition("-")
    return area, int(number) if number.isdigit() else 0


def known_bugs() -> str:
    """docs/known-bugs.md: one row per upstream bug of the shipped registry, with every entry of it
    (the checks it shows through, their rules, the releases measured, the regression scenarios)."""
    bugs = _bugs()
    lines = [*_KNOWN_BUGS_HEAD.format(bugs=len(bugs), entries=sum(map(len, bugs.values()))).splitlines(),
             "| adapter | profiles | releases | fails | holds | rules | shows through (entries) | scenario "
             "| reason | source |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for source, entries in bugs.items():
        first = entries[0]
        adapters = ", ".join(_distinct(e.adapter for e in entries))
        profiles = ", ".join(_distinct(p for e in entries for p in sorted(e.profiles or ("(claimed)",))))
        ranges = "; ".join(f"`{r}`" for r in _distinct(e.versions.text for e in entries))
        fails = _releases(v for e in entries for v in e.measured.fails)
        holds = _releases(v for e in entries for v in e.measured.holds)
        rules = ", ".join(sorted(_distinct(r for e in entries for r in e.rules), key=_rule_order))
        checks: dict[str, int] = {}
        for e in entries:
            if e.model is not None:  # its bug model's replay decides, whatever the check
                name = f"any check: bug model `{e.model}`"
            else:
                name = f"{'history ' if e.history else ''}`{e.check}`"
            checks[name] = checks.get(name, 0) + 1
        shown = ", ".join(f"{name} ({n})" if n > 1 else name for name, n in checks.items())
        scenarios = ", ".join(f"[{path.rsplit('/', 1)[-1]}](../{path})"
                              for path in _distinct(e.scenario for e in entries if e.scenario)) or "-"
        lines.append(f"| {adapters} | {profiles} | {ranges} | {fails} | {holds} | {rules} | {shown} | "
                     f"{scenarios} | {_cell(first.reason)} | {source} |")
    return "\n".join(lines) + "\n"
