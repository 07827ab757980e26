"""Branch coverage of reference_model/ by the model tests, measured on every test run (goal >= 95 %).

Runs the other model tests once more under coverage in a subprocess (about 20 s), so the figure is
measured in CI by the README's test command itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

GOAL = 95.0
MODEL_TESTS = Path(__file__).resolve().parent
BUG_MODEL_TESTS = sorted((MODEL_TESTS.parent / "conformance").glob("test_bug_model*.py"))


def test_model_branch_coverage_is_at_least_95_percent(tmp_path: Path) -> None:
    env = {**os.environ, "COVERAGE_FILE": str(tmp_path / ".coverage")}
    run = subprocess.run(
        [sys.executable, "-m", "coverage", "run", "--branch", "--source=mqconform.reference_model", "-m",
         "pytest", "-q", "-p", "no:xdist", "-p", "no:randomly", str(MODEL_TESTS), *map(str, BUG_MODEL_TESTS),
         "--ignore", __file__],
        env=env, capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = tmp_path / "coverage.json"
    subprocess.run([sys.executable, "-m", "coverage", "json", "-o", str(report)], env=env,
                   capture_output=True, check=True)
    percent = json.loads(report.read_text())["totals"]["percent_covered"]
    print(f"reference_model branch coverage: {percent:.1f} %")
    assert percent >= GOAL, f"branch coverage of reference_model/ is {percent:.1f} %, below {GOAL} %"
