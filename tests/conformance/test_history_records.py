"""The suite records each delivery count it reads as a history observation (the implementation's value),
and the store turns it into the ``delivery_count`` column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import MachineResult, run_machine
from mqconform.history import RunDirectory
from mqconform.reference_model.profiles import profile
from mqconform.reports.read import store

RULES = ("REDELIVERY-1", "REDELIVERY-2")
SKEW = 100


class SkewedCounts(ReferenceAdapter):
    """The reference broker, but every delivery count it shows is SKEW too high."""

    def delivery_count(self, queue: str, msg_id: str) -> Result:
        shown = super().delivery_count(queue, msg_id)
        return Result.ok(shown.value + SKEW) if shown.is_ok and shown.value is not None else shown


def _run(tmp_path: Path, adapter: type[ReferenceAdapter]) -> tuple[MachineResult, Path]:
    run = RunDirectory(tmp_path / "run", "reference", "artemis", {})
    hyp = suite_settings.get(suite_settings.default_profile(), database=None, max_examples=40,
                             derandomize=True)
    result = run_machine(MACHINES["redelivery"], lambda: adapter("artemis"), profile("artemis"), hyp, run=run,
                         max_reruns=0)
    run.finish(0)
    return result, run.path


def _records(path: Path) -> list[dict[str, Any]]:
    lines = (path / "history" / "redelivery.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.rules(*RULES)
def test_each_delivery_is_followed_by_its_delivery_count(tmp_path: Path) -> None:
    result, path = _run(tmp_path, ReferenceAdapter)
    assert result.findings == [] and result.unknown is None
    records = _records(path)
    observed = [(i, r) for i, r in enumerate(records) if r["f"] == "delivery_count"]
    receives = [r for r in records if r["f"] == "receive" and r["type"] == "ok" and r["value"] is not None]
    assert observed and len(observed) == len(receives)
    last: dict[tuple[int, str], int] = {}
    for i, rec in observed:
        before = records[i - 1]
        assert (before["f"], before["type"], before["value"]) == ("receive", "ok", rec["value"]["id"])
        assert (rec["process"], rec["type"], rec["queue"]) == ("observer", "ok", "q")
        count = rec["value"]["count"]
        key = (rec["example"], rec["value"]["id"])
        assert isinstance(count, int) and count >= max(1, last.get(key, 0))  # REDELIVERY-1 in the model
        last[key] = count
    assert any(count > 1 for count in last.values()), "no redelivery was recorded"
    rows = [r for r in store.read_run(path).rows if r["f"] == "delivery_count"]
    assert [(r["msg"], r["delivery_count"], r["queue"]) for r in rows] == \
        [(r["value"]["id"], r["value"]["count"], "q") for _, r in observed]


@pytest.mark.rules(*RULES)
def test_the_recorded_count_is_the_implementations(tmp_path: Path) -> None:
    result, path = _run(tmp_path, SkewedCounts)
    assert [f.check for f in result.findings] == ["delivery_count"]
    counts = [r["value"]["count"] for r in _records(path) if r["f"] == "delivery_count"]
    assert counts and all(count > SKEW for count in counts)
