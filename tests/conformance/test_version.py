"""`mqconform --version`: the package's version, exit 0."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

from mqconform.cli import main, package_version

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _pyproject_version() -> str:
    return str(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"])


def test_version_prints_the_installed_version_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"mqconform {importlib.metadata.version('mqconform')}\n"


def test_version_falls_back_to_pyproject_when_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert package_version() == _pyproject_version()


def test_the_installed_version_is_pyproject_s() -> None:
    assert package_version() == _pyproject_version()
