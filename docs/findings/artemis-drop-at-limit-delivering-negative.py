"""Artemis 2.40.0: dropping a message at max-delivery-attempts after an individual cancel (AMQP
modified{delivery-failed}) on a queue without a dead-letter address makes DeliveringCount negative.

Plain client (python-qpid-proton + Jolokia over urllib), no mqconform:

    python artemis-drop-at-limit-delivering-negative.py amqp://127.0.0.1:61616 http://127.0.0.1:8161

prints the queue's DeliveringCount and MessageCount after the drop (expected 0 and 1; 2.40.0 shows -1
and 0) and exits 1 when they are wrong. Credentials $ARTEMIS_USER / $ARTEMIS_PASSWORD (admin/admin),
broker name $ARTEMIS_BROKER (127.0.0.1). The broker's catch-all address setting must not name a
dead-letter address with bindings (the `artemis create` default names DLQ; this script sets the
queue's own address settings to an unbound dead-letter address, which takes the same path).
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


def jolokia(http: str, body: dict[str, object]) -> object:
    request = urllib.request.Request(f"{http}/console/jolokia", json.dumps(body).encode(), {
        "Content-Type": "application/json", "Origin": "http://localhost",
        "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
    answer = json.loads(urllib.request.urlopen(request).read())
    assert answer["status"] == 200, answer
    return answer["value"]


def broker_op(http: str, operation: str, *arguments: object) -> object:
    body = {"type": "exec", "mbean": BROKER, "operation": operation, "arguments": list(arguments)}
    return jolokia(http, body)


class Collect(MessagingHandler):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.got: list[object] = []

    def on_message(self, event: object) -> None:
        self.got.append(event.delivery)  # type: ignore[attr-defined]


def main(amqp: str, http: str) -> int:
    name = f"limit-{uuid.uuid4().hex[:8]}"
    broker_op(http, "addAddressSettings(java.lang.String,java.lang.String)", name,
              json.dumps({"maxDeliveryAttempts": 1, "deadLetterAddress": f"{name}-unbound-dla"}))
    broker_op(http, "createQueue(java.lang.String,boolean)",
              json.dumps({"name": name, "address": name, "routing-type": "ANYCAST", "durable": True}), False)
    conn = BlockingConnection(amqp, user=USER, password=PASSWORD, timeout=10)
    sender = conn.create_sender(name)
    sender.send(Message(body="m1"))
    sender.send(Message(body="m2"))
    collect = Collect()
    receiver = conn.create_receiver(f"{name}::{name}", credit=1, handler=collect)
    conn.wait(lambda: bool(collect.got), timeout=10)
    delivery = collect.got[0]
    delivery.local.failed = True  # type: ignore[attr-defined]
    delivery.update(Delivery.MODIFIED)  # type: ignore[attr-defined]
    delivery.settle()  # type: ignore[attr-defined]
    receiver.close()
    mbean = (f'{BROKER},component=addresses,address="{name}",subcomponent=queues,routing-type="anycast",'
             f'queue="{name}"')
    values = {a: jolokia(http, {"type": "read", "mbean": mbean, "attribute": a})
              for a in ("DeliveringCount", "MessageCount", "MessagesKilled")}
    print(f"after the drop at the delivery limit: {values} (expected DeliveringCount 0, MessageCount 1, "
          "MessagesKilled 1)")
    conn.close()
    broker_op(http, "destroyQueue(java.lang.String,boolean,boolean)", name, True, True)
    broker_op(http, "removeAddressSettings(java.lang.String)", name)
    return 0 if (values["DeliveringCount"], values["MessageCount"]) == (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
