"""The history checks agree with the model on last-value queues (seed 1 of the lastvalue area under
`dev` once gave both FAILs): `lost` does not apply to a last-value queue, whose message count leaves its
delivering messages out (LASTVALUE-7), and `delivery-count` leaves out the non-destructive and
last-value queues, where each consumer's delivery of a listed message is a copy with its own count
(DELIVERY-12, LASTVALUE-8). Both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqconform.cli import main


@pytest.mark.spark
def test_the_models_last_value_run_and_its_report_agree(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["run", "--adapter", "reference", "--areas", "lastvalue", "--settings", "dev", "--seed", "1",
                 "--no-report", "--out", str(run)]) == 0
    for engine in ("python", "spark"):
        out = tmp_path / engine
        assert main(["report", str(run), "--engine", engine, "--out", str(out)]) == 0, engine
        cells = json.loads((out / "report.json").read_text())["cells"]
        assert not [c["rule"] for c in cells if c["state"] == "fail"], engine
