"""Artemis 2.40.0: a priority-5 message sent after a cancelled priority-5 one is delivered after the
priority-4 messages already pending.

Plain client (python-qpid-proton + Jolokia over urllib), no mqconform:

    python artemis-priority-after-cancel.py amqp://127.0.0.1:61616 http://127.0.0.1:8161

prints the order a consumer receives m2..m5 in (expected m5 first: the highest priority; 2.40.0 gives
m2, m3, m4, m5) and exits 1 when m5 is not first. Credentials $ARTEMIS_USER / $ARTEMIS_PASSWORD
(admin/admin), broker name $ARTEMIS_BROKER (127.0.0.1).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import urllib.request
import uuid

from proton import Delivery, Message
from proton.handlers import MessagingHandler
from proton.utils import BlockingConnection

USER, PASSWORD = os.environ.get("ARTEMIS_USER", "admin"), os.environ.get("ARTEMIS_PASSWORD", "admin")
BROKER = f'org.apache.activemq.artemis:broker="{os.environ.get("ARTEMIS_BROKER", "127.0.0.1")}"'


def broker_op(http: str, operation: str, *arguments: object) -> object:
    body = {"type": "exec", "mbean": BROKER, "operation": operation, "arguments": list(arguments)}
    request = urllib.request.Request(f"{http}/console/jolokia", json.dumps(body).encode(), {
        "Content-Type": "application/json", "Origin": "http://localhost",
        "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
    answer = json.loads(urllib.request.urlopen(request).read())
    assert answer["status"] == 200, answer
    return answer["value"]


class Collect(MessagingHandler):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.got: list[object] = []

    def on_message(self, event: object) -> None:
        self.got.append(event)  # type: ignore[attr-defined]


def take(conn: BlockingConnection, receiver: object, collect: Collect) -> tuple[str, object]:
    """One credit, one message (its body and delivery)."""
    before = len(collect.got)
    receiver.flow(1)  # type: ignore[attr-defined]
    conn.wait(lambda: len(collect.got) > before, timeout=10)
    event = collect.got[-1]
    return str(event.message.body), event.delivery  # type: ignore[attr-defined]


def main(amqp: str, http: str) -> int:
    name = f"prio-{uuid.uuid4().hex[:8]}"
    broker_op(http, "createQueue(java.lang.String,boolean)",
              json.dumps({"name": name, "address": name, "routing-type": "ANYCAST", "durable": True}), False)
    conn = BlockingConnection(amqp, user=USER, password=PASSWORD, timeout=10)
    sender = conn.create_sender(name)
    sender.send(Message(body="m1", priority=5, durable=True))
    for body in ("m2", "m3", "m4"):
        sender.send(Message(body=body, priority=4, durable=True))
    first = Collect()
    receiver = conn.create_receiver(f"{name}::{name}", credit=0, handler=first)
    assert take(conn, receiver, first)[0] == "m1"
    receiver.close()  # m1 unsettled: cancelled back to the head (addHead at priority 5)
    second = Collect()
    receiver = conn.create_receiver(f"{name}::{name}", credit=0, handler=second)
    body, delivery = take(conn, receiver, second)
    assert body == "m1"
    delivery.update(Delivery.ACCEPTED)  # type: ignore[attr-defined]
    delivery.settle()  # type: ignore[attr-defined]
    sender.send(Message(body="m5", priority=5, durable=True))
    order = []
    for _ in range(4):
        body, delivery = take(conn, receiver, second)
        delivery.update(Delivery.ACCEPTED)  # type: ignore[attr-defined]
        delivery.settle()  # type: ignore[attr-defined]
        order.append(body)
    print(f"received after the cancel: {order} (expected m5 first)")
    conn.close()
    broker_op(http, "destroyQueue(java.lang.String,boolean,boolean)", name, True, True)
    return 0 if order[0] == "m5" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
