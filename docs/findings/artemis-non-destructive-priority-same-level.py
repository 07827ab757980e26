"""Artemis 2.56.0: on a non-destructive queue, a priority-9 message sent while the consumer is busy is
delivered after a priority-0 message that was already pending.

Plain client (python-qpid-proton + Jolokia over urllib), no mqconform: creates a non-destructive
anycast queue, sends b (priority 0) and h1 (priority 9), attaches a receiver with one credit (it gets
h1), sends h2 (priority 9), accepts h1 and grants one more credit:

    python artemis-non-destructive-priority-same-level.py amqp://127.0.0.1:61616 http://127.0.0.1:8161

prints what the second credit brings (expected h2: the highest priority; 2.18.0 to 2.56.0 give b) and
exits 1 when it is not h2. A third argument ``destructive`` makes the queue a plain one, where the same
steps give h2; ``selector`` makes it a plain one whose consumer (selector ``color = 'red'``) skips a
blue h1 at 9: it is given a (priority 0), and the second credit brings b (0) before h2 again.
Credentials $ARTEMIS_USER / $ARTEMIS_PASSWORD (admin/admin), broker name $ARTEMIS_BROKER (127.0.0.1,
the --host given to `artemis create`).
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
from proton.reactor import Selector
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


def main(amqp: str, http: str, mode: str) -> int:
    """`mode`: non-destructive (the finding), destructive (the same steps on a plain queue: h2 comes
    second), selector (a plain queue whose consumer's selector skips the top message h1)."""
    name = f"ndprio-{uuid.uuid4().hex[:8]}"
    broker_op(http, "createQueue(java.lang.String,boolean)", json.dumps(
        {"name": name, "address": name, "routing-type": "ANYCAST", "durable": True,
         "non-destructive": mode == "non-destructive"}), False)
    conn = BlockingConnection(amqp, user=USER, password=PASSWORD, timeout=10)
    sender = conn.create_sender(name)
    # (body, priority, color); h1 is the last add, at 9
    sends = [("b", 0, "red"), ("h1", 9, "red")]
    if mode == "selector":
        sends = [("a", 0, "red"), ("b", 0, "red"), ("h1", 9, "blue")]
    for body, priority, color in sends:
        sender.send(Message(body=body, priority=priority, durable=True, properties={"color": color}))
    collect = Collect()
    options = Selector("color = 'red'") if mode == "selector" else None
    receiver = conn.create_receiver(f"{name}::{name}", credit=0, handler=collect, options=options)
    first, delivery = take(conn, receiver, collect)  # h1 (selector: a); no credit left
    sender.send(Message(body="h2", priority=9, durable=True, properties={"color": "red"}))  # at 9 again
    delivery.update(Delivery.ACCEPTED)  # type: ignore[attr-defined]
    delivery.settle()  # type: ignore[attr-defined]
    second, delivery = take(conn, receiver, collect)
    delivery.update(Delivery.ACCEPTED)  # type: ignore[attr-defined]
    delivery.settle()  # type: ignore[attr-defined]
    print(f"{mode}: first credit: {first}; second credit: {second} "
          "(expected h2, priority 9; b has priority 0)")
    conn.close()
    broker_op(http, "destroyQueue(java.lang.String,boolean,boolean)", name, True, True)
    return 0 if second == "h2" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "non-destructive"))
