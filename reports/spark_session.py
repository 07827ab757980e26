"""The SparkSession builder of the history pipeline: quiet, on loopback, local[*] by default.

One session per process (Spark's own rule); :func:`get_session` returns the active one if any.
Environment: ``MQCONFORM_SPARK_MASTER`` (default ``local[*]``), ``MQCONFORM_SPARK_DRIVER_MEMORY``
(default ``4g``), ``MQCONFORM_SPARK_LOCAL_IP`` (default ``127.0.0.1``).
"""

from __future__ import annotations

import os
import sys
from importlib import resources
from typing import Any

DEFAULT_MASTER = "local[*]"


def log4j_config() -> str:
    """Path of the quiet log4j2.properties shipped with the package."""
    return str(resources.files("mqconform.reports").joinpath("log4j2.properties"))


def get_session(master: str | None = None, app: str = "mqconform-pipeline") -> Any:
    """The process's SparkSession (created quiet and on loopback if there is none yet)."""
    local_ip = os.environ.get("MQCONFORM_SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", local_ip)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j_config()}"
    session = (
        SparkSession.builder.appName(app)
        .master(master or os.environ.get("MQCONFORM_SPARK_MASTER", DEFAULT_MASTER))
        .config("spark.driver.bindAddress", local_ip)
        .config("spark.driver.host", local_ip)
        .config("spark.driver.memory", os.environ.get("MQCONFORM_SPARK_DRIVER_MEMORY", "4g"))
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", os.environ.get("MQCONFORM_SPARK_SHUFFLE_PARTITIONS", "8"))
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.sql.adaptive.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
