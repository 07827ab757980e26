"""The pipeline on a real Spark standalone cluster: a master and a worker on loopback, started with the
installed pyspark's own launcher (``bin/spark-class ...deploy.master.Master`` / ``...deploy.worker.Worker``),
then ``mqconform report --master spark://...`` submitted to it: it must give what the in-process engine
gives on the same run. (A matrix distributes its releases through the same session builder; its Spark
distribution is tested on ``local[2]`` in tests/adapters/test_matrix.py, where it gives the in-process
matrix's outcomes.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqconform.adapters._process import free_port

pytestmark = pytest.mark.spark
START_TIMEOUT_S = 180


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:<port>`` of a standalone master with one registered 2-core worker."""
    where = tmp_path_factory.mktemp("spark-cluster")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(where),
           "PYSPARK_PYTHON": sys.executable,
           "SPARK_DAEMON_JAVA_OPTS": os.environ.get("MQCONFORM_SPARK_JAVA_OPTIONS", "")}
    port, ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    spark_class = str(_spark_class())
    commands = [
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(ui_port)],
        [spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
         "--cores", "2", "--memory", "2g", "--webui-port", str(free_port()),
         "--work-dir", str(where / "work")],
    ]
    processes = []
    try:
        for i, command in enumerate(commands):
            log = (where / f"daemon-{i}.log").open("wb")
            processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
        deadline = time.monotonic() + START_TIMEOUT_S
        while _alive_workers(ui_port) < 1:
            assert all(p.poll() is None for p in processes), f"a Spark daemon exited (logs in {where})"
            assert time.monotonic() < deadline, f"no worker in {START_TIMEOUT_S} s (logs in {where})"
            time.sleep(1)
        yield master_url
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mqconform.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def _verdicts(report_dir: Path) -> dict[tuple[str, str], str]:
    data = json.loads((report_dir / "report.json").read_text())
    return {(cell["rule"], cell["implementation"]): cell["state"] for cell in data["cells"]}


def test_a_report_runs_on_a_standalone_cluster(cluster: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = _cli("run", "--adapter", "reference", "--areas", "delivery,ring", "--max-examples", "5",
                "--settings", "dev", "--seed", "3", "--no-report", "--out", str(run_dir))
    assert done.returncode == 0, done.stdout + done.stderr

    on_cluster = _cli("report", str(run_dir), "--master", cluster, "--out", str(tmp_path / "cluster"))
    assert on_cluster.returncode == 0, on_cluster.stdout + on_cluster.stderr
    in_process = _cli("report", str(run_dir), "--engine", "python", "--out", str(tmp_path / "python"))
    assert in_process.returncode == 0, in_process.stderr
    verdicts = _verdicts(tmp_path / "cluster")
    assert json.loads((tmp_path / "cluster" / "report.json").read_text())["engine"] == "spark"
    assert "pass" in verdicts.values() and verdicts == _verdicts(tmp_path / "python")

