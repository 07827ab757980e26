"""A private Apache ActiveMQ Artemis broker for the `artemis` adapter.

The bin distribution (``org.apache.activemq:apache-artemis:<version>:tar.gz:bin``; from 2.50.0 the group
is ``org.apache.artemis``, :func:`mqconform.adapters.artemis.room.artemis_group`) is fetched once
through ``mvn dependency:copy`` into the release cache of :mod:`mqconform.releases`
(``~/.cache/mqconform/servers/apache-artemis/<version>/``; ``$MQCONFORM_CACHE`` moves it) and extracted
there. Each broker is an instance made by
``artemis create`` in a private temporary directory, rewritten to listen on free loopback ports only:
one acceptor (AMQP, CORE, STOMP), one AMQP acceptor granting a producer one credit at a time (the
BLOCK policy), and the web server with Jolokia (management). The instance's
``broker.xml`` gets a short ``message-expiry-scan-period`` (EXPIRY rules: the scanner runs often
enough for the suite's clock) and the heap is bounded (two shared cores, several engineers).

``python -m mqconform.adapters.artemis.server --fetch [--version V]`` warms the cache (setup.sh).
The process plumbing (ports, readiness wait, die-with-parent, stop and removal) is :mod:`.._process`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from mqconform.conformance.judging.deviations import parse_version

from .._process import LOOPBACK, SHORT_RUN_JIT, ServerProcess, free_port, java, port_accepts, release_main
from ..contract import AdapterError
from .room import ARTEMIS_RELEASES

#: the releases Maven Central serves (the artemis room's release line: 2.18.0 to 2.40.0, and 2.56.0)
SERVED = ARTEMIS_RELEASES
#: the release the suite's figures, registry and tests were measured on; 2.56.0 (the current release)
#: is `-o version=2.56.0`
DEFAULT_VERSION = "2.40.0"
READY_TIMEOUT_S = 90.0
#: what `artemis run` logs once Jolokia answers (AMQ241002) and the broker is live (AMQ221007)
READY_LINE = "AMQ221007"
#: the scanner period for expiry (core default 30000 ms, far beyond the suite's 1.5 s steps)
EXPIRY_SCAN_MS = 100
HEAP = "-Xms96M -Xmx384M"
JIT = " ".join(SHORT_RUN_JIT)
USER = "admin"
PASSWORD = "admin"


def at_least(version: str, minimum: str) -> bool:
    """Whether release `version` is `minimum` or newer (numeric comparison, as the deviation
    registry parses versions)."""
    return (parse_version(version) or ()) >= (parse_version(minimum) or ())


def fetch(version: str = DEFAULT_VERSION) -> Path:
    """ARTEMIS_HOME of release `version`: the release line's Maven Central distribution
    (:func:`mqconform.releases.binary`: ``mvn dependency:copy`` into the cache once, under a lock);
    AdapterError without mvn or on a failed fetch."""
    from mqconform.releases import ReleaseError, binary, line

    if version not in SERVED:
        raise AdapterError(f"artemis: release {version} is not served (served: {', '.join(SERVED)})")
    try:
        launcher = binary(line("artemis").release(version))
    except ReleaseError as exc:
        raise AdapterError(f"artemis: {exc} (or pass url= to use a running broker)") from None
    return launcher.parent.parent


def home_of(server_bin: str) -> Path:
    """ARTEMIS_HOME of a given launcher (``<home>/bin/artemis``, what `mqconform matrix` passes)."""
    launcher = Path(server_bin)
    if launcher.name != "artemis" or not launcher.is_file():
        raise AdapterError(f"artemis: server_bin {server_bin} is not a distribution's bin/artemis")
    return launcher.parent.parent


def _rewrite_broker_xml(text: str, port: int, block_port: int) -> str:
    """One acceptor on 127.0.0.1:`port` (AMQP, CORE, STOMP), one AMQP acceptor on `block_port` that
    grants a producer one credit at a time (PAGING-3 BLOCK: the broker grants the next credit only while
    the address is not full, ProtonAbstractReceiver#FlowControlRunner), a short expiry scan period, no
    default dead-letter or expiry address."""
    acceptor = (f'<acceptor name="artemis">tcp://{LOOPBACK}:{port}?protocols=AMQP,CORE,STOMP;'
                "useEpoll=true;amqpCredits=1000;amqpLowCredits=300;amqpMinLargeMessageSize=1048576;"
                "tcpNoDelay=true</acceptor>")
    block = (f'<acceptor name="artemis-block">tcp://{LOOPBACK}:{block_port}?protocols=AMQP;useEpoll=true;'
             "amqpCredits=1;amqpLowCredits=0;amqpMinLargeMessageSize=1048576;tcpNoDelay=true</acceptor>")
    text, n = re.subn(r"<acceptors>.*?</acceptors>",
                      f"<acceptors>\n         {acceptor}\n         {block}\n      </acceptors>",
                      text, count=1, flags=re.S)
    if n != 1:
        raise AdapterError("artemis: the created broker.xml has no <acceptors> section")
    # the journal (MAPPED, `--no-fsync`: journal-datasync false) and page files written at once, not
    # after a buffer timeout: what `artemis create` itself writes for that journal when it tunes
    # (Create#performAutoTune; `--no-autotune` leaves the 3.3 ms default), every sync write (a durable
    # send, an ack's commit) otherwise waits for the timer
    extra = (f"<message-expiry-scan-period>{EXPIRY_SCAN_MS}</message-expiry-scan-period>\n      "
             "<journal-buffer-timeout>0</journal-buffer-timeout>\n      "
             "<page-sync-timeout>0</page-sync-timeout>\n      ")
    text = text.replace("<acceptors>", extra + "<acceptors>", 1)
    # no catch-all dead-letter or expiry address: a queue has one only where the suite declares it
    # (without one a dead letter is dropped and an expired message removed, REDELIVERY-6, EXPIRY-6)
    return re.sub(r"\s*<(dead-letter-address|expiry-address)>[^<]*</\1>", "", text)


def _plain_password(text: str) -> str:
    """The users file with USER's password stored as it is, not hashed. `artemis create` stores it as
    ``ENC(1024:salt:hash)`` (PBKDF2), which PropertiesLoginModule verifies on every login, and the web
    server logs in on every Jolokia request (HTTP Basic): measured on 2.40.0, most of the broker's CPU
    in a run went to that hash. A stored password that is not ``ENC(...)`` is compared as plain text
    (PasswordMaskingUtil#getHashProcessor, the same from 2.18.0): the login is still required."""
    text, n = re.subn(rf"^{re.escape(USER)}\s*=.*$", f"{USER} = {PASSWORD}", text, count=1, flags=re.M)
    if n != 1:
        raise AdapterError(f"artemis: the created users file has no line for {USER}")
    return text


class ArtemisProcess(ServerProcess):
    """One Artemis broker: AMQP/CORE/STOMP on 127.0.0.1:<port>, Jolokia on 127.0.0.1:<http_port>."""

    dir_prefix = "mqc-artemis-"
    log_name = "stdout.log"
    ready_timeout_s = READY_TIMEOUT_S
    poll_s = 0.1
    attempts = 2

    def __init__(self, version: str = DEFAULT_VERSION, home: Path | None = None) -> None:
        super().__init__()
        self.version = version
        self.home = home if home is not None else fetch(version)
        self.java = java("artemis")
        self.http_port = 0
        #: the AMQP acceptor granting one credit at a time (address-full policy BLOCK)
        self.block_port = 0
        self._log_offset = 0

    @property
    def url(self) -> str:
        return f"amqp://{LOOPBACK}:{self.port}"

    @property
    def block_url(self) -> str:
        return f"amqp://{LOOPBACK}:{self.block_port}"

    @property
    def jolokia_url(self) -> str:
        return f"http://{LOOPBACK}:{self.http_port}/console/jolokia"

    def _prepare(self, workdir: Path) -> tuple[list[str], Path | None]:
        instance = workdir / "instance"
        if not (instance / "bin" / "artemis").is_file():
            self._create(instance)
        log = workdir / self.log_name
        self._log_offset = log.stat().st_size if log.exists() else 0
        return [str(instance / "bin" / "artemis"), "run"], instance

    def _create(self, instance: Path) -> None:
        """``artemis create`` into `instance`, then free loopback ports and a bounded heap."""
        self.http_port = free_port()
        self.block_port = free_port()
        command = [str(self.home / "bin" / "artemis"), "create", str(instance), "--silent", "--force",
                   "--user", USER, "--password", PASSWORD, "--require-login", "--no-autotune", "--nio",
                   "--host", LOOPBACK, "--http-host", LOOPBACK, "--relax-jolokia", "--no-fsync"]
        env = {**os.environ, "JAVA_HOME": str(Path(os.path.realpath(self.java)).parent.parent)}
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        if done.returncode != 0:
            lines = (done.stdout + done.stderr).strip().splitlines()
            raise AdapterError(f"artemis: create failed: {lines[-1] if lines else done.returncode}")
        etc = instance / "etc"
        broker_xml = etc / "broker.xml"
        broker_xml.write_text(_rewrite_broker_xml(broker_xml.read_text(), self.port, self.block_port))
        bootstrap = etc / "bootstrap.xml"
        # the web binding: <binding uri="http://host:port"> (2.21+), <web bind="http://host:port"> before
        bootstrap.write_text(re.sub(r"((?:uri|bind)=\"http://[^:\"]+:)\d+", rf"\g<1>{self.http_port}",
                                    bootstrap.read_text()))
        profile = etc / "artemis.profile"
        profile.write_text(re.sub(r"-Xms\S+ -Xmx\S+", f"{HEAP} {JIT}", profile.read_text()))
        users = etc / "artemis-users.properties"
        users.write_text(_plain_password(users.read_text()))

    def _ready(self) -> bool:
        assert self.workdir is not None
        log = Path(self.workdir) / self.log_name
        try:
            with open(log, "rb") as f:
                f.seek(self._log_offset)
                seen = READY_LINE.encode() in f.read()
        except OSError:
            return False
        return seen and all(port_accepts(p) for p in (self.port, self.http_port, self.block_port))

    def _failure(self, reason: str) -> str:
        return f"artemis {self.version}: broker did not start: {reason}"

    def halt(self) -> None:
        """SIGTERM: Artemis' shutdown hook stops the broker cleanly (keeps the instance)."""
        super().halt()


_shared: dict[str, ArtemisProcess] = {}


def shared_broker(version: str = DEFAULT_VERSION, home: Path | None = None) -> ArtemisProcess:
    """The process-wide broker of `version` (from `home` when given), started on first use and reused
    (stopped at exit)."""
    key = str(home) if home is not None else version
    broker = _shared.get(key)
    if broker is None or not broker.running():
        broker = ArtemisProcess(version, home).start()
        _shared[key] = broker
    return broker


def main(argv: list[str] | None = None) -> int:
    """``--fetch``: warm the cache with one release (idempotent); ``--run``: start one and wait."""
    return release_main(argv, prog="python -m mqconform.adapters.artemis.server", served=SERVED,
                        default=DEFAULT_VERSION, fetch=fetch, start=lambda v: ArtemisProcess(v).start(),
                        describe=lambda b: f"{b.url} {b.jolokia_url}",
                        wait=lambda b: b.process.wait() if b.process else None)

if __name__ == "__main__":
    sys.exit(main())
