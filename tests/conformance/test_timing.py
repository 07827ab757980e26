"""Where an area's time went (mqconform.conformance.exploring.timing): every call of the driver on either side
is booked, an empty receive apart from one that got a message, the rest is the suite's own, and a
broker's area prints the line."""

from __future__ import annotations

from typing import Any

from hypothesis import settings

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.execution import area_lines
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import run_machine
from mqconform.conformance.exploring.timing import CATEGORIES, TimeLedger, category, describe
from mqconform.reference_model.profiles import ARTEMIS


def test_categories_follow_the_answer() -> None:
    assert category("receive", None) == category("fetch", []) == category("receive_batch", []) == "empty"
    assert category("receive", "m1") == category("send", "accepted") == category("fetch", ["m1"]) == "answers"
    assert category("advance", None) == "clock" and category("restart", None) == "restart"
    ledger = TimeLedger()
    ledger.add("empty", 3.0)
    ledger.add("answers", 1.0)
    summary = ledger.summary(5.0)
    assert summary["suite"] == 1.0 and summary["empty"] == 3.0
    assert ledger.summary(2.0)["suite"] == 0.0  # never below zero
    assert describe(summary, 5.0) == "empty answers 3.0 s (60 %), suite 1.0 s (20 %), answers 1.0 s (20 %)"


class SlowEmptyReceives(ReferenceAdapter):
    """The model, with every receive that finds nothing costing 20 ms (a broker waiting out a silence)."""

    latency: Any = None

    def receive(self, consumer: str) -> Result:
        got = super().receive(consumer)
        if got.is_ok and got.value is None:
            import time

            time.sleep(0.02)
        return got


def test_an_area_books_its_time_and_a_broker_prints_it() -> None:
    hyp = settings(max_examples=6, deadline=None, database=None, derandomize=True)
    result = run_machine(MACHINES["delivery"], SlowEmptyReceives, ARTEMIS, hyp, max_reruns=0)
    timing = result.timing
    assert set(timing) == {*CATEGORIES, "suite"}
    assert timing["model"] > 0 and timing["answers"] > 0 and timing["observe"] > 0
    empties = timing["empty"]
    assert empties >= 0.02  # at least one receive found nothing, and its sleep is booked there
    assert abs(sum(timing.values()) - result.seconds) < 0.05 * result.seconds + 0.01
    lines = area_lines("delivery", result, result.seconds, judge=None, claimed="artemis",  # type: ignore[arg-type]
                       replay=str)
    assert not any(line.strip().startswith("time:") for line in lines)  # no latency: not a broker
    result.latency = {"samples": 0, "median_ms": None, "p90_ms": None}
    lines = area_lines("delivery", result, result.seconds, judge=None, claimed="artemis",  # type: ignore[arg-type]
                       replay=str)
    assert any(line.strip().startswith("time: ") and "empty answers" in line for line in lines)
