"""The artemis adapter's own broker as a short-lived test broker (adapters/artemis/server.py): the
admin password stored as plain text (no PBKDF2 hash per Jolokia login) while the login stays
required, the journal and page files written without a buffer timeout, the JVM without C2."""

from __future__ import annotations

import base64
import http.client
import json
from pathlib import Path

import pytest

from mqconform.adapters.artemis.server import (
    JIT,
    PASSWORD,
    USER,
    _plain_password,
    _rewrite_broker_xml,
    shared_broker,
)
from mqconform.adapters.contract import AdapterError

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
