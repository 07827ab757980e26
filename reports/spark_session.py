"""The SparkSession builder of the history pipeline: quiet, on loopback, local[*] by default.

One session per process (Spark's own rule); :func:`get_session` returns the active one if any.
Environment: ``MQCONFORM_SPARK_MASTER`` (default ``local[*]``), ``MQCONFORM_SPARK_DRIVER_MEMORY``
(default ``4g``), ``MQCONFORM_SPARK_LOCAL_IP`` (default ``127.0.0.1``), ``MQCONFORM_SPARK_SHUFFLE_PARTITIONS``
(default 4 x the local cores, e.g. 8 for local[2]), ``MQCONFORM_SPARK_LOG`` (where the JVM's stderr goes;
default ``mqconform-spark-<pid>.log`` in the temporary directory), ``MQCONFORM_SPARK_JAVA_OPTIONS`` (more
options for the driver's and executors' JVMs, e.g. ``-XX:TieredStopAtLevel=1``: short jobs over small
runs then spend about half the JVM's CPU). The JVM is launched with its stderr in that file, so a
failing master's Java stack trace never reaches the user's terminal: the caller prints
one line (and can name :func:`jvm_log`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULT_MASTER = "local[*]"


def jvm_log() -> Path:
    """The file that receives the Spark JVM's stderr."""
    default = Path(tempfile.gettempdir()) / f"mqconform-spark-{os.getpid()}.log"
    return Path(os.environ.get("MQCONFORM_SPARK_LOG", str(default)))


def _cores(master: str) -> int:
    """The cores of a local master (``local[N]``; the machine's for ``local[*]`` or another master)."""
    inside = master[master.find("[") + 1:master.find("]")] if master.startswith("local[") else ""
    return int(inside) if inside.isdigit() else os.cpu_count() or 2


def _shuffle_partitions(master: str) -> str:
    """A few shuffle partitions per local core (Spark's 200 cost more than they give on 2 cores; a few per
    core keep both cores busy to the end of a stage)."""
    if "MQCONFORM_SPARK_SHUFFLE_PARTITIONS" in os.environ:
        return os.environ["MQCONFORM_SPARK_SHUFFLE_PARTITIONS"]
    return str(max(2, 4 * _cores(master)))


def _launch_quiet_gateway(conf: Any) -> None:
    """Start the py4j JVM with `conf` and its stderr in :func:`jvm_log` (pyspark's documented
    ``popen_kwargs`` hook); SparkSession.builder then reuses this gateway."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # a JVM is already up in this process
        return
    log = jvm_log().open("ab")
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": log, "stdout": log})
    finally:
        log.close()  # the JVM holds its own descriptor
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def log4j_config() -> str:
    """Path of the quiet log4j2.properties shipped with the package."""
    return str(resources.files("mqconform.reports").joinpath("log4j2.properties"))


def get_session(master: str | None = None, app: str = "mqconform-pipeline") -> Any:
    """The process's SparkSession (created quiet and on loopback if there is none yet)."""
    local_ip = os.environ.get("MQCONFORM_SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", local_ip)
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    java_opts = " ".join([f"-Dlog4j2.configurationFile=file:{log4j_config()}",
                          os.environ.get("MQCONFORM_SPARK_JAVA_OPTIONS", "")]).strip()
    chosen = master or os.environ.get("MQCONFORM_SPARK_MASTER", DEFAULT_MASTER)
    settings = {
        "spark.app.name": app, "spark.master": chosen,
        "spark.driver.bindAddress": local_ip, "spark.driver.host": local_ip,
        "spark.driver.memory": os.environ.get("MQCONFORM_SPARK_DRIVER_MEMORY", "4g"),
        "spark.driver.extraJavaOptions": java_opts, "spark.executor.extraJavaOptions": java_opts,
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": _shuffle_partitions(chosen),
        # a few input splits per core (default: as many as cores, so 3 splits of a 283 MB file keep one of
        # two cores idle for a third of the scan)
        "spark.sql.files.minPartitionNum": str(4 * _cores(chosen)),
        # a check run generates more classes than Spark's cache of 100 keeps: each run compiled them again
        "spark.sql.codegen.cache.maxEntries": "1000",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        # shuffle partitions of 16 MB, not 64: a few tasks per core after a shuffle of a few hundred MB
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16m",
        "spark.sql.parquet.enableVectorizedReader": "true",
    }
    conf = SparkConf()
    for key, value in settings.items():
        conf.set(key, value)
    _launch_quiet_gateway(conf)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
