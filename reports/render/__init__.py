"""Rendering: the compliance matrix (:mod:`.matrix`) built from a PipelineResult, and the report formats
written from it.

:data:`RENDERERS` is the one list of formats (format name -> :class:`Renderer`, in the order they are
written); :func:`write_report` writes them all into a report directory (`mqconform report`, and the
reports that `run`, `matrix` and `soak` build at their end).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from mqconform.spec import Catalogue

from .html import write_html
from .jsonout import write_json
from .junit import write_junit
from .markdown import write_markdown
from .matrix import Matrix
from .versions import write_versions


@attrs.frozen
class Renderer:
    """One report format: what it writes into the report directory, and the function that writes it
    (it returns its main file, or None when the matrix gives it nothing to show)."""

    files: tuple[str, ...]
    write: Callable[[Matrix, Catalogue, Path], Path | None]


#: format name -> renderer; the first one's main file is the report's index page.
RENDERERS: Mapping[str, Renderer] = {
    "html": Renderer(("index.html", "rules/", "cx/"), write_html),
    "junit": Renderer(("junit.xml",), lambda m, c, out: write_junit(m, c, out / "junit.xml")),
    "json": Renderer(("report.json",), lambda m, c, out: write_json(m, c, out / "report.json")),
    "markdown": Renderer(("summary.md",), lambda m, _c, out: write_markdown(m, out / "summary.md")),
    # only when an implementation was run in several versions (`mqconform matrix`)
    "versions": Renderer(("versions.html", "versions.md"), write_versions),
}


def write_report(matrix: Matrix, catalogue: Catalogue, out: Path) -> dict[str, Path | None]:
    """Write every format of :data:`RENDERERS` into `out` (created when missing): format name -> the
    main file it wrote, or None for a format with nothing to show."""
    out.mkdir(parents=True, exist_ok=True)
    return {name: renderer.write(matrix, catalogue, out) for name, renderer in RENDERERS.items()}
