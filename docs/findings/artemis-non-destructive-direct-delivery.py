"""A non-destructive queue loses a message that was delivered directly (Artemis 2.40.0).

Plain client (python-qpid-proton + Jolokia over urllib), no mqconform: creates a non-destructive
anycast queue, attaches a receiver with credit, sends one message, accepts it, detaches, attaches a
second receiver and asks for one message. On a non-destructive queue the second receiver should get
the message again; on 2.40.0 it gets nothing. Sending the message BEFORE the first receiver attaches
(argument ``before``) keeps it, as documented.

    python artemis-non-destructive-direct-delivery.py amqp://127.0.0.1:61616 http://127.0.0.1:8161 [before]

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


def main(amqp: str, http: str, before: bool) -> int:
    name = f"nd-{uuid.uuid4().hex[:8]}"
    jolokia(http, "createQueue(java.lang.String,boolean)", json.dumps(
        {"name": name, "address": name, "routing-type": "ANYCAST", "durable": True, "non-destructive": True}),
        False)
    user, password = os.environ.get("ARTEMIS_USER", "admin"), os.environ.get("ARTEMIS_PASSWORD", "admin")
    conn = BlockingConnection(amqp, user=user, password=password, timeout=10)
    sender = conn.create_sender(name)
    if before:
        sender.send(Message(body="hello"))
    first = Collect()
    receiver = conn.create_receiver(f"{name}::{name}", credit=5, handler=first)
    if not before:
        sender.send(Message(body="hello"))  # the queue is empty and the receiver has credit
    conn.wait(lambda: bool(first.got), timeout=10)
    delivery, _message = first.got[0]
    delivery.update(delivery.ACCEPTED)  # type: ignore[attr-defined]
    delivery.settle()  # type: ignore[attr-defined]
    receiver.close()
    second = Collect()
    again = conn.create_receiver(f"{name}::{name}", credit=0, handler=second)
    again.link.drain(1)
    conn.wait(lambda: bool(second.got) or again.link.credit == 0, timeout=10)
    kept = bool(second.got)
    print(f"sent {'before' if before else 'after'} the first receiver attached; "
          f"second receiver got the message again: {kept}")
    conn.close()
    jolokia(http, "destroyQueue(java.lang.String,boolean,boolean)", name, True, True)
    return 0 if kept else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "before"))
