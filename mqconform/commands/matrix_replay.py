"""`mqconform matrix` by replay (its default; `--explore-all` explores every release instead).

The releases are cut into capability groups (consecutive releases of one capability set, as the
adapter's module says it without a server: ``capabilities_for(version)``; one group when it has
none). Phase 1 explores every area once per group, on the group's newest release, as a task of
`--explore-all` does, keeping the corpus of the exploration (mqconform.conformance.exploring.corpus): its
examples, distilled to `k` per check reached plus its counterexamples, replayed on that release
itself first. Phase 2 replays each area's distilled corpus on every other release of the group, one
task per (release, area), without Hypothesis (mqconform.conformance.exploring.corpus_replay): a divergence is
a finding of that release, shrunk there. Each replayed release's run directory says which release's
corpus it replayed (``run.json`` campaign ``replayed_from``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def capabilities_function(adapter: Any) -> Callable[[str], Any] | None:
    """The adapter's ``capabilities_for(version)``: in its class's module, its package or the
    package's ``capabilities`` module (nats: mqconform.adapters.nats.capabilities); None without one
    (then every release is one group). matrix._capabilities_of, which `--group` uses, reads the
    class's module only and is left as it is."""
    import importlib

    module = type(adapter).__module__
    package = module.rpartition(".")[0]
    for name in (module, package, f"{package}.capabilities"):
        try:
            found = getattr(importlib.import_module(name), "capabilities_for", None)
        except ImportError:
            continue
        if callable(found):
            return found  # type: ignore[no-any-return]
    return None


def explore_and_replay(plan: Any, groups: list[list[Any]], areas: list[str], run_ids: dict[str, str], k: int,
                       run_tasks: Callable[[list[Any]], list[Any] | int]) -> list[Any] | int:
    """Both phases (see the module docstring); the task results of both, or the exit code of an
    interrupted or failed dispatch (`run_tasks`: matrix._run_tasks with its engine)."""
    from mqconform.conformance.campaign import CampaignTask, ReplayTask

    explore = [CampaignTask(plan, group[-1], area, run_ids[group[-1].version], corpus_k=k)
               for group in groups for area in areas]
    print("matrix: capability groups, each explored on its newest release and replayed on the others: "
          + "; ".join(_describe(group) for group in groups), flush=True)
    first = run_tasks(explore)
    if isinstance(first, int):
        return first
    explored = {(result.release, result.area): result for result in first}
    replays = []
    for group in groups:
        newest = group[-1].version
        for area in areas:
            found = explored[(newest, area)]
            unknown = found.fault or found.result.unknown
            replays.append([ReplayTask(plan, release, area, run_ids[release.version], newest, found.corpus,
                                       frozenset(found.result.checked), unknown, found.capabilities)
                            for release in group[:-1]])
    tasks = [task for per_area in replays for task in per_area]
    examples = sum(len(explored[(g[-1].version, a)].corpus) for g in groups for a in areas)
    print(f"matrix: {len(explore)} exploration task(s) done; {len(tasks)} replay task(s) of "
          f"{examples} distilled example(s) in all", flush=True)
    second = run_tasks(tasks) if tasks else []
    if isinstance(second, int):
        return second
    return first + second


def _describe(group: list[Any]) -> str:
    first, last = group[0].version, group[-1].version
    return f"{first}..{last} ({len(group)}, on {last})" if first != last else f"{last} (1)"
