"""`mqconform.testing.check_adapter`, called as an outside team calls it: from its own test file in a
directory outside the repository, on an implementation of its own (a copy of the README's example
adapter under another module name)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

OUTSIDE_TEST = '''
import pytest
from mqconform.testing import check_adapter
from my_queue import FifoAdapter


def test_conforming_implementation_returns_a_report():
    report = check_adapter(FifoAdapter, areas=["delivery", "ring"], max_examples=8)
    assert report.profile == "rabbitmq-classic"
    assert report.examples["delivery"] > 0
    assert "ring" in report.not_applicable  # the example declares no ring_size


def test_a_bug_raises_with_the_counterexample_and_its_replay_command():
    with pytest.raises(AssertionError) as info:
        check_adapter(lambda: FifoAdapter(lose_returns=True), areas=["delivery"], max_examples=25)
    text = str(info.value)
    assert "does not conform to profile rabbitmq-classic" in text
    assert "counterexample (" in text and "- consumer:" in text and "expect:" in text
    assert "replay: mqconform scenario counterexample.yaml --adapter my_queue:FifoAdapter" in text


def test_an_unknown_area_is_a_value_error():
    with pytest.raises(ValueError, match="unknown area"):
        check_adapter(FifoAdapter, areas=["nope"])
'''


def test_check_adapter_from_an_outside_project(pytester: pytest.Pytester) -> None:
    shutil.copy(ROOT / "tests" / "example_adapter.py", pytester.path / "my_queue.py")
    pytester.makepyfile(test_outside=OUTSIDE_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=3)
