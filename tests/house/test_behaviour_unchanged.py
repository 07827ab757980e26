"""Behaviour unchanged: on seed 1, the model under every area and three real brokers (Redis, NATS,
RabbitMQ) record the same outcomes and histories as the golden files in tests/house/golden/
(recorded and normalised by tests/house/behaviour.py; wall clock, run id and versions left out).

When a change is meant to change behaviour, regenerate the golden files and commit them with it:

    .venv/bin/python -m tests.house.behaviour --write
"""

from __future__ import annotations

import pytest

from tests.house.behaviour import RECORDINGS, first_difference, golden_path, record


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_same_outcomes_and_histories(name: str) -> None:
    golden = golden_path(name).read_text().splitlines()
    difference = first_difference(golden, record(name))
    assert difference is None, f"{name} behaves differently from {golden_path(name).name}: {difference}"


def test_first_difference_names_the_line() -> None:
    assert first_difference(["a", "b"], ["a", "b"]) is None
    assert "line 2" in (first_difference(["a", "b"], ["a", "c"]) or "")
    assert "ends at line 1" in (first_difference(["a", "b"], ["a"]) or "")
