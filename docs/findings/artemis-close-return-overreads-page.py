"""Artemis 2.40.0: closing a consumer that holds paged messages can depage past the read budget.

Plain client (python-qpid-proton + Jolokia over urllib), no mqconform:

    python artemis-close-return-overreads-page.py amqp://127.0.0.1:61616 http://127.0.0.1:8161 [rounds]

Each round: a queue on an address paging after 3 messages, read budget max-read-page-messages 3
(bytes limits off); m1..m10 sent (m4..m10 paged); a receiver takes and accepts m1..m3, then takes
m4..m6 without settling them (they fill the budget: m7 stays in the page); the receiver is closed
(m4..m6 return) and a new one takes m4..m6 again. The browse (QueueControl#listMessages: in-memory
references, then the page cursor) then shows whether m7 was read into memory: [m7, m4, m5, m6, ...]
when it was (over the budget: m4..m7 were in memory together), [m4, m5, m6, m7, ...] when not. It is a
race, so several rounds (default 10) are run; exits 1 when any round over-read. Credentials
$ARTEMIS_USER / $ARTEMIS_PASSWORD (admin/admin), broker name $ARTEMIS_BROKER (127.0.0.1).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import urllib.request
import uuid

from proton import Delivery, Message
from proton.handlers import MessagingHandler
from proton.utils import BlockingConnection

USER, PASSWORD = os.environ.get("ARTEMIS_USER", "admin"), os.environ.get("ARTEMIS_PASSWORD", "admin")
BROKER = f'org.apache.activemq.artemis:broker="{os.environ.get("ARTEMIS_BROKER", "127.0.0.1")}"'


def jolokia(http: str, mbean: str, operation: str, *arguments: object) -> object:
    body = {"type": "exec", "mbean": mbean, "operation": operation, "arguments": list(arguments)}
    request = urllib.request.Request(f"{http}/console/jolokia", json.dumps(body).encode(), {
        "Content-Type": "application/json", "Origin": "http://localhost",
        "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
    answer = json.loads(urllib.request.urlopen(request).read())
    assert answer["status"] == 200, answer
    return answer["value"]


class Collect(MessagingHandler):
    def __init__(self) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.got: list[object] = []

    def on_message(self, event: object) -> None:
        self.got.append(event)


def take(conn: BlockingConnection, receiver: object, collect: Collect, count: int) -> list[object]:
    """`count` credits, `count` messages (their events)."""
    before = len(collect.got)
    receiver.flow(count)  # type: ignore[attr-defined]
    conn.wait(lambda: len(collect.got) >= before + count, timeout=10)
    return collect.got[before:]


def browse(http: str, name: str) -> list[str]:
    mbean = (f'{BROKER},component=addresses,address="{name}",subcomponent=queues,'
             f'routing-type="anycast",queue="{name}"')
    jolokia(http, mbean, "flushExecutor()")
    listed = jolokia(http, mbean, "listMessages(java.lang.String)", "")
    return [str(m.get("mid")) for m in listed]  # type: ignore[attr-defined]


def round_(amqp: str, http: str) -> list[str]:
    name = f"overread-{uuid.uuid4().hex[:8]}"
    jolokia(http, BROKER, "addAddressSettings(java.lang.String,java.lang.String)", name, json.dumps({
        "addressFullMessagePolicy": "PAGE", "maxSizeMessages": 3, "maxSizeBytes": -1,
        "maxReadPageMessages": 3, "prefetchPageMessages": 3, "maxReadPageBytes": -1,
        "prefetchPageBytes": -1}))
    jolokia(http, BROKER, "createQueue(java.lang.String,boolean)",
            json.dumps({"name": name, "address": name, "routing-type": "ANYCAST", "durable": True}), False)
    conn = BlockingConnection(amqp, user=USER, password=PASSWORD, timeout=10)
    sender = conn.create_sender(name)
    for i in range(1, 11):
        sender.send(Message(body=f"m{i}", properties={"mid": f"m{i}"}, durable=True))
    first = Collect()
    receiver = conn.create_receiver(f"{name}::{name}", credit=0, handler=first)
    for event in take(conn, receiver, first, 3):  # m1..m3, accepted
        event.delivery.update(Delivery.ACCEPTED)  # type: ignore[attr-defined]
        event.delivery.settle()  # type: ignore[attr-defined]
    time.sleep(0.2)
    held = [str(e.message.body) for e in take(conn, receiver, first, 3)]  # type: ignore[attr-defined]
    assert held == ["m4", "m5", "m6"], held
    before = browse(http, name)
    receiver.close()  # m4..m6 unsettled: RefsOperation#afterRollback returns them
    second = Collect()
    receiver = conn.create_receiver(f"{name}::{name}", credit=0, handler=second)
    again = [str(e.message.body) for e in take(conn, receiver, second, 3)]  # type: ignore[attr-defined]
    assert again == ["m4", "m5", "m6"], again
    after = browse(http, name)
    conn.close()
    jolokia(http, BROKER, "destroyQueue(java.lang.String,boolean,boolean)", name, True, True)
    jolokia(http, BROKER, "removeAddressSettings(java.lang.String)", name)
    print(f"browse while m4..m6 held: {before}; after the close and a new receiver: {after}")
    return after


def main(amqp: str, http: str, rounds: int = 10) -> int:
    over = sum(1 for _ in range(rounds) if round_(amqp, http)[0] != "m4")
    print(f"{over} of {rounds} rounds read m7 past max-read-page-messages 3 (expected 0)")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4])))
