"""The shape max-size-messages-browsed (mqconform.conformance.judging.deviations): a send the model
takes below an address's message-count limit although Artemis, counting each browsed message twice and each
acknowledged one once, would already be at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "docs" / "findings" / "artemis-max-size-messages-leak.yaml"
SHAPE = SHAPES["max-size-messages-browsed"]


def _steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = yaml.safe_load(SCENARIO.read_text())["steps"]
    return steps


def _has_shape(steps: list[dict[str, Any]]) -> bool:
    trace = scenario_trace(steps, "artemis")
    assert trace is not None
    return SHAPE(trace)


pytestmark = pytest.mark.rules("PAGING-1", "PAGING-27")


def test_the_regression_scenario_has_the_shape_from_its_second_send_on() -> None:
    steps = _steps()
    assert _has_shape(steps)
    assert _has_shape(steps[:5])  # m1 and m2 of a limit of 3: Artemis counts 4, the address is full
    assert not _has_shape(steps[:4])  # m1 alone counts 2


def test_a_limit_the_leak_cannot_reach_is_not_the_shape() -> None:
    steps = _steps()
    steps[0] = {"address": {**steps[0]["address"], "max_size_messages": 10}}
    assert not _has_shape(steps)


def test_an_address_without_a_message_limit_is_not_the_shape() -> None:
    steps = _steps()
    steps[0] = {"address": {**steps[0]["address"], "max_size_messages": -1, "max_size_bytes": 1000}}
    assert not _has_shape(steps)


def test_acknowledged_messages_still_count_once() -> None:
    """After every message is acknowledged the address is empty in the model, but each one still
    counts once on Artemis: limit 5, two messages acknowledged (2), then two more (2 x 2): 6."""
    steps: list[dict[str, Any]] = [
        {"address": {"name": "a", "max_size_bytes": -1, "max_size_messages": 5, "page_size_bytes": 500,
                     "full_policy": "DROP"}},
        {"queue": {"name": "q1", "address": "a"}},
        {"consumer": {"name": "c", "queue": "q1", "window_bytes": 0}},
        {"send_batch": {"to": "a", "ids": ["m1", "m2"], "size": 100}},
        {"receive_batch": {"consumer": "c", "count": 2}},
        {"ack_batch": {"consumer": "c", "ids": ["m1", "m2"]}},
        {"send": {"to": "a", "id": "m3", "size": 100}},
    ]
    assert not _has_shape(steps)  # 3 taken + 1 held < 5
    steps.append({"send": {"to": "a", "id": "m4", "size": 100}})
    assert _has_shape(steps)  # 4 taken + 2 held >= 5 (the two held alone count 4)
