"""A private ActiveMQ Classic broker for the `activemq` adapter (Debian's /usr/share/activemq).

Started with java directly (not the /usr/bin/activemq wrapper, which forces a 512 MB heap and
leaves a shell parent) on a generated ``activemq.xml`` in a temporary directory: STOMP on a free
loopback port with ``transport.tcpNoDelay=true``, ``schedulerSupport``, ``persistent=false``,
``useJmx=false``, bounded memory with ``sendFailIfNoSpace`` (a full broker fails a send instead of
stalling the STOMP connection), and a log4j 1.2 ``log4j.properties`` (Debian's build ignores
log4j2). Start-up takes about 1.5 s, so :func:`shared_broker` starts one per process and reuses it;
:meth:`ActiveMQProcess.stop` (or interpreter exit) stops it. The process plumbing is
:mod:`._process`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .._process import SHORT_RUN_JIT, ServerProcess, java
from ..contract import AdapterError

HOME_ENV = "MQCONFORM_ACTIVEMQ_HOME"
DEFAULT_HOME = "/usr/share/activemq"
READY_TIMEOUT_S = 30.0

BROKER_XML = """<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="mqconform" useJmx="false"
          persistent="{persistent}" schedulerSupport="true" advisorySupport="false"
          schedulePeriodForDestinationPurge="10000"
          dataDirectory="{data}" tmpDataDirectory="{data}/tmp">
    {persistence}<destinationPolicy>
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
    java("activemq", "default-jre-headless")
    return home


class ActiveMQProcess(ServerProcess):
    """One ActiveMQ Classic broker with STOMP on 127.0.0.1:<free port>."""

    dir_prefix = "mqc-activemq-"
    log_name = "stdout.log"
    ready_timeout_s = READY_TIMEOUT_S
    poll_s = 0.05
    attempts = 2

    def __init__(self, home: str | None = None, heap_mb: int = 256, persistent: bool = False) -> None:
        super().__init__()
        self.home = find_home(home)
        self.heap_mb = heap_mb
        #: RESTART-1: KahaDB in the private directory, so a restart keeps the messages
        self.persistent = persistent

    @property
    def url(self) -> str:
        return f"stomp://127.0.0.1:{self.port}"

    def _command(self, conf: Path, data: Path) -> list[str]:
        binary = shutil.which("java") or "java"
        opens = ["java.base/java.lang", "java.base/java.util", "java.base/java.net",
                 "java.base/java.security", "java.base/java.util.concurrent"]
        return [binary, "-Xms64M", f"-Xmx{self.heap_mb}M", *SHORT_RUN_JIT,
                *[arg for mod in opens for arg in ("--add-opens", f"{mod}=ALL-UNNAMED")],
                f"-Dlog4j.configuration=file:{conf}/log4j.properties",
                f"-Dactivemq.classpath={conf}", f"-Dactivemq.home={self.home}",
                f"-Dactivemq.base={conf.parent}", f"-Dactivemq.conf={conf}", f"-Dactivemq.data={data}",
                f"-Djava.io.tmpdir={data}/tmp",
                "-jar", f"{self.home}/bin/activemq.jar", "start", f"xbean:file:{conf}/activemq.xml"]

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        conf, data = workdir / "conf", workdir / "data"
        (data / "tmp").mkdir(parents=True, exist_ok=True)
        conf.mkdir(exist_ok=True)
        persistence = (f'<persistenceAdapter><kahaDB directory="{data}/kahadb"/></persistenceAdapter>\n    '
                       if self.persistent else "")
        (conf / "activemq.xml").write_text(BROKER_XML.format(
            data=data, port=self.port, persistent=str(self.persistent).lower(), persistence=persistence))
        (conf / "log4j.properties").write_text(LOG4J.format(log=workdir / "activemq.log"))
        return self._command(conf, data), workdir

    def _log_paths(self) -> list[Path]:
        assert self.workdir is not None
        return [Path(self.workdir) / "stdout.log", Path(self.workdir) / "activemq.log"]

    def _failure(self, reason: str) -> str:
        return f"activemq: broker at {self.home} {reason}"


_shared: ActiveMQProcess | None = None


def shared_broker(home: str | None = None) -> ActiveMQProcess:
    """The process-wide broker, started on first use and reused (stopped at interpreter exit)."""
    global _shared
    if _shared is None or not _shared.running():
        _shared = ActiveMQProcess(home).start()
    return _shared
