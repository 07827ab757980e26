"""Artemis management over Jolokia (HTTP, one kept-alive connection, bulk requests).

MBean names follow MGMT/ObjectNameBuilder: the broker ``org.apache.activemq.artemis:broker="B"``, an
address ``...,component=addresses,address="A"``, a queue
``...,subcomponent=queues,routing-type="anycast",queue="Q"`` (or ``"multicast"``). A request the
broker refuses (status other than 200) raises :class:`ManagementError` with the broker's error text.
"""

from __future__ import annotations

import base64
import http.client
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit


class ManagementError(Exception):
    """A Jolokia request failed (the broker refused it or could not be reached)."""


class Jolokia:
    """Jolokia client for one broker (``url`` = ``http://host:port/console/jolokia``)."""

    def __init__(self, url: str, user: str, password: str, broker_name: str = "127.0.0.1",
                 timeout: float = 10.0, on_round_trip: Callable[[float], None] | None = None) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 8161
        self.path = parts.path or "/console/jolokia"
        self.timeout = timeout
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        # the Origin header passes the CORS check of etc/jolokia-access.xml
        self.headers = {"Authorization": f"Basic {token}", "Origin": "http://localhost",
                        "Content-Type": "application/json"}
        self.broker = f'org.apache.activemq.artemis:broker="{broker_name}"'
        self._conn: http.client.HTTPConnection | None = None
        #: told the seconds of every answered request (the adapter's latency meter)
        self.on_round_trip = on_round_trip

    # ------------------------------------------------------------------ names
    def address_mbean(self, address: str) -> str:
        return f'{self.broker},component=addresses,address="{address}"'

    def queue_mbean(self, address: str, queue: str, routing: str = "anycast") -> str:
        return (f'{self.broker},component=addresses,address="{address}",subcomponent=queues,'
                f'routing-type="{routing}",queue="{queue}"')

    # ------------------------------------------------------------------ requests
    def _post(self, body: Any) -> Any:
        payload = json.dumps(body)
        for attempt in range(2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            started = time.monotonic()
            try:
                self._conn.request("POST", self.path, payload, self.headers)
                response = self._conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt:
                    raise ManagementError(f"jolokia unreachable: {exc}") from None
                continue
            if self.on_round_trip is not None:
                self.on_round_trip(time.monotonic() - started)
            if response.status == 403 and not attempt:
                # refused before any MBean was called (the web server's login or Jolokia's origin
                # check: a refused operation is a 200 with the part's own status), so it is asked
                # once more; seen once in a `ci` run on 2.40.0 with the machine at load 15
                continue
            if response.status != 200:
                raise ManagementError(f"jolokia HTTP {response.status}")
            return json.loads(data)
        raise ManagementError("jolokia unreachable")

    def post(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Several raw requests in one round trip; each part's own answer (status and value or error),
        a refused part not raised (ManagementError only when the broker cannot be reached)."""
        answers: list[dict[str, Any]] = self._post(requests)
        return answers

    @staticmethod
    def _value(answer: dict[str, Any]) -> Any:
        if answer.get("status") != 200:
            raise ManagementError(str(answer.get("error") or answer).splitlines()[0])
        return answer.get("value")

    def exec(self, mbean: str, operation: str, *arguments: Any) -> Any:
        """Run `operation` (its full signature, e.g. ``createQueue(java.lang.String,boolean)``)."""
        return self._value(self._post({"type": "exec", "mbean": mbean, "operation": operation,
                                       "arguments": list(arguments)}))

    def read(self, mbean: str, *attributes: str, flush: bool = False) -> dict[str, Any]:
        """Several attributes of one MBean in one request. With `flush` (a queue's MBean) the request
        first runs QueueControl#flushExecutor, so the counts include what the queue's executor has
        not yet moved from its intermediate list (QueueImpl#addTail adds there; MessageCount and
        MessagesAdded count a message once the executor took it: "useful if you need the exact
        number of counts")."""
        first = [self.flush_request(mbean)] if flush else []
        answers = self._post(first + [{"type": "read", "mbean": mbean, "attribute": a} for a in attributes])
        values = [self._value(answer) for answer in answers]
        return dict(zip(attributes, values[len(first):], strict=True))

    def reads(self, *looks: tuple[str, tuple[str, ...], bool]) -> list[dict[str, Any]]:
        """Several `read`s, each (mbean, attributes, flush), in one request and in that order."""
        requests: list[dict[str, Any]] = []
        for mbean, attributes, flush in looks:
            requests += [self.flush_request(mbean)] if flush else []
            requests += [{"type": "read", "mbean": mbean, "attribute": a} for a in attributes]
        values = iter(self.bulk(requests))
        answers = []
        for _, attributes, flush in looks:
            if flush:
                next(values)
            answers.append({a: next(values) for a in attributes})
        return answers

    @staticmethod
    def flush_request(mbean: str) -> dict[str, Any]:
        """QueueControl#flushExecutor as a bulk request (see `read`)."""
        return {"type": "exec", "mbean": mbean, "operation": "flushExecutor()", "arguments": []}

    def bulk(self, requests: list[dict[str, Any]]) -> list[Any]:
        """Several raw requests in one round trip; their values (ManagementError on the first refusal)."""
        return [self._value(a) for a in self._post(requests)]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
