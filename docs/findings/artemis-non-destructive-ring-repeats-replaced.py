"""A non-destructive ring queue delivers one message twice to the same consumer (Artemis 2.18.0 to 2.40.0).

Plain client (python-qpid-proton + Jolokia over urllib), no mqconform: creates a non-destructive
anycast queue with ring-size 1, attaches a receiver without credit, sends m1 and m2 (m2 replaces m1),
then grants one credit at a time, twice. A non-destructive queue gives each consumer each message
once: the second grant should bring nothing; on every served release it brings m2 again. With a
ring-size of 2 (argument ``2``: nothing is replaced) the grants bring m1 and m2, once each.

    python artemis-non-destructive-ring-repeats-replaced.py amqp://127.0.0.1:61616 http://127.0.0.1:8161 [2]

Credentials: $ARTEMIS_USER / $ARTEMIS_PASSWORD (default admin/admin); broker name $ARTEMIS_BROKER
(default 127.0.0.1, the --host given to `artemis create`).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import urllib.request
import uuid

from proton import Message
from proton.handlers import MessagingHandler
from proton.utils import BlockingConnection


def jolokia(http: str, operation: str, *arguments: object) -> object:
    user, password = os.environ.get("ARTEMIS_USER", "admin"), os.environ.get("ARTEMIS_PASSWORD", "admin")
    broker = os.environ.get("ARTEMIS_BROKER", "127.0.0.1")
    body = json.dumps({"type": "exec", "mbean": f'org.apache.activemq.artemis:broker="{broker}"',
                       "operation": operation, "arguments": list(arguments)}).encode()
    request = urllib.request.Request(f"{http}/console/jolokia", body, {
        "Content-Type": "application/json", "Origin": "http://localhost",
        "Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()})
    answer = json.loads(urllib.request.urlopen(request).read())
    assert answer["status"] == 200, answer
    return answer["value"]


class Collect(MessagingHandler):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.got: list[tuple[object, Message]] = []

    def on_message(self, event: object) -> None:
        self.got.append((event.delivery, event.message))  # type: ignore[attr-defined]


def grant_one(conn: BlockingConnection, receiver: object, collect: Collect) -> str | None:
    """Flow one credit with drain and return the body that arrives, or None once the drain ends."""
    before = len(collect.got)
    link = receiver.link  # type: ignore[attr-defined]
    link.drain(1)
    conn.wait(lambda: len(collect.got) > before or link.credit == 0, timeout=10)
    return str(collect.got[-1][1].body) if len(collect.got) > before else None


def main(amqp: str, http: str, ring: int) -> int:
    name = f"ndr-{uuid.uuid4().hex[:8]}"
    jolokia(http, "createQueue(java.lang.String,boolean)", json.dumps(
        {"name": name, "address": name, "routing-type": "ANYCAST", "durable": True, "non-destructive": True,
         "ring-size": ring}), False)
    user, password = os.environ.get("ARTEMIS_USER", "admin"), os.environ.get("ARTEMIS_PASSWORD", "admin")
    conn = BlockingConnection(amqp, user=user, password=password, timeout=10)
    collect = Collect()
    receiver = conn.create_receiver(f"{name}::{name}", credit=0, handler=collect)
    sender = conn.create_sender(name)
    sender.send(Message(body="m1", durable=True))  # offered to the receiver, which has no credit
    sender.send(Message(body="m2", durable=True))  # ring-size 1: m2 replaces m1
    got = [grant_one(conn, receiver, collect), grant_one(conn, receiver, collect)]
    print(f"ring-size {ring}: the two grants brought {got}")
    conn.close()
    jolokia(http, "destroyQueue(java.lang.String,boolean,boolean)", name, True, True)
    expected = ["m2", None] if ring == 1 else ["m1", "m2"]
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1))
