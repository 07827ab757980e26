"""Ways out of a consumer's hands that the history checks once missed, each a real example of the
model's own ``ci`` run (the reference adapter, artemis profile) that both engines failed:

- a session close returns what the consumer's window held but it never received (REDELIVERY-30): after
  it, another consumer's first receive of such a message is a redelivery, not an order violation
  (``order``, DELIVERY-4; example 30 of the redelivery area, cut after the return);
- a delete by id answered true (DELIVERY-31) takes a message out of its queue; on Artemis it counts as
  acknowledged, a counter ``lost`` does not read (DELIVERY-2, DELIVERY-15; example 177 of the ring area);
- a move by id answered true (DELIVERY-48) takes a message out of its queue to another one, acknowledged
  at its source as a delete is (``lost``; example 141 of the scheduling area, a scheduled message moved
  on Artemis 2.53.0+, the run of 2026-12-01 that failed DELIVERY-2 and DELIVERY-15 so);
- a pull batch (``fetch``) delivers messages the history records as one answer: a message's first
  receive after one may be a redelivery of a fetched message (``order``; NATS 2.15.1, example 5 of the
  retention area of the README's main command, seed 4230396052, which once failed DELIVERY-4 so);
- an ack or nack of a message the consumer does not hold, answered ``failed`` under a profile whose
  broker closes the channel then (DELIVERY-22 ``closes_channel``, RabbitMQ's 406 "unknown delivery
  tag"), returns what the consumer's prefetch held but it never received: another consumer's first
  receive of it is a redelivery (``order``; the model's rabbitmq-classic profile, example 3 of the
  expiry area under ``dev`` with seed 205341649, which once failed the model's own report on
  DELIVERY-4). Its "operation" is the profile: recorded under artemis, whose failed settle changes
  nothing, the same history fails ``order``.

Each history passes every check on both engines, and each fails the check it concerns once the
operation that explains it is taken out: the check still sees what it must.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mqconform.history import SCHEMA_VERSION
from mqconform.reports import pipeline

DATA = Path(__file__).parent / "data"
#: the "operation" of a history explained by its profile: without it, the history is artemis'
PROFILE = "profile"
#: history -> (the operation that explains it, the check that fails without it)
HISTORIES = {"model-close-session-returns-window": ("close_session", "order"),
             "model-delete-by-id": ("delete", "lost"),
             "model-move-scheduled": ("move", "lost"),
             "nats-fetch-then-receive": ("fetch", "order"),
             "model-rabbitmq-failed-nack-closes-channel": (PROFILE, "order")}


def _run_dir(path: Path, name: str, drop: str | None) -> Path:
    """A run directory holding history `name`, without the records of operation `drop`."""
    records = [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]
    run = f"{name}-without-{drop}" if drop else name
    machine = records[0]["machine"]
    kept = [dict(r, run=run, **({"profile": "artemis"} if drop == PROFILE else {}))
            for r in records if r["f"] != drop]
    (path / "history").mkdir(parents=True)
    (path / "history" / f"{machine}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    (path / "run.json").write_text(json.dumps({
        "v": SCHEMA_VERSION, "run": run, "adapter": "reference", "profile": "artemis", "settings": {},
        "started": "2026-11-28T00:00:00Z", "finished": "2026-11-28T00:00:01Z", "status": "complete",
        "exit_code": 0, "versions": {}}))
    (path / "outcomes.jsonl").write_text("")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("ways-out")
    return [_run_dir(base / f"{name}-{drop}", name, drop)
            for name, (way, _) in HISTORIES.items() for drop in (None, way)]


def _verdicts(result: Any) -> dict[str, dict[str, str]]:
    """run -> check -> verdict (one queue per history fails at most)."""
    out: dict[str, dict[str, str]] = {}
    for c in result.checks:
        if c.queue in ("q", "q1"):
            out.setdefault(c.run, {})[c.check] = c.verdict
    return out


def _expect(verdicts: dict[str, dict[str, str]]) -> None:
    for name, (way, check) in HISTORIES.items():
        assert "fail" not in verdicts[name].values(), (name, verdicts[name])
        # after a fetch (or a failed settle that may close the channel) the queue's first deliveries are
        # not ordered: nothing is left for `order` there
        expected = "none" if way in ("fetch", PROFILE) else "pass"
        assert verdicts[name].get(check, "none") == expected, (name, verdicts[name])
        without = verdicts[f"{name}-without-{way}"]
        assert without[check] == "fail", (name, without)
        assert [c for c, v in without.items() if v == "fail"] == [check], (name, without)


@pytest.mark.rules("DELIVERY-2", "DELIVERY-4", "DELIVERY-15")
def test_the_python_engine_knows_the_ways_out(runs: list[Path]) -> None:
    _expect(_verdicts(pipeline.check_runs(runs, engine="python")))


@pytest.mark.spark
@pytest.mark.rules("DELIVERY-2", "DELIVERY-4", "DELIVERY-15")
def test_the_spark_engine_knows_the_ways_out(spark: Any, runs: list[Path]) -> None:
    _expect(_verdicts(pipeline.check_runs(runs, engine="spark")))
