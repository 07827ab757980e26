"""A ring queue on a paging address keeps more messages than its ring-size (Artemis 2.40.0).

Plain client (python-qpid-proton + Jolokia over urllib), no mqconform: an anycast queue with ring-size 2
on an address that pages from its second message (max-size-messages 2, PAGE). Three messages are sent
(the third is written to a page file and read back: a paged reference), a receiver takes the two the
ring keeps, three more are sent, and the receiver closes without settling, so both messages return.
With nothing delivering and the same steps on an address that does not page, a ring of 2 holds 2
messages; with paging, 2.40.0 and 2.56.0 hold 3 and a new receiver gets all three: the returning paged
reference that the ring replaces is also taken off the pending count, where it never was, so the second
return is kept over the ring. (The manual says paged messages don't count against a ring's size and
recommends not paging addresses with ring queues: see artemis-ring-page-returns.md for what remains.)

    python artemis-ring-page-returns.py amqp://127.0.0.1:61616 http://127.0.0.1:8161 [memory]

With ``memory`` the address does not page (no size limit): the same steps leave 2 messages.

Credentials: $ARTEMIS_USER / $ARTEMIS_PASSWORD (default admin/admin); broker name $ARTEMIS_BROKER
(default 127.0.0.1, the --host given to `artemis create`). Exit 1 when the ring holds more than 2.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import urllib.request
import uuid

from proton import Message
from proton.handlers import MessagingHandler
from proton.utils import BlockingConnection

RING = 2


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
        self.got: list[str] = []

    def on_message(self, event: object) -> None:
        self.got.append(str(event.message.body))  # type: ignore[attr-defined]


def take(conn: BlockingConnection, queue: str, count: int) -> tuple[object, list[str]]:
    """Attach a receiver and drain up to `count` messages (left unsettled)."""
    handler = Collect()
    receiver = conn.create_receiver(f"{queue}::{queue}", credit=0, handler=handler)
    receiver.link.drain(count)
    conn.wait(lambda: len(handler.got) >= count or receiver.link.credit == 0, timeout=10)
    return receiver, handler.got


def main(amqp: str, http: str, paging: bool) -> int:
    name = f"ring-page-{uuid.uuid4().hex[:8]}"
    if paging:
        jolokia(http, "addAddressSettings(java.lang.String,java.lang.String)", name,
                json.dumps({"maxSizeMessages": 2, "addressFullMessagePolicy": "PAGE"}))
    queue = {"name": name, "address": name, "routing-type": "ANYCAST", "durable": True, "ring-size": RING}
    jolokia(http, "createQueue(java.lang.String,boolean)", json.dumps(queue), False)
    user, password = os.environ.get("ARTEMIS_USER", "admin"), os.environ.get("ARTEMIS_PASSWORD", "admin")
    conn = BlockingConnection(amqp, user=user, password=password, timeout=10)
    sender = conn.create_sender(name)
    for body in ("m1", "m2", "m3"):  # m3 is paged; read back, the ring replaces m1
        sender.send(Message(body=body, durable=True))
    time.sleep(0.5)
    receiver, first = take(conn, name, 3)
    for body in ("m4", "m5", "m6"):  # paged; read back, the ring replaces m4
        sender.send(Message(body=body, durable=True))
    time.sleep(0.5)
    receiver.close()  # returns the two unsettled messages (one of them a paged reference)
    time.sleep(0.5)
    _, left = take(conn, name, 10)
    print(f"{'paging' if paging else 'memory only'}, ring-size {RING}; first receiver got {first}; "
          f"after it closed, a new receiver got {left}")
    conn.close()
    jolokia(http, "destroyQueue(java.lang.String,boolean,boolean)", name, True, True)
    return 0 if len(left) <= RING else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], paging=not (len(sys.argv) > 3 and sys.argv[3] == "memory")))
