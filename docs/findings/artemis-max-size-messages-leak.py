"""Artemis 2.40.0: browsing a queue through management makes its address count each AMQP message with
application properties twice against max-size-messages, and once more after it is acknowledged.

Plain client (python-qpid-proton + Jolokia over urllib), no mqconform:

    python artemis-max-size-messages-leak.py amqp://127.0.0.1:61616 http://127.0.0.1:8161 [DROP|FAIL|PAGE]

An address limited only by max-size-messages 10 (policy DROP by default, one anycast queue) takes
durable AMQP messages with an application property, one at a time, in two rounds; between the rounds
everything is received and acknowledged. It does this twice: without a browse, and with
QueueControl#listMessages after each send. For each round it prints how many of the 10 sends reached
the queue (MessagesAdded) and after which send the address first said it was full (DROP, FAIL) or
paging (PAGE): AddressControl Paging. Expected every time: 10 of 10, full from the 10th send on (the
10th message reaches the limit). Exits 1 when the runs with and without the browse differ.
Credentials $ARTEMIS_USER / $ARTEMIS_PASSWORD (admin/admin), broker name $ARTEMIS_BROKER (127.0.0.1).

In the source (AMQPMessage#lazyDecodeApplicationProperties): the browse decodes the application
properties of a routed message and adds their estimate to the address with addSize(addition, false),
which also counts one more element (SizeAwareMetric#addSize); QueueImpl#refDown at the acknowledgement
takes one element off, so each browsed message leaves one element behind.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sys
import urllib.request
import uuid
from collections.abc import Callable

from proton import Message
from proton.handlers import MessagingHandler
from proton.utils import BlockingConnection, SendException

USER, PASSWORD = os.environ.get("ARTEMIS_USER", "admin"), os.environ.get("ARTEMIS_PASSWORD", "admin")
BROKER = f'org.apache.activemq.artemis:broker="{os.environ.get("ARTEMIS_BROKER", "127.0.0.1")}"'
LIMIT = 10


def jolokia(http: str, body: dict[str, object]) -> object:
    request = urllib.request.Request(f"{http}/console/jolokia", json.dumps(body).encode(), {
        "Content-Type": "application/json", "Origin": "http://localhost",
        "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
    answer = json.loads(urllib.request.urlopen(request).read())
    assert answer["status"] == 200, answer
    return answer["value"]


def execute(http: str, mbean: str, operation: str, *arguments: object) -> object:
    body: dict[str, object] = {"type": "exec", "mbean": mbean, "operation": operation,
                               "arguments": list(arguments)}
    return jolokia(http, body)


def read(http: str, mbean: str, attribute: str) -> object:
    return jolokia(http, {"type": "read", "mbean": mbean, "attribute": attribute})


class Collect(MessagingHandler):
    def __init__(self) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.got: list[object] = []

    def on_message(self, event: object) -> None:
        self.got.append(event.delivery)  # type: ignore[attr-defined]

    def has(self, count: int) -> Callable[[], bool]:
        return lambda: len(self.got) >= count


def scenario(amqp: str, http: str, policy: str, browse: bool) -> list[tuple[int, int | None]]:
    """Two rounds of LIMIT sends (acknowledging everything in between): per round, how many reached
    the queue and after which send (1..LIMIT) the address first said it was full (DROP, FAIL) or
    paging (PAGE): AddressControl Paging."""
    name = f"leak-{uuid.uuid4().hex[:8]}"
    execute(http, BROKER, "addAddressSettings(java.lang.String,java.lang.String)", name,
            json.dumps({"maxSizeMessages": LIMIT, "maxSizeBytes": -1, "addressFullMessagePolicy": policy}))
    execute(http, BROKER, "createQueue(java.lang.String,boolean)",
            json.dumps({"name": name, "address": name, "routing-type": "ANYCAST", "durable": True}), False)
    address = f'{BROKER},component=addresses,address="{name}"'
    queue = f'{address},subcomponent=queues,routing-type="anycast",queue="{name}"'
    conn = BlockingConnection(amqp, user=USER, password=PASSWORD, timeout=10)
    sender = conn.create_sender(name)
    rounds = []
    sent = 0
    for _ in range(2):
        added_before = int(read(http, queue, "MessagesAdded"))  # type: ignore[call-overload]
        full_at = None
        for n in range(1, LIMIT + 1):
            sent += 1
            with contextlib.suppress(SendException):  # FAIL: the send is refused
                sender.send(Message(body=f"m{sent}", durable=True, properties={"n": sent}))
            if browse:
                execute(http, queue, "listMessages(java.lang.String)", "")
            if full_at is None and read(http, address, "Paging"):
                full_at = n
        execute(http, queue, "flushExecutor()")
        added = int(read(http, queue, "MessagesAdded")) - added_before  # type: ignore[call-overload]
        rounds.append((added, full_at))
        # receive and acknowledge every message of the queue (paged ones too)
        collect = Collect()
        receiver = conn.create_receiver(f"{name}::{name}", credit=0, handler=collect)
        left = int(read(http, queue, "MessageCount"))  # type: ignore[call-overload]
        receiver.flow(left)
        conn.wait(collect.has(left), timeout=10)
        for delivery in collect.got:
            delivery.update(delivery.ACCEPTED)  # type: ignore[attr-defined]
            delivery.settle()  # type: ignore[attr-defined]
        receiver.close()  # type: ignore[no-untyped-call]
        execute(http, queue, "flushExecutor()")
    conn.close()
    execute(http, BROKER, "destroyQueue(java.lang.String,boolean,boolean)", name, True, True)
    execute(http, BROKER, "removeAddressSettings(java.lang.String)", name)
    return rounds


def main(amqp: str, http: str, policy: str = "DROP") -> int:
    results = {}
    for browse in (False, True):
        results[browse] = scenario(amqp, http, policy, browse)
        label = "with a browse after each send" if browse else "without a browse"
        for n, (added, full_at) in enumerate(results[browse], 1):
            print(f"{policy} max-size-messages {LIMIT}, {label}, round {n}: {added} of {LIMIT} sends "
                  f"reached the queue; the address was {'paging' if policy == 'PAGE' else 'full'} from "
                  f"send {full_at if full_at is not None else '-'} of the round on")
    # PAGE keeps every message (paged): there the leak shows as paging from an earlier send on
    return 0 if results[True] == results[False] else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
