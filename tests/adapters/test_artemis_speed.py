"""The artemis adapter's management reads in one request (adapters/artemis/management.py
`Jolokia.reads`), without a broker: the requests go in order, each flush before its MBean's reads, and
the answers come back per look."""

from __future__ import annotations

from typing import Any

import pytest

from mqconform.adapters.artemis.management import Jolokia, ManagementError


class _Recorded(Jolokia):
    def __init__(self, answers: list[dict[str, Any]]) -> None:
        super().__init__("http://127.0.0.1:1/console/jolokia", "u", "p")
        self.answers = answers
        self.sent: list[Any] = []

    def _post(self, body: Any) -> Any:
        self.sent.append(body)
        return self.answers


def test_reads_sends_one_request_in_order_and_splits_the_answers() -> None:
    mgmt = _Recorded([{"status": 200, "value": 5}, {"status": 200, "value": True},
                      {"status": 200, "value": None}, {"status": 200, "value": 3}])
    address, queue = mgmt.address_mbean("a"), mgmt.queue_mbean("a", "q")
    answers = mgmt.reads((address, ("AddressSize", "Paging"), False), (queue, ("MessagesAdded",), True))
    assert answers == [{"AddressSize": 5, "Paging": True}, {"MessagesAdded": 3}]
    [body] = mgmt.sent
    assert [(r["type"], r.get("attribute") or r.get("operation")) for r in body] == [
        ("read", "AddressSize"), ("read", "Paging"), ("exec", "flushExecutor()"), ("read", "MessagesAdded")]
    assert body[2]["mbean"] == body[3]["mbean"] == queue


def test_reads_raises_on_a_refused_part() -> None:
    mgmt = _Recorded([{"status": 200, "value": 5}, {"status": 404, "error": "no such mbean"}])
    with pytest.raises(ManagementError, match="no such mbean"):
        mgmt.reads((mgmt.address_mbean("a"), ("AddressSize", "Paging"), False))
