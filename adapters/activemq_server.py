"""A private ActiveMQ Classic broker for the `activemq` adapter (Debian's /usr/share/activemq).

Started with java directly (not the /usr/bin/activemq wrapper, which forces a 512 MB heap and
leaves a shell parent) on a generated ``activemq.xml`` in a temporary directory: STOMP on a free
loopback port with ``transport.tcpNoDelay=true``, ``schedulerSupport``, ``persistent=false``,
``useJmx=false``, bounded memory with ``sendFailIfNoSpace`` (a full broker fails a send instead of
stalling the STOMP connection), and a log4j 1.2 ``log4j.properties`` (Debian's build ignores
log4j2). Start-up takes about 1.5 s, so :func:`shared_broker` starts one per process and reuses it;
:meth:`ActiveMQProcess.stop` (or interpreter exit) stops it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path

from .contract import AdapterError
from .mosquitto_server import port_accepts
from .nats_embedded import _die_with_parent, _stop_process, free_port

HOME_ENV = "MQCONFORM_ACTIVEMQ_HOME"
DEFAULT_HOME = "/usr/share/activemq"
READY_TIMEOUT_S = 30.0

BROKER_XML = """<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="mqconform" useJmx="false"
          persistent="false" schedulerSupport="true" advisorySupport="false"
          schedulePeriodForDestinationPurge="10000"
          dataDirectory="{data}" tmpDataDirectory="{data}/tmp">
    <destinationPolicy>
      <policyMap>
        <policyEntries>
          <policyEntry queue=">" producerFlowControl="true" memoryLimit="64 mb"
                       gcInactiveDestinations="true" inactiveTimoutBeforeGC="30000">
            <deadLetterStrategy>
              <individualDeadLetterStrategy queuePrefix="DLQ." useQueueForQueueMessages="true"/>
            </deadLetterStrategy>
          </policyEntry>
        </policyEntries>
      </policyMap>
    </destinationPolicy>
    <systemUsage>
      <systemUsage sendFailIfNoSpace="true">
        <memoryUsage><memoryUsage limit="128 mb"/></memoryUsage>
        <storeUsage><storeUsage limit="1 gb"/></storeUsage>
        <tempUsage><tempUsage limit="512 mb"/></tempUsage>
        <jobSchedulerUsage><jobSchedulerUsage limit="256 mb"/></jobSchedulerUsage>
      </systemUsage>
    </systemUsage>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}?transport.tcpNoDelay=true"/>
    </transportConnectors>
  </broker>
</beans>
"""

LOG4J = """log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=%d %-5p %c{{1}} - %m%n
"""


def find_home(explicit: str | None = None) -> str:
    """The ActiveMQ installation: `explicit`, $MQCONFORM_ACTIVEMQ_HOME or /usr/share/activemq."""
    home = explicit or os.environ.get(HOME_ENV) or DEFAULT_HOME
    if not (Path(home) / "bin" / "activemq.jar").is_file():
        raise AdapterError(f"activemq: no ActiveMQ at {home} (run scripts/install-debian.sh, set "
                           f"{HOME_ENV}, or pass url= to use a running broker)")
    if shutil.which("java") is None:
        raise AdapterError("activemq: no java on PATH (apt-get install default-jre-headless)")
    return home


class ActiveMQProcess:
    """One ActiveMQ Classic broker with STOMP on 127.0.0.1:<free port>."""

    def __init__(self, home: str | None = None, heap_mb: int = 256) -> None:
        self.home = find_home(home)
        self.heap_mb = heap_mb
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir: str | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def url(self) -> str:
        return f"stomp://127.0.0.1:{self.port}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _command(self, conf: Path, data: Path) -> list[str]:
        java = shutil.which("java") or "java"
        opens = ["java.base/java.lang", "java.base/java.util", "java.base/java.net",
                 "java.base/java.security", "java.base/java.util.concurrent"]
        return [java, "-Xms64M", f"-Xmx{self.heap_mb}M",
                *[arg for mod in opens for arg in ("--add-opens", f"{mod}=ALL-UNNAMED")],
                f"-Dlog4j.configuration=file:{conf}/log4j.properties",
                f"-Dactivemq.classpath={conf}", f"-Dactivemq.home={self.home}",
                f"-Dactivemq.base={conf.parent}", f"-Dactivemq.conf={conf}", f"-Dactivemq.data={data}",
                f"-Djava.io.tmpdir={data}/tmp",
                "-jar", f"{self.home}/bin/activemq.jar", "start", f"xbean:file:{conf}/activemq.xml"]

    def start(self) -> ActiveMQProcess:
        if self.running():
            return self
        last_error = "did not start"
        for _attempt in range(2):
            self.port = free_port()
            self.workdir = tempfile.mkdtemp(prefix="mqc-activemq-")
            conf, data = Path(self.workdir) / "conf", Path(self.workdir) / "data"
            (data / "tmp").mkdir(parents=True)
            conf.mkdir()
            (conf / "activemq.xml").write_text(BROKER_XML.format(data=data, port=self.port))
            log_path = Path(self.workdir) / "activemq.log"
            (conf / "log4j.properties").write_text(LOG4J.format(log=log_path))
            out_path = Path(self.workdir) / "stdout.log"
            with open(out_path, "wb") as out:
                self.process = subprocess.Popen(
                    self._command(conf, data), stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True, cwd=self.workdir,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
            self._finalizer = weakref.finalize(self, _stop_process, self.process, self.workdir)
            deadline = time.monotonic() + READY_TIMEOUT_S
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    text = (out_path.read_text(errors="replace") + log_path.read_text(errors="replace")
                            if log_path.exists() else out_path.read_text(errors="replace"))
                    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
                    last_error = f"exited with code {self.process.returncode}: {(lines or ['no output'])[-1]}"
                    break
                if port_accepts(self.port):
                    return self
                time.sleep(0.05)
            else:
                last_error = f"not ready within {READY_TIMEOUT_S:.0f} s"
            self.stop()
        raise AdapterError(f"activemq: broker at {self.home} {last_error}")

    def kill(self) -> None:
        """SIGKILL at once (a crash, for fault tests)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5)

    def stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self.process = None
        self.workdir = None


_shared: ActiveMQProcess | None = None


def shared_broker(home: str | None = None) -> ActiveMQProcess:
    """The process-wide broker, started on first use and reused (stopped at interpreter exit)."""
    global _shared
    if _shared is None or not _shared.running():
        _shared = ActiveMQProcess(home).start()
    return _shared
