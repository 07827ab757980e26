"""One task of a version campaign (`mqconform matrix`): one area of the suite against one release.

:func:`run_task` is what a Spark worker (or the driver itself, ``--engine python``) runs: it gets the
release's server binary (:mod:`mqconform.releases`; cached on the worker's machine), builds the
adapter on it (the adapter starts its own server: ``server_bin``), probes it for the server's
version, runs the area's machine as `mqconform run` does (the same settings and seed; the driver
takes the verdict, known deviations included) with its history written into a scratch run
directory, and returns the :class:`~mqconform.conformance.exploring.runner.MachineResult` with the files it
wrote, packed, so the driver can unpack them into the release's run directory wherever the task
ran (no shared file system needed).
Nothing here raises: a release that cannot be had or a server that does not answer is a *fault*,
and the area's rules are unknown.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

from mqconform.history import RunDirectory
from mqconform.releases import Release

from .exploring.corpus import Example, Recorder, counterexamples, distil
from .exploring.corpus import write as write_corpus
from .exploring.corpus_replay import baseline, replay_area
from .exploring.runner import RECORDER, MachineResult, gives_a_model
from .plan import RunPlan


@attrs.frozen
class CampaignTask:
    """One area of the campaign's plan against one release (pickled to a Spark worker)."""

    plan: RunPlan
    release: Release
    area: str
    run_id: str
    #: keep the exploration's corpus and distil it, that many examples per check (0: no corpus, as
    #: `matrix --explore-all`); see mqconform.conformance.exploring.corpus
    corpus_k: int = 0


@attrs.frozen
class TaskResult:
    """What a task sends back: its area's result, the server's version, and the files it wrote."""

    release: str
    area: str
    result: MachineResult
    fault: str | None
    server_version: str
    files: bytes  # a tar.gz of the scratch run directory (history/<area>.jsonl, .hypothesis/)
    host: str
    seconds: float
    #: the lockstep group the release ran in (its releases, joined by commas) and the group task's
    #: seconds (`seconds` is then this release's share); empty for a task of one release
    group: str = ""
    group_seconds: float = 0.0
    #: lockstep: the examples this release left because its machine no longer enabled the rules the
    #: model's did (it explored less than it would alone: the matrix says so)
    left: int = 0
    #: an exploration with a corpus: its distilled examples (corpus.Example.as_json), replayed on the
    #: group's other releases
    corpus: tuple[dict[str, Any], ...] = ()
    #: a replayed release: the release whose exploration's corpus it replayed ("" when it explored)
    replayed_from: str = ""
    #: an exploration with a corpus: the capabilities its adapter showed (a release replaying its
    #: corpus must show the same, or it explores itself)
    capabilities: frozenset[str] = frozenset()


def run_task(task: CampaignTask) -> TaskResult:
    """Run one (release, area) task; see the module docstring."""
    from .execution import shutdown
    from .exploring.runner import database, fault_reason

    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="mqc-task-"))
    corpus: tuple[dict[str, Any], ...] = ()
    plan = task.plan
    adapter, server_version, fault = _open_release(plan, task.release, task.area)
    try:
        if fault is not None:
            result = MachineResult(task.area, unknown=fault)
        else:
            try:
                claimed = plan.claimed(adapter)
                (scratch / "history").mkdir()
                run = RunDirectory.attach(scratch, adapter.name, claimed.name, task.run_id,
                                          time.monotonic_ns())
                recorder = Recorder() if task.corpus_k else None
                token = RECORDER.set(recorder)
                try:
                    result = plan.explore(task.area, lambda: adapter, claimed, run,
                                          database=database(scratch), known=_known(plan, adapter, claimed))
                finally:
                    RECORDER.reset(token)
                if recorder is not None:
                    try:  # the exploration's verdict stands whatever becomes of its corpus
                        corpus = _distilled(task, recorder, result, adapter, claimed, scratch)
                    except (Exception, BaseExceptionGroup) as exc:
                        (scratch / "corpus").mkdir(exist_ok=True)
                        (scratch / "corpus" / f"{task.area}.error").write_text(fault_reason(exc) + "\n")
            except (Exception, BaseExceptionGroup) as exc:  # a fault: never a traceback, never a pass
                fault = f"area {task.area}: {fault_reason(exc)}"
                result = MachineResult(task.area, unknown=fault)
            finally:
                shutdown(adapter)
        return TaskResult(task.release.version, task.area, result, fault, server_version, _pack(scratch),
                          socket.gethostname(), time.perf_counter() - started, corpus=corpus,
                          capabilities=frozenset(getattr(adapter, "capabilities", ())) if task.corpus_k
                          else frozenset())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _known(plan: RunPlan, adapter: Any, claimed: Any) -> Any:
    """Does a bug model of the plan's registry explain a violation on this release as it is found
    (replayed on `adapter`)? None without a registry (RunPlan.deviations)."""
    if plan.deviations is None:
        return None
    from .judging.verdict import Judge

    judge = Judge(plan.deviations, str(getattr(adapter, "name", "") or plan.adapter),
                  str(getattr(adapter, "server_version", "")), claimed.name,
                  str(getattr(adapter, "profile", "") or claimed.name), adapter_factory=lambda: adapter)
    # a bug model's entries only: a shape's entry taken as found cut the paging area's exploration of
    # page limits on 2.40.0 (PAGING-13..16 and -30 not reached; docs/measurements.md)
    return gives_a_model(judge.bug_model)


def _distilled(task: CampaignTask, recorder: Recorder, result: MachineResult, adapter: Any, claimed: Any,
               scratch: Path) -> tuple[dict[str, Any], ...]:
    """The exploration's corpus distilled (corpus.distil, `task.corpus_k` per check, with its
    counterexamples) and replayed on the explored release itself (corpus_replay.baseline); written
    into the run directory as ``corpus/<area>.jsonl`` (every example kept) and
    ``corpus/<area>.distilled.jsonl``."""
    if result.needs is not None or result.unknown:
        return ()
    chosen = distil(recorder.examples, task.corpus_k, counterexamples(result.findings))
    kept = baseline(chosen, claimed, adapter, task.area)
    write_corpus(scratch / "corpus" / f"{task.area}.jsonl", recorder.examples)
    write_corpus(scratch / "corpus" / f"{task.area}.distilled.jsonl", kept)
    return tuple(example.as_json() for example in kept)


@attrs.frozen
class ReplayTask:
    """One area of the campaign's plan replayed on one release from another release's distilled
    corpus (pickled to a Spark worker): no Hypothesis (mqconform.conformance.exploring.corpus_replay)."""

    plan: RunPlan
    release: Release
    area: str
    run_id: str
    explored: str
    corpus: tuple[dict[str, Any], ...]
    reached: frozenset[str]
    #: why the exploration gave no verdict (its fault or unknown): the replay has none either
    unknown: str | None = None
    #: the capabilities the exploration's adapter showed (empty: not known)
    capabilities: frozenset[str] = frozenset()


def run_replay(task: ReplayTask) -> TaskResult:
    """Replay one area's corpus on one release: its own server, probed as run_task probes it. A
    release whose server shows a capability the explored one lacks (an adapter without
    ``capabilities_for``, whose releases are one group) explores the area itself (run_task): the
    corpus cannot reach what it alone has. One with fewer capabilities replays the examples it can
    express (corpus_replay)."""
    from .execution import shutdown
    from .exploring.runner import fault_reason

    started = time.perf_counter()
    adapter, server_version, fault = _open_release(task.plan, task.release, task.area)
    if fault is None and task.capabilities and not frozenset(adapter.capabilities) <= task.capabilities:
        shutdown(adapter)
        return run_task(CampaignTask(task.plan, task.release, task.area, task.run_id))
    try:
        if fault is not None:
            result = MachineResult(task.area, unknown=fault)
        elif task.unknown is not None:
            result = MachineResult(task.area, unknown=f"the exploration on {task.explored}: {task.unknown}")
        else:
            try:
                claimed = task.plan.claimed(adapter)
                result = replay_area(task.area, [Example.from_json(e) for e in task.corpus], lambda: adapter,
                                     claimed, reached=task.reached, explored=task.explored,
                                     max_findings=task.plan.max_findings)
            except (Exception, BaseExceptionGroup) as exc:  # a fault: never a traceback, never a pass
                fault = f"area {task.area}: {fault_reason(exc)}"
                result = MachineResult(task.area, unknown=fault)
    finally:
        shutdown(adapter)
    scratch = Path(tempfile.mkdtemp(prefix="mqc-task-"))
    try:
        write_corpus(scratch / "corpus" / f"{task.area}.replayed.jsonl",
                     [Example.from_json(e) for e in task.corpus])
        if result.replays:  # each example's verdict on this release, line n for example n
            (scratch / "corpus" / f"{task.area}.replays.jsonl").write_text(
                "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in result.replays))
        return TaskResult(task.release.version, task.area, result, fault, server_version, _pack(scratch),
                          socket.gethostname(), time.perf_counter() - started, replayed_from=task.explored)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    return buffer.getvalue()


def unpack(files: bytes, into: Path) -> None:
    """Unpack a task's files into the release's run directory (regular files only, inside `into`)."""
    with tarfile.open(fileobj=io.BytesIO(files), mode="r:gz") as archive:
        archive.extractall(into, filter="data")


@attrs.frozen
class GroupTask:
    """One area of the campaign's plan against several releases at once (pickled to a Spark worker):
    the releases of one capability set explore in lockstep (mqconform.conformance.exploring.lockstep)."""

    plan: RunPlan
    releases: tuple[Release, ...]
    area: str
    run_ids: tuple[str, ...]


def run_group(task: GroupTask) -> list[TaskResult]:
    """Run one area on several releases: each release's adapter (its own server) is started and
    probed, the releases are split by capability set (lockstep.partition) and each part explores in
    lockstep; one TaskResult per release, in task order, as run_task gives for that release (a
    release that cannot be had or reached is a fault of its own; the others run)."""
    from concurrent.futures import ThreadPoolExecutor

    from .execution import shutdown
    from .exploring.lockstep import Member, partition, run_lockstep
    from .exploring.registry import MACHINES
    from .exploring.runner import fault_reason

    started = time.perf_counter()
    plan = task.plan
    scratches = [Path(tempfile.mkdtemp(prefix="mqc-task-")) for _ in task.releases]
    with ThreadPoolExecutor(max_workers=len(task.releases) or 1) as pool:
        opened = list(pool.map(lambda release: _open_release(plan, release, task.area), task.releases))
    results: list[MachineResult | None] = [None] * len(task.releases)
    left = [0] * len(task.releases)
    faults: list[str | None] = [fault for _, _, fault in opened]
    try:
        live = [i for i, (adapter, _, fault) in enumerate(opened) if fault is None]
        for part in partition([opened[i][0] for i in live]):
            indexes = [live[i] for i in part]
            try:
                claimed = plan.claimed(opened[indexes[0]][0])
                members = []
                for i in indexes:
                    (scratches[i] / "history").mkdir()
                    run = RunDirectory.attach(scratches[i], opened[i][0].name, claimed.name, task.run_ids[i],
                                              time.monotonic_ns())
                    members.append(Member(task.releases[i].version, opened[i][0], run.history(task.area)))
                hyp = plan.hypothesis(database=None)
                done = run_lockstep(MACHINES[task.area], members, claimed, hyp, max_reruns=plan.max_reruns,
                                    seed_value=plan.seed, cap_real_time=plan.max_examples is None,
                                    shrink_seconds=plan.shrink_seconds)
                for i, member, result in zip(indexes, members, done, strict=True):
                    results[i] = result
                    left[i] = member.left
            except (Exception, BaseExceptionGroup) as exc:  # a fault: never a traceback, never a pass
                for i in indexes:
                    faults[i] = f"area {task.area}: {fault_reason(exc)}"
    finally:
        with ThreadPoolExecutor(max_workers=len(task.releases) or 1) as pool:
            list(pool.map(lambda item: shutdown(item[0]), opened))
    seconds = time.perf_counter() - started
    label = ",".join(r.version for r in task.releases)
    out = []
    for i, release in enumerate(task.releases):
        result = results[i] or MachineResult(task.area, unknown=faults[i])
        out.append(TaskResult(release.version, task.area, result, faults[i], opened[i][1],
                              _pack(scratches[i]), socket.gethostname(), seconds / len(task.releases), label,
                              seconds, left[i]))
        shutil.rmtree(scratches[i], ignore_errors=True)
    return out


def _open_release(plan: RunPlan, release: Release, area: str) -> tuple[Any, str, str | None]:
    """(the release's adapter on its own server, the server's version, None) or (None, "", the fault)."""
    from mqconform.adapters.contract import AdapterError
    from mqconform.releases import ReleaseError, binary

    from .execution import shutdown
    from .exploring.runner import fault_reason

    adapter: Any = None
    try:
        adapter = plan.open_adapter(server_bin=str(binary(release)))
        adapter.open("mqc-probe")
        adapter.close()
        return adapter, str(getattr(adapter, "server_version", "") or ""), None
    except ReleaseError as exc:
        fault = f"area {area}: release {release.version}: {exc}"
    except AdapterError as exc:
        fault = f"area {area}: cannot reach the implementation: {exc}"
    except (Exception, BaseExceptionGroup) as exc:
        fault = f"area {area}: {fault_reason(exc)}"
    shutdown(adapter)
    return None, "", fault
