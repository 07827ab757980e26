"""Fixtures of the pipeline tests: one quiet, loopback SparkSession per test process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The process's SparkSession (local[2], ~10 s once); Java 17 and pyspark are required."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("MQCONFORM_SPARK_SHUFFLE_PARTITIONS", "2")
    from mqconform.reports.spark_session import get_session

    session = get_session("local[2]")
    yield session
    session.stop()
