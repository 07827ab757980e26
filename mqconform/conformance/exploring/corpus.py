"""The corpus of an exploration: every example it generated, kept to be replayed on other releases.

`mqconform matrix` explores an area once per capability group (on the group's newest release) with
a :class:`Recorder` set (runner.RECORDER): each example's steps (the scenario form a counterexample
is made of) and the checks it made (``Driver.check_log``: after which step, which check, the field
it compared) are kept when the example ends, every example that held, up to MAX_EXAMPLES per area
(beyond it only an example that reaches a check none before it reached). :func:`distil` then keeps
a small set: for every check the exploration reached, the `k` shortest examples that reached it,
and every counterexample the exploration found (its finding's check and rules). The distilled set
is replayed on the group's other releases without Hypothesis (mqconform.conformance.exploring.corpus_replay).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

#: examples kept per area (beyond it, only an example that reaches a check no kept example reached)
MAX_EXAMPLES = 2000
#: examples distilled per check by default (`mqconform matrix --corpus-k`)
DEFAULT_K = 3


@attrs.frozen
class Example:
    """One example of an exploration, in scenario form."""

    #: the operations, each ``{op: args}`` as in a scenario file
    steps: tuple[dict[str, Any], ...]
    #: every check it made, each (check, field) where it was first made: (the 1-based number of the
    #: last step run before it, name, compared field)
    checks: tuple[tuple[int, str, str], ...] = ()
    #: a counterexample of the exploration: the check its finding failed ("" for an example that held)
    failing: str = ""
    #: the failing check's rule ids (a counterexample's), else empty
    rules: tuple[str, ...] = ()
    #: where the example's replay on the explored release already differed from the model's
    #: expectations (a scenario compares more than the machine's checks did): (step, what differs);
    #: None when it held there
    baseline: tuple[int, str] | None = None

    def reached(self) -> set[str]:
        """The checks this example made (a counterexample: its failing check)."""
        return {name for _, name, _ in self.checks} or ({self.failing} if self.failing else set())

    def covered(self) -> set[str]:
        """The checks a replay that holds evidences: those made before the step where the explored
        release itself differed (all of them when it did not)."""
        if self.baseline is None:
            return self.reached()
        return {name for step, name, _ in self.checks if step < self.baseline[0]}

    def as_json(self) -> dict[str, Any]:
        return {"steps": list(self.steps), "checks": [list(c) for c in self.checks], "failing": self.failing,
                "rules": list(self.rules), "baseline": list(self.baseline) if self.baseline else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Example:
        baseline = data.get("baseline")
        checks = tuple((int(s), str(n), str(f)) for s, n, f in data.get("checks", ()))
        return cls(tuple(data["steps"]), checks,
                   str(data.get("failing", "")), tuple(data.get("rules", ())),
                   (int(baseline[0]), str(baseline[1])) if baseline else None)


def _plain(value: Any) -> Any:
    """`value` as JSON can hold it (tuples as lists); raises TypeError for what it cannot."""
    return json.loads(json.dumps(value))


class Recorder:
    """Keeps each example of an exploration (see the module docstring)."""

    def __init__(self, cap: int = MAX_EXAMPLES) -> None:
        self.cap = cap
        self.examples: list[Example] = []
        self.reached: set[str] = set()
        #: examples not kept: past the cap, or with an argument JSON cannot hold
        self.dropped = 0

    def teardown(self, original: Callable[[Any], None]) -> Callable[[Any], None]:
        """A machine's teardown that runs `original` and then keeps the example (runner.machine_class)."""
        recorder = self

        def teardown(machine: Any) -> None:
            try:
                original(machine)
            finally:
                recorder.keep(getattr(machine, "d", None))

        return teardown

    def keep(self, driver: Any) -> None:
        """Keep the example `driver` ran, unless a check failed in it (its finding is kept instead,
        shrunk) or it ran nothing."""
        if driver is None or driver.violated or not driver.steps:
            return
        first: dict[tuple[str, str], int] = {}  # each (check, field) once: where it was first made
        for step, name, field in driver.check_log:
            first.setdefault((str(name), str(field)), int(step))
        checks = tuple(sorted((step, name, field) for (name, field), step in first.items()))
        names = {name for _, name, _ in checks}
        if len(self.examples) >= self.cap and names <= self.reached:
            self.dropped += 1
            return
        try:
            steps = tuple(_plain({step.op: step.args}) for step in driver.steps)
        except (TypeError, ValueError):
            self.dropped += 1
            return
        self.reached |= names
        self.examples.append(Example(steps, checks))


def counterexamples(findings: Iterable[Any]) -> list[Example]:
    """The exploration's findings as examples (flaky ones left out: they did not fail again; those not
    shown too: the implementation followed the specification there)."""
    out = []
    for finding in findings:
        if finding.flaky or getattr(finding, "unshown", False):
            continue
        try:
            steps = tuple(_plain({step.op: step.args}) for step in finding.steps)
        except (TypeError, ValueError):
            continue
        # its own check, with the field it compared, after its last step
        out.append(Example(steps, ((len(steps), finding.check, str(getattr(finding, "field", "") or "")),),
                           failing=finding.check, rules=tuple(finding.rules)))
    return out


def distil(examples: Sequence[Example], k: int = DEFAULT_K, failing: Sequence[Example] = ()) -> list[Example]:
    """Every example of `failing`, then for each check the examples reached the `k` shortest
    examples reaching it (shorter first; the same steps are kept once)."""
    chosen: list[Example] = list(failing)
    seen = {_key(ex) for ex in chosen}
    count: Counter[str] = Counter()
    for ex in sorted(examples, key=lambda e: len(e.steps)):
        if _key(ex) in seen or not any(count[c] < k for c in ex.reached()):
            continue
        chosen.append(ex)
        seen.add(_key(ex))
        count.update(ex.reached())
    return chosen


def _key(example: Example) -> str:
    return json.dumps(example.steps, sort_keys=True)


def write(path: Path, examples: Iterable[Example]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        for ex in examples:
            out.write(json.dumps(ex.as_json(), sort_keys=True) + "\n")


def read(path: Path) -> list[Example]:
    return [Example.from_json(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
