"""Progress of long work: a live status line on a terminal, plain lines elsewhere.

A run of an area can take minutes (a real-time broker sleeps on its clock) and a matrix an hour.
`Heartbeat` shows what `describe()` says while a block runs: on a terminal one line rewritten in
place every half second and cleared at the end; when the output is a file or a pipe (CI logs), a plain
line every `every` seconds, so a log shows the run is alive without drowning in updates.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

import attrs


@attrs.define
class AreaProgress:
    """What an area's run has done so far (the runner updates it; the heartbeat reads it)."""

    area: str
    started: float = attrs.field(factory=time.perf_counter)
    examples: int = 0  # of finished reruns; the running one is read from `context`
    findings: int = 0
    context: Any = None  # the RunContext of the running exploration (its `examples` counts live)

    def describe(self) -> str:
        running = int(getattr(self.context, "examples", 0) or 0)
        return (f"{self.area}: {self.examples + running} examples, {self.findings} finding(s), "
                f"{time.perf_counter() - self.started:.0f} s")


class Heartbeat:
    """Show `describe()` while the `with` block runs (see the module docstring)."""

    def __init__(self, describe: Callable[[], str], stream: TextIO | None = None, tty: bool | None = None,
                 every: float = 60.0, tick: float = 0.5) -> None:
        self.describe = describe
        self.stream = stream if stream is not None else sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.every = every
        self.tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mqconform-progress", daemon=True)
        self._shown = False
        self._lock = threading.Lock()

    def say(self, text: str) -> None:
        """Print a line of the work's own output (the live line is cleared first and comes back)."""
        with self._lock:
            if self.tty and self._shown:
                self.stream.write("\r\x1b[K")
            self.stream.write(text + "\n")
            self.stream.flush()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            if self.tty and self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()

    def _loop(self) -> None:
        wait = self.tick if self.tty else self.every
        while not self._stop.wait(wait):
            try:
                text = self.describe()
            except Exception:  # a status line never breaks the work it reports on
                continue
            with self._lock:
                if self.tty:
                    width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
                    self.stream.write("\r  " + text[:width - 2] + "\x1b[K")
                else:
                    self.stream.write(f"  ... {text}\n")
                self.stream.flush()
                self._shown = True
