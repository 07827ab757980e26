"""`mqconform bisect FILE --adapter A`: the releases where a scenario or counterexample starts to fail and
starts to hold again, by binary search over the adapter's served releases.

Each probe replays FILE on one release's own server (as ``mqconform scenario --versions`` does), twice by
default (``--repeat``): a release whose replays disagree is *flaky* and is reported, never bisected on.
The two ends are probed first; where they differ, a binary search finds the boundary; where they agree,
the middle release is probed too, and a differing middle is bisected on both sides (a window that fails
only in between). Where the oldest release cannot express the scenario (NOT_APPLICABLE: a feature the
line gained later), the first release that can is found by binary search, the answer names the
releases before it as not applicable, and the search goes on from it. A release that cannot be had
(not served, not downloadable) is named and ends the search. Known bugs excuse nothing here: a failure
is a failure.

Exit codes: 0 the search ended with an answer, 1 a probe was flaky or gave no verdict (N/A, UNKNOWN),
2 bad usage or an invalid file, 3 a release could not be had or its server not reached.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from mqconform.commands._common import adapter_options, add_adapter_arguments, fail


class _Stop(Exception):
    """The search cannot go on: the line to print and the exit code."""

    def __init__(self, line: str, code: int) -> None:
        super().__init__(line)
        self.line, self.code = line, code


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE",
                        help="a scenario or counterexample file (.yaml or .json)")
    add_adapter_arguments(parser, "nats")
    parser.add_argument("--versions", default="all", metavar="V1,V2,...|all",
                        help="the releases to search, as `mqconform matrix --versions` takes them (default: "
                             "all that the adapter's line serves)")
    parser.add_argument("--profile", help="profile the file is checked against (default: the file's)")
    parser.add_argument("--repeat", type=int, default=2, metavar="N",
                        help="replays per release; releases whose replays disagree are flaky (default 2)")


class _Probe:
    """Replays the scenario on one release at a time, remembering each verdict."""

    def __init__(self, args: argparse.Namespace, scenario: Any, options: dict[str, Any]) -> None:
        self.args, self.scenario, self.options = args, scenario, options
        self.seen: dict[str, str] = {}
        self.replays = 0

    def verdict(self, release: Any, applicable_only: bool = True) -> str:
        """``fail`` or ``pass`` on `release` (_Stop when flaky, without a verdict or not to be had);
        ``not_applicable`` too when not `applicable_only`. Each release is replayed once."""
        if release.version not in self.seen:
            self.seen[release.version] = self._replayed(release)
        verdict = self.seen[release.version]
        if verdict in ("pass", "fail") or (verdict == "not_applicable" and not applicable_only):
            return verdict
        raise _Stop(f"{release.version}: no verdict ({verdict.upper()}); not bisected on", 1)

    def _replayed(self, release: Any) -> str:
        """The verdict `args.repeat` replays on `release` agree on (_Stop when they disagree)."""
        path = self._server(release)
        verdicts = []
        for _ in range(max(1, self.args.repeat)):
            start = time.monotonic()
            outcome = self._replay(path)
            self.replays += 1
            verdicts.append(outcome.verdict)
            where = f" at step {outcome.step} ({outcome.op or 'expect'})" if outcome.step is not None else ""
            seconds = time.monotonic() - start
            print(f"  {release.version:<10} {outcome.verdict.upper():<6}{where}  {seconds:.1f} s", flush=True)
        if len(set(verdicts)) > 1:
            said = ", ".join(v.upper() for v in verdicts)
            raise _Stop(f"{release.version} is flaky: {said} in {len(verdicts)} replays; not bisected on", 1)
        return str(verdicts[0])

    def _server(self, release: Any) -> Path:
        """The release's server, fetched into the cache (_Stop when it cannot be had)."""
        from mqconform.releases import ReleaseError, binary

        try:
            return binary(release)
        except ReleaseError as exc:
            raise _Stop(f"{release.version}: cannot be had: {exc}", 3) from None

    def _replay(self, path: Path) -> Any:
        from mqconform.adapters.contract import AdapterError
        from mqconform.adapters.registry import AdapterLoadError, load_adapter
        from mqconform.conformance.execution import shutdown
        from mqconform.scenario import run_scenario

        adapter = None
        try:
            adapter = load_adapter(self.args.adapter, **{**self.options, "server_bin": str(path)})
            return run_scenario(self.scenario, adapter, strict=False, printer=lambda _line: None)
        except (AdapterLoadError, AdapterError, ValueError) as exc:
            raise _Stop(f"{self.args.adapter}: cannot reach the implementation: {exc}", 3) from None
        finally:
            shutdown(adapter)


def _first_change(probe: _Probe, releases: list[Any], lo: int, hi: int) -> int:
    """The index of the first release in (lo, hi] whose verdict differs from release lo's, given that
    release hi's differs (binary search: the verdict changes once between them)."""
    start = probe.verdict(releases[lo])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe.verdict(releases[mid]) == start:
            lo = mid
        else:
            hi = mid
    return hi


def bisect(probe: _Probe, releases: list[Any]) -> str:
    """The answer line (see the module docstring)."""
    if probe.verdict(releases[0], applicable_only=False) != "not_applicable":
        return _bisect(probe, releases)
    if len(releases) == 1 or probe.verdict(releases[-1], applicable_only=False) == "not_applicable":
        ends = " nor on ".join(dict.fromkeys((releases[0].version, releases[-1].version)))
        raise _Stop(f"no verdict: not applicable on {ends}; not bisected on", 1)
    lo, hi = 0, len(releases) - 1  # lo not applicable, hi applicable: the line gained it once between
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe.verdict(releases[mid], applicable_only=False) == "not_applicable":
            lo = mid
        else:
            hi = mid
    gained = releases[hi].version
    return (f"not applicable on {releases[0].version} .. {releases[lo].version}; from {gained}: "
            f"{_bisect(probe, releases[hi:])}")


def _bisect(probe: _Probe, releases: list[Any]) -> str:
    """The answer line over releases that can all express the scenario."""
    names = [r.version for r in releases]
    first, last = probe.verdict(releases[0]), probe.verdict(releases[-1])
    if len(releases) == 1:
        return f"{'fails' if first == 'fail' else 'holds'} on {names[0]}, the only release tried"
    if first != last:
        change = _first_change(probe, releases, 0, len(releases) - 1)
        if first == "fail":
            return (f"fails on {names[0]} .. {names[change - 1]}; first release that holds: {names[change]} "
                    f"(holds through {names[-1]})")
        return (f"holds on {names[0]} .. {names[change - 1]}; first release that fails: {names[change]} "
                f"(fails through {names[-1]})")
    mid = len(releases) // 2
    if mid in (0, len(releases) - 1) or probe.verdict(releases[mid]) == first:
        verb = "fails" if first == "fail" else "holds"
        probed = sorted((v for v in probe.seen if v in names), key=names.index)
        return (f"{verb} on every release probed ({', '.join(probed)} of {len(names)}): no boundary between "
                f"{names[0]} and {names[-1]}")
    start = _first_change(probe, releases, 0, mid)
    end = _first_change(probe, releases, mid, len(releases) - 1)
    inside = "fails" if first == "pass" else "holds"
    outside = "holds" if first == "pass" else "fails"
    return (f"{inside} from {names[start]} through {names[end - 1]}; {outside} before {names[start]} and "
            f"again from {names[end]}")


def run(args: argparse.Namespace) -> int:
    from mqconform.reference_model.errors import ModelMisuse
    from mqconform.releases import ReleaseError, resolve
    from mqconform.scenario import ScenarioError, load

    if args.repeat < 1:
        return fail("bisect: --repeat must be at least 1")
    if args.adapter == "reference":
        return fail("bisect: the reference adapter has no releases; name a release line's adapter "
                    "(nats, redis, artemis, kafka, ...)")
    try:
        options = adapter_options(args)
        if "url" in options or "server_bin" in options:
            return fail("bisect starts each release's own server: drop --url / -o server_bin")
        scenario = load(args.file)
        if args.profile:
            scenario = _with_profile(scenario, args.profile)
        releases = resolve(args.adapter, args.versions)
    except ScenarioError as exc:
        return fail(str(exc))
    except ReleaseError as exc:
        return fail(f"bisect: {exc}", 3)
    except (ModelMisuse, ValueError) as exc:
        return fail(f"bisect: {exc}")
    print(f"bisect {args.file} on {args.adapter}: {len(releases)} releases, {releases[0].version} .. "
          f"{releases[-1].version}; {args.repeat} replay(s) each")
    probe = _Probe(args, scenario, options)
    start = time.monotonic()
    try:
        answer = bisect(probe, releases)
    except _Stop as stop:
        print(f"{args.file}: {stop.line} ({probe.replays} replays, {time.monotonic() - start:.0f} s)")
        return stop.code
    print(f"{args.file}: {answer} ({len(probe.seen)} releases probed, {probe.replays} replays, "
          f"{time.monotonic() - start:.0f} s)")
    return 0


def _with_profile(scenario: Any, name: str) -> Any:
    import attrs

    from mqconform.reference_model.profiles import profile

    profile(name)  # ModelMisuse naming the known ones
    return attrs.evolve(scenario, profile=name)
