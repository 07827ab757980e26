"""The artemis adapter's own broker as a short-lived test broker (adapters/artemis/server.py): the
admin password stored as plain text (no PBKDF2 hash per Jolokia login) while the login stays
required, the journal and page files written without a buffer timeout, the JVM without C2; and an
example's teardown in one management request."""

from __future__ import annotations

import base64
import http.client
import json
from pathlib import Path

import pytest

from mqconform.adapters.artemis import ArtemisAdapter
from mqconform.adapters.artemis.management import Jolokia, ManagementError
from mqconform.adapters.artemis.server import (
    JIT,
    PASSWORD,
    USER,
    _plain_password,
    _rewrite_broker_xml,
    shared_broker,
)
from mqconform.adapters.artemis.sizing import threshold
from mqconform.adapters.contract import AdapterError
from mqconform.reference_model.config import AddressConfig, QueueConfig

pytestmark = pytest.mark.broker("artemis")

_USERS = """## a comment = ENC(not this one)
admin = ENC(1024:AB12:CD34)
other = ENC(1024:EF56:0789)
"""


def test_the_admin_password_is_stored_plain_and_others_are_kept() -> None:
    lines = _plain_password(_USERS).splitlines()
    assert lines == ["## a comment = ENC(not this one)", f"{USER} = {PASSWORD}",
                     "other = ENC(1024:EF56:0789)"]


def test_a_users_file_without_the_admin_is_refused() -> None:
    with pytest.raises(AdapterError, match="no line for admin"):
        _plain_password("other = x\n")


def test_the_journal_and_pages_are_written_without_a_buffer_timeout() -> None:
    text = ("<core><journal-type>MAPPED</journal-type><acceptors><acceptor>tcp://0.0.0.0:61616"
            "</acceptor></acceptors><dead-letter-address>DLQ</dead-letter-address></core>")
    rewritten = _rewrite_broker_xml(text, 1234, 1235)
    assert "<journal-buffer-timeout>0</journal-buffer-timeout>" in rewritten
    assert "<page-sync-timeout>0</page-sync-timeout>" in rewritten
    assert rewritten.count("<acceptors>") == 1 and "dead-letter-address" not in rewritten


def _jolokia_status(url: str, user: str, password: str) -> int:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 8161, timeout=10)
    try:
        body = json.dumps({"type": "read", "mbean": 'org.apache.activemq.artemis:broker="127.0.0.1"',
                           "attribute": "Version"})
        conn.request("POST", parts.path, body, {"Authorization": f"Basic {token}", "Origin": "http://localhost",
                                                "Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_the_broker_still_requires_the_login() -> None:
    broker = shared_broker()
    assert broker.workdir is not None
    etc = Path(broker.workdir) / "instance" / "etc"
    assert f"{USER} = {PASSWORD}" in (etc / "artemis-users.properties").read_text().splitlines()
    assert JIT in (etc / "artemis.profile").read_text()
    assert _jolokia_status(broker.jolokia_url, USER, PASSWORD) == 200
    assert _jolokia_status(broker.jolokia_url, USER, PASSWORD + "-wrong") in (401, 403)
    assert _jolokia_status(broker.jolokia_url, "nobody", PASSWORD) in (401, 403)


def test_close_removes_queues_addresses_and_settings_in_one_request(namespace: str) -> None:
    adapter = ArtemisAdapter()
    try:
        adapter.open(namespace)
        assert adapter.declare_address(AddressConfig(name="a", max_size_bytes=200 * 320)).is_ok
        assert adapter.declare_queue(QueueConfig(name="q", address="a")).is_ok
        assert adapter.declare_queue(QueueConfig(name="dlq-target", max_delivery_attempts=2)).is_ok
        mgmt = adapter._mgmt()
        physical = [adapter._physical(n) for n in ("a", "q", "dlq-target")]

        def limit() -> object:
            settings = json.loads(mgmt.exec(mgmt.broker, "getAddressSettingsAsJSON(java.lang.String)",
                                            f"{physical[0]}.#"))
            return settings["maxSizeBytes"]

        assert limit() == threshold(200 * 320)
        posts: list[object] = []
        real_post = mgmt._post

        def counted(body: object) -> object:
            posts.append(body)
            return real_post(body)

        mgmt._post = counted  # type: ignore[method-assign]
        adapter.close()
        mgmt._post = real_post  # type: ignore[method-assign]
        assert len(posts) == 1
        names = mgmt.read(mgmt.broker, "AddressNames", "QueueNames")
        assert not set(physical) & (set(names["AddressNames"]) | set(names["QueueNames"]))
        assert limit() != threshold(200 * 320)  # the limit's match is gone: the catch-all's
    finally:
        adapter.shutdown()


class _Answer:
    def __init__(self, status: int, body: object) -> None:
        self.status, self.body = status, json.dumps(body).encode()

    def read(self) -> bytes:
        return self.body


class _Connection:
    """Stands for the kept-alive HTTP connection: answers in turn, records the requests."""

    def __init__(self, answers: list[_Answer]) -> None:
        self.answers, self.sent = answers, 0

    def request(self, *args: object) -> None:
        self.sent += 1

    def getresponse(self) -> _Answer:
        return self.answers.pop(0)

    def close(self) -> None:
        pass


def _jolokia(answers: list[_Answer]) -> tuple[Jolokia, _Connection]:
    mgmt = Jolokia("http://127.0.0.1:1/console/jolokia", "u", "p")
    conn = _Connection(answers)
    mgmt._conn = conn  # type: ignore[assignment]
    return mgmt, conn


def test_a_request_refused_with_403_is_asked_once_more() -> None:
    mgmt, conn = _jolokia([_Answer(403, {}), _Answer(200, [{"status": 200, "value": "2.40.0"}])])
    assert mgmt.read(mgmt.broker, "Version") == {"Version": "2.40.0"} and conn.sent == 2
    mgmt, conn = _jolokia([_Answer(403, {}), _Answer(403, {})])
    with pytest.raises(ManagementError, match="HTTP 403"):
        mgmt.read(mgmt.broker, "Version")
    assert conn.sent == 2


def test_post_answers_each_part_without_raising_on_a_refused_one() -> None:
    parts = [{"status": 404, "error": "no such queue"}, {"status": 200, "value": None}]
    mgmt, conn = _jolokia([_Answer(200, parts)])
    assert mgmt.post([{"type": "exec"}, {"type": "exec"}]) == parts and conn.sent == 1
