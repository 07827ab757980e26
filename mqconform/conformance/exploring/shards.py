"""An area in parts: its examples explored by several explorations at the same time.

Most of a real broker's area time is waiting (the broker's clock in the expiry area, restarts,
round trips), with the suite's process idle. ``mqconform run --shards K`` splits each area's example
budget over K parts that run in worker processes at once, each with its own adapter (its own
embedded server, or its own names on a shared one: namespace prefix ``mqc-p<i>``), its own
Hypothesis seed, example database and history file. Each example is the same kind of example as in
one exploration (its own queues or streams and history); what differs is only which examples are
drawn. The parts' results are merged into the area's (mqconform.conformance.execution.merge_parts).

Part 0 of K keeps the run's seed; part i > 0 draws from a seed of its own (:func:`part_seed`), so a
run with the same seed, settings and K explores the same examples. One part (K = 1) is the
exploration of old, unchanged.
"""

from __future__ import annotations

import zlib
from typing import Final

import attrs

#: part i's history numbers its examples from i * EXAMPLE_STRIDE, so examples are unique in the area
EXAMPLE_STRIDE = 1_000_000


@attrs.frozen
class Part:
    """Part `index` (from 0) of `count` parts of one area."""

    index: int = 0
    count: int = 1

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"part {self.index} of {self.count}")

    @property
    def whole(self) -> bool:
        return self.count == 1

    def examples(self, total: int) -> int:
        """This part's share of `total` examples (the first ones take the remainder)."""
        return total // self.count + (1 if self.index < total % self.count else 0)

    def seed(self, seed: int | None, area: str) -> int | None:
        """The part's Hypothesis seed: the run's for part 0; for the others one derived from the
        run's (or, on derandomized settings, from the area's name), so each part draws its own."""
        return seed if self.index == 0 else derived_seed(seed, area, 7919 * self.index)

    @property
    def namespace_prefix(self) -> str:
        return "mqc" if self.index == 0 else f"mqc-p{self.index}"

    @property
    def first_example(self) -> int:
        return self.index * EXAMPLE_STRIDE

    @property
    def suffix(self) -> str:
        """What tells this part's files from part 0's (history/<area><suffix>.jsonl)."""
        return "" if self.index == 0 else f".{self.index}"


def parts_for(count: int, examples: int) -> list[Part]:
    """The parts an area of `examples` examples is split into: `count`, fewer when there are fewer
    examples than parts (every part explores at least one)."""
    count = max(1, min(count, examples))
    return [Part(i, count) for i in range(count)]


#: the one exploration of an area (no parts)
WHOLE: Final = Part()


def derived_seed(seed: int | None, area: str, step: int) -> int:
    """A Hypothesis seed `step` away from `seed` (on derandomized settings, from the area's name): a
    part's (Part.seed) and a rerun's (runner._rerun_seed) own draw."""
    base = seed if seed is not None else zlib.crc32(area.encode())
    return (base + step) % 2**32
