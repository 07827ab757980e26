"""Where an area's wall time went: the implementation's answers, the answers that did not come, the
broker's clock, restarts, the model, shrinking, and the suite itself.

The driver times every call it makes on the implementation and on the model; the machine times the
adapter's per-example set-up and tear-down; the runner times shrinking (each shrink step replays the
counterexample on the implementation). What is left of the area's wall time is the suite's own work:
Hypothesis generating and shrinking examples, the machines' bookkeeping and their checks.

Categories (seconds, summed over the area):

- ``answers``: operations the implementation answered with something (a send accepted, a message
  received, an ack);
- ``empty``: receives and fetches that found nothing (an answer that did not come: the time an
  adapter spends before it can say "nothing now");
- ``observe``: observations (counters, delivery counts, browses, stream and consumer state);
- ``clock``: advances of the logical clock (a real broker's adapter sleeps on its clock there);
- ``restart``: broker restarts;
- ``setup``: opening and closing the adapter for each example (queues created and deleted);
- ``model``: the reference model's side of every operation and observation;
- ``shrink``: replays of a failure while shrinking it;
- ``suite``: the rest (Hypothesis, machines, checks).

Beside the seconds, ``discarded`` counts the examples thrown away because the broker's real clock ran
ahead of the model's logical one by more than the machine's margin before a check failed
(:meth:`mqconform.conformance.exploring.driver.Driver.check`): their comparison could not be trusted.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import attrs

CATEGORIES = ("answers", "empty", "observe", "clock", "restart", "setup", "model", "shrink")
#: operations whose ``ok`` answer may be "nothing": None or an empty list means nothing was there
RECEIVING = frozenset({"receive", "fetch", "receive_batch"})
#: the words of the printed line, per category
LABELS = {"answers": "answers", "empty": "empty answers", "observe": "observations", "clock": "clock",
          "restart": "restarts", "setup": "set-up", "model": "model", "shrink": "shrinking", "suite": "suite"}


def category(op: str, value: Any) -> str:
    """The category of one operation on the implementation that answered `value` (see the docstring)."""
    if op == "advance":
        return "clock"
    if op == "restart":
        return "restart"
    if op in RECEIVING and (value is None or value == []):
        return "empty"
    return "answers"


@attrs.define
class TimeLedger:
    """Seconds per category (:data:`CATEGORIES`) and how many calls each holds."""

    seconds: dict[str, float] = attrs.field(factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    calls: dict[str, int] = attrs.field(factory=lambda: dict.fromkeys(CATEGORIES, 0))
    #: examples discarded because the broker's clock ran ahead of the model's (see the docstring)
    discarded: int = 0

    def add(self, what: str, seconds: float) -> None:
        self.seconds[what] += seconds
        self.calls[what] += 1

    @contextlib.contextmanager
    def timed(self, what: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(what, time.perf_counter() - start)

    def summary(self, wall_s: float) -> dict[str, float]:
        """Seconds per category, and ``suite``: the wall time none of them accounts for (never below 0)."""
        out = {name: round(value, 3) for name, value in self.seconds.items()}
        out["suite"] = round(max(0.0, wall_s - sum(self.seconds.values())), 3)
        if self.discarded:
            out["discarded"] = self.discarded
        return out


def describe(summary: dict[str, float], wall_s: float) -> str:
    """One line: each category with a share of at least 1 % of `wall_s`, largest first."""
    if wall_s <= 0:
        return ""
    shown = sorted(((v, k) for k, v in summary.items() if k != "discarded" and v >= 0.01 * wall_s),
                   reverse=True)
    line = ", ".join(f"{LABELS.get(k, k)} {v:.1f} s ({100 * v / wall_s:.0f} %)" for v, k in shown)
    discarded = int(summary.get("discarded", 0))
    if discarded:
        line += (f"; {discarded} example(s) discarded: the broker's clock ran ahead of the model's by more "
                 "than the margin before a check failed")
    return line
