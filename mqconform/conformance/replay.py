"""Replay a list of scenario steps in lockstep on the model and an adapter (counterexamples).

After every step the results and everything both sides can observe are compared, the same
comparisons the machines make, so a counterexample found by a machine fails here at the same step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mqconform.adapters.contract import COUNTERS, EXTRA_CAPABILITIES, Adapter
from mqconform.adapters.registry import load_adapter
from mqconform.reference_model.profiles import profile as load_profile

from .driver import Driver

COMPARED = {"send", "receive", "ack", "nack", "browse", "offer", "complete", "submit", "take", "put",
            "remove", "truncate"}


def _queues(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    return [step["queue"]["name"] for step in steps if "queue" in step]


def replay(*, adapter: str | Adapter, profile: str, steps: Sequence[Mapping[str, Any]],
           adapter_options: Mapping[str, Any] | None = None,
           on_step: Callable[[int, str], None] | None = None) -> None:
    """Run `steps` on both sides; raise Violation (an AssertionError) at the first difference."""
    impl = adapter if not isinstance(adapter, str) else load_adapter(adapter, **(adapter_options or {}))
    claimed = load_profile(profile)
    impl.open("mqc-replay")
    try:
        driver = Driver(impl, claimed, None, {})
        caps = (frozenset(claimed.features) | EXTRA_CAPABILITIES) & frozenset(impl.capabilities)
        queues: list[str] = []
        for number, step in enumerate(steps, start=1):
            (op, args), = ((k, v) for k, v in step.items() if k != "expect")
            if on_step is not None:
                on_step(number, op)
            driver.both(op, args, compare=f"step {number} {op}" if op in COMPARED else None)
            if op == "queue":
                queues.append(args["name"])
            for queue in queues:
                want, got = driver.observe_both("counters", queue)
                for name in COUNTERS:
                    if f"counter:{name}" in caps:
                        driver.expect_equal(f"step {number} counters.{name}", want[name], got[name],
                                            f"after step {number} ({op}), queue {queue} {name}: ")
    finally:
        impl.close()
