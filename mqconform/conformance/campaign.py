"""One task of a version campaign (`mqconform matrix`): one area of the suite against one release.

:func:`run_task` is what a Spark worker (or the driver itself, ``--engine python``) runs: it gets the
release's server binary (:mod:`mqconform.releases`; cached on the worker's machine), builds the
adapter on it (the adapter starts its own server: ``server_bin``), probes it for the server's
version, runs the area's machine as `mqconform run` does (the same settings and seed; the driver
takes the verdict, known deviations included) with its history written into a scratch run
directory, and returns the :class:`~mqconform.conformance.runner.MachineResult` with the files it
wrote, packed, so the driver can unpack them into the release's run directory wherever the task
ran (no shared file system needed).
Nothing here raises: a release that cannot be had or a server that does not answer is a *fault*,
and the area's rules are unknown.
"""

from __future__ import annotations

import io
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

from .plan import RunPlan
from .runner import MachineResult


@attrs.frozen
class CampaignTask:
    """One area of the campaign's plan against one release (pickled to a Spark worker)."""

    plan: RunPlan
    release: Release
    area: str
    run_id: str


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


def run_task(task: CampaignTask) -> TaskResult:
    """Run one (release, area) task; see the module docstring."""
    from mqconform.adapters.contract import AdapterError
    from mqconform.adapters.registry import load_adapter
    from mqconform.reference_model.profiles import profile as load_profile
    from mqconform.releases import ReleaseError, binary

    from .execution import shutdown
    from .runner import database, fault_reason

    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="mqc-task-"))
    adapter: Any = None
    server_version = ""
    fault: str | None = None
    try:
        try:
            plan = task.plan
            options = {**plan.adapter_options, "server_bin": str(binary(task.release))}
            adapter = load_adapter(plan.adapter, **options)
            adapter.open("mqc-probe")
            adapter.close()
            server_version = str(getattr(adapter, "server_version", "") or "")
            claimed = load_profile(plan.profile or adapter.profile)
            (scratch / "history").mkdir()
            run = RunDirectory.attach(scratch, adapter.name, claimed.name, task.run_id, time.monotonic_ns())
            result = plan.explore(task.area, lambda: adapter, claimed, run, database=database(scratch))
        except ReleaseError as exc:
            fault = f"area {task.area}: release {task.release.version}: {exc}"
            result = MachineResult(task.area, unknown=fault)
        except AdapterError as exc:
            fault = f"area {task.area}: cannot reach the implementation: {exc}"
            result = MachineResult(task.area, unknown=fault)
        except (Exception, BaseExceptionGroup) as exc:  # a fault: never a traceback, never a pass
            fault = f"area {task.area}: {fault_reason(exc)}"
            result = MachineResult(task.area, unknown=fault)
        finally:
            shutdown(adapter)
        return TaskResult(task.release.version, task.area, result, fault, server_version, _pack(scratch),
                          socket.gethostname(), time.perf_counter() - started)
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
