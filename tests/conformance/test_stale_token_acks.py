"""DELIVERY-22 by_sequence (JetStream): the machines' invalid ack of a message "never delivered" to a
consumer leaves out a message the consumer once received (it holds its reply subject) that now sits
in another consumer's buffer: the model does not model that ack, so drawing it stopped the area as
UNKNOWN. Found by the model's own run under a random dev seed
(tests/reports/test_model_run_and_report_agree.py): seed 1472621240, jetstream profile, expiry area,
example 1039: c-q-2 received m2 and nacked it, a reopened push consumer c-q took m2 into its buffer,
then c-q-2 acked m2."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.cli import main


@pytest.mark.rules("DELIVERY-22")
def test_the_models_jetstream_run_draws_no_unmodelled_stale_ack(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--adapter", "reference", "-o", "implementation=jetstream", "--areas", "expiry",
                 "--settings", "dev", "--max-examples", "4", "--seed", "1472621240", "--no-report",
                 "--out", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "not modelled" not in out and "expiry      ok" in out
