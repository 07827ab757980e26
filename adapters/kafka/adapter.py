"""The `kafka` adapter: Apache Kafka share groups (KIP-932) through confluent-kafka's ShareConsumer.

By default it starts its own broker (:mod:`.server`: one KRaft node of ``version`` from Maven, started
once per process); ``url=`` (``host:port``, or ``$MQCONFORM_KAFKA_URL``) uses a running one with share
groups enabled. It claims the `kafka-share` profile (reference_model/profiles.py). How each operation
maps to share groups, members and acknowledgements, and what the client makes hard:
docs/adapters/kafka.md.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import BrokerAdapter, NotObservable, Unsupported, operation, physical_prefix
from ..contract import AdapterError, Result
from ..deviations import parse_version
from .server import DEFAULT_VERSION, KafkaProcess, lib_of, shared_broker

URL_ENV = "MQCONFORM_KAFKA_URL"
CAPABILITIES = frozenset({
    "queues", "consumer_pull", "independent_consumers", "nack", "nack_reject", "delivery_count",
    "advance_time",
})
#: a group's delivery count limit (ShareGroupConfig: group.share.min/max.delivery.count.limit) and the
#: broker's default (group.share.delivery.count.limit)
MIN_LIMIT, MAX_LIMIT, BROKER_LIMIT = 2, 10, 5
#: the first release the adapter drives: 4.0 has share groups as early access only (its storage format
#: takes no --feature share.version=1); on 4.1.2 (preview) a new share group served its first member
#: nothing within 25 s in 2 of 4 tries (3 of 4 with 500 ms heartbeats), confluent-kafka 2.16.1
MIN_VERSION = (4, 2)
#: stated before 4.3: a queue cannot declare a delivery limit of its own (the redelivery machine's
#: FIXED_LIMIT: its queues then take the profile's default, the broker's 5)
FIXED_LIMIT = "fixed_delivery_limit"
#: the release that has the group config share.delivery.count.limit (KAFKA-20159); before it every
#: group has the broker's limit, so a queue may only declare that one
GROUP_LIMIT_SINCE = (4, 3)
#: how long a share fetch may wait on the broker for records (librdkafka fetch.wait.max.ms) ...
FETCH_WAIT_MS = 10
#: ... and how long after an empty poll the adapter waits for the last one to come back (a floor: every
#: wait of the adapter grows with the broker's measured round trips, adapters/_latency.py)
FETCH_SETTLE_S = 0.05
#: how long an empty receive polls: a member that has fetched before (a fetch with records available
#: comes back in 1-5 ms here), and a member's first poll (it joins the group first: 10-110 ms measured)
RECEIVE_WAIT_S, FIRST_POLL_WAIT_S = 0.25, 0.5
#: how long an empty receive polls when the adapter's own count says the broker has nothing to give
#: (every record sent is finished or held, `_Queue.available`): one share fetch of a joined member
#: (fetch.wait.max.ms, then the round trip); a record the broker gave out later anyway is acquired by
#: an idle member and answered by the next receive (`_collect`), never lost
NOTHING_WAIT_S = 0.03
#: the record a queue's declaration sends and consumes itself (see _warm), and how long it may take
WARM_MARKER = b"\x00mqconform-warm-up"
WARM_TIMEOUT_S = 30.0
#: how long the first poll of a new group waits for a record (4.3+, older releases)
JOIN_WAIT_S, OLD_JOIN_WAIT_S = 5.0, 15.0
#: how long after a commit the adapter looks for a record the member fetched on its own (_drain; it came
#: back in 1-5 ms when there was one)
DRAIN_S = 0.1
#: how long each poll of that wait lasts before the other idle members are looked at
DRAIN_POLL_S = 0.01
#: a group's acquisition lock (the broker's group.share.min.record.lock.duration.ms, set by .server)
MIN_LOCK_MS = 1000


@attrs.define
class _Member:
    """One share consumer (a member of the group) and the record it holds, acquired and not yet
    acknowledged (explicit mode: it may not poll again before it acknowledged it)."""

    client: Any
    record: Any = None
    polled: bool = False
    #: the monotonic instant by which it has surely joined the group (0: it has; see `_new_member`)
    joined_by: float = 0.0


@attrs.define
class _Queue:
    """A share group on a topic, with its members: those idle (holding nothing) serve the next receive
    of any consumer of the queue."""

    name: str
    topic: str
    group: str
    lock_ms: int | None = None
    idle: list[_Member] = attrs.Factory(list)
    busy: list[_Member] = attrs.Factory(list)
    #: members holding a record they fetched on their own after a commit, nobody received it yet
    stashed: list[_Member] = attrs.Factory(list)
    #: members whose record's lock ran out and another member acquired it: never used again
    stale: list[_Member] = attrs.Factory(list)
    #: a member of the group has ever been given a record (the group is initialized and assigned)
    served: bool = False
    #: the group's delivery count limit: a record released at it is archived
    limit: int = BROKER_LIMIT
    #: the offsets of the records sent to the topic, and of those the group is done with (ACCEPTed,
    #: REJECTed, or RELEASEd at the limit, as the broker took each): see `available`
    sent: set[int] = attrs.Factory(set)
    finished: set[int] = attrs.Factory(set)

    def available(self) -> set[int]:
        """The offsets the broker should give out next: sent, not finished, held by no member (empty
        unknown with an acquisition lock of the queue's own, which may run out: see `_drain`)."""
        held = {int(m.record.offset()) for m in (*self.busy, *self.stashed, *self.stale)
                if m.record is not None}
        return self.sent - self.finished - held


@attrs.define
class _Consumer:
    """A model consumer: the records it received, each held by the member that acquired it."""

    name: str
    queue: str
    held: dict[str, _Member] = attrs.Factory(dict)


def _close_quietly(client: Any) -> None:
    with contextlib.suppress(Exception):
        client.close()


class KafkaShareAdapter(BrokerAdapter):
    """Kafka share groups behind the adapter contract."""

    name = "kafka"
    profile = "kafka-share"
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "commit": "transactions (a share group acknowledges records one by one)",
        "rollback": "transactions (a share group acknowledges records one by one)",
        "tx": "transactions (a share group acknowledges records one by one)",
        "second_queue": "a second share group on one topic (it would start at the topic's start)",
        "address_limits": "address limits (a topic has retention, not a bound with a policy)",
        "redelivery_delay": "redelivery delay (a released record is available at once)",
    }

    def __init__(self, url: str | None = None, version: str = DEFAULT_VERSION,
                 receive_timeout: float | None = None,
                 join_timeout: float | None = None, timeout: float = 10.0,
                 server_bin: str | None = None) -> None:
        self.url = url or os.environ.get(URL_ENV) or None
        self.version = str(version)
        self.lib = lib_of(server_bin) if server_bin else None
        if self.lib is not None:
            self.version = self.lib.parent.name
        if not self.url and (parse_version(self.version) or (99,)) < MIN_VERSION:
            raise AdapterError(f"kafka {self.version}: the adapter needs 4.2.0 or newer (4.0 has share "
                               "groups only as an early-access preview without the share.version feature; "
                               "on 4.1, a preview, a new share group often serves its first member nothing)")
        #: how long an empty receive polls: given, a fixed time; else bounded by the measured latency
        self.receive_timeout = float(receive_timeout) if receive_timeout is not None else None
        #: the first poll of a new group waits for the group's initialization: measured up to ~4 s on
        #: 4.4.0 and ~10 s on 4.2.2 on a loaded 2-core machine
        self.join_timeout = float(join_timeout) if join_timeout is not None else (
            JOIN_WAIT_S if self._group_limits else OLD_JOIN_WAIT_S)
        self.timeout = float(timeout)
        #: before 4.3 a queue may only have the broker's delivery limit: the machines declare none
        self.capabilities = CAPABILITIES if self._group_limits else CAPABILITIES | {FIXED_LIMIT}
        self.broker: KafkaProcess | None = None
        self.bootstrap = ""
        self.admin: AdminClient | None = None
        self.producer: Producer | None = None
        self.prefix = ""
        self._reset()

    @property
    def _group_limits(self) -> bool:
        """The release has the group config share.delivery.count.limit (KAFKA-20159, 4.3)."""
        return (parse_version(self.version) or (99,)) >= GROUP_LIMIT_SINCE

    # ------------------------------------------------------------------ plumbing
    def _classify(self, op: str, exc: Exception) -> Result | None:
        if isinstance(exc, KafkaException):
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is not None and (error.retriable() or error.code() in (
                    KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)):
                return Result.info(f"kafka: {op}: {one_line(exc)}")
            return Result.fail(f"kafka: {op}: {one_line(exc)}")
        if isinstance(exc, TimeoutError):
            return Result.info(f"kafka: {op}: timed out ({one_line(exc)})")
        return None

    def _admin(self) -> AdminClient:
        assert self.admin is not None
        return self.admin

    def _wait(self, futures: Mapping[Any, Any]) -> None:
        for future in futures.values():
            future.result(timeout=self.timeout)

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect (starting the adapter's own broker first when no URL is given); AdapterError when
        the broker cannot be used."""
        self.close()
        if self.admin is None:
            if self.url:
                self.bootstrap = self.url.removeprefix("kafka://")
            else:
                if self.broker is None or not self.broker.running():
                    self.broker = shared_broker(self.version, self.lib)
                self.bootstrap = self.broker.bootstrap
            admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3})
            try:
                admin.list_topics(timeout=self.timeout)
            except KafkaException as exc:
                raise AdapterError(f"kafka: cannot use {self.bootstrap}: {one_line(exc)}") from None
            self.admin = admin
            self.producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0, "acks": "all",
                                      "enable.idempotence": True, "log_level": 3})
        self.prefix = "mqc-" + physical_prefix(namespace, False)
        self._reset()
        self._topics: list[str] = []

    def close(self) -> None:
        """Close every share consumer, delete the namespace's topics and share groups."""
        for queue in list(getattr(self, "queues", {}).values()):
            self._close_members(queue)
        if self.admin is not None:
            groups = [q.group for q in self.queues.values()]
            with contextlib.suppress(Exception):
                if groups:
                    self._wait(self.admin.delete_share_groups(groups, request_timeout=self.timeout))
            with contextlib.suppress(Exception):
                if getattr(self, "_topics", None):
                    self._wait(self.admin.delete_topics(self._topics, operation_timeout=self.timeout))
        self._reset()
        self._topics = []

    def shutdown(self) -> None:
        """close() and drop the clients; the shared broker stays up for the process (stopped at exit)."""
        self.close()
        if self.producer is not None:
            self.producer.flush(self.timeout)
        self.admin = self.producer = None

    # ------------------------------------------------------------------ declarations
    def _physical(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def _create_address(self, name: str) -> None:
        topic = self._physical(name)
        self._wait(self._admin().create_topics([NewTopic(topic, 1, 1)], operation_timeout=self.timeout))
        self._topics.append(topic)
        self.addresses[name] = []

    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        self._check_new_queue(config)
        if config.ring_size != -1:
            raise Unsupported("ring queues (a topic has retention, not a bound)")
        if config.non_destructive or config.last_value_key is not None:
            raise Unsupported("non-destructive and last-value queues")
        settings = {"share.auto.offset.reset": "earliest"}
        limit = config.max_delivery_attempts
        if limit is not None and limit > 0:
            if not self._group_limits and limit != BROKER_LIMIT:
                raise Unsupported(f"a delivery limit of {limit} on Kafka {self.version} (every share "
                                  f"group has the broker's {BROKER_LIMIT} before 4.3)")
            if not MIN_LIMIT <= limit <= MAX_LIMIT:
                raise Unsupported(f"a delivery limit of {limit} "
                                  f"(a share group's is {MIN_LIMIT}..{MAX_LIMIT})")
            if self._group_limits:
                settings["share.delivery.count.limit"] = str(limit)
        elif limit is not None:
            raise Unsupported("a queue without a delivery limit (a share group always has one)")
        address = config.address_name
        if address not in self.addresses:
            self._create_address(address)
        queue = _Queue(config.name, self._physical(address), self._physical(config.name),
                       limit=limit if limit is not None else BROKER_LIMIT)
        self._alter_group(queue.group, settings)
        self._warm(queue)
        self.addresses[address].append(config.name)
        self.queues[config.name] = queue

    def _warm(self, queue: _Queue) -> None:
        """Let the new group serve once before the example uses it: a member joins, and a marker record
        sent to the topic is polled and ACCEPTed (with whatever the topic held before the queue was
        declared, which the model never routed to it). A new share group serves its first fetch only
        after its initialization (0.5 s to over 5 s on a loaded machine), which would otherwise make
        the first receive of an example wait that long or answer None too early."""
        member = self._new_member(queue)
        queue.idle.append(member)
        assert self.producer is not None
        self.producer.produce(queue.topic, value=WARM_MARKER)
        if self.producer.flush(self.timeout) > 0:
            raise TimeoutError("the warm-up record was not acknowledged by the broker")
        deadline = time.monotonic() + WARM_TIMEOUT_S
        while time.monotonic() < deadline:
            records = [r for r in member.client.poll(0.2) if r.error() is None]
            for record in records:
                member.client.acknowledge(record, AcknowledgeType.ACCEPT)
            if records:
                member.client.commit_sync(self.timeout)
            if any(r.value() == WARM_MARKER for r in records):
                queue.served = member.polled = True
                member.joined_by = 0.0  # it was served: it has joined
                self._settle_fetch()
                return
        raise TimeoutError(f"the new share group served nothing within {WARM_TIMEOUT_S:.0f} s")

    def _alter_group(self, group: str, settings: Mapping[str, str]) -> None:
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                   for k, v in settings.items()]
        self._wait(self._admin().incremental_alter_configs(
            [ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)]))

    # ------------------------------------------------------------------ consumers
    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        queue = self._check_new_consumer(config)
        self._require_pull(config)
        if config.max_unacked is not None:
            raise Unsupported(self._why("max_unacked"))
        if config.cumulative_ack or config.backoff_ms is not None or config.priority:
            raise Unsupported("cumulative acks, BackOff lists and consumer priorities")
        if config.ack_wait_ms is not None:
            self._set_lock(queue, config.ack_wait_ms)
        self.consumers[config.name] = _Consumer(config.name, config.queue)

    def _set_lock(self, queue: _Queue, lock_ms: int) -> None:
        """REDELIVERY-41: the group's acquisition lock is the consumer's ack wait (one per queue)."""
        if lock_ms < MIN_LOCK_MS:
            raise Unsupported(f"an ack wait of {lock_ms} ms "
                              f"(a share group's lock is at least {MIN_LOCK_MS} ms)")
        if queue.lock_ms is not None and queue.lock_ms != lock_ms:
            raise Unsupported("consumers of one queue with different ack waits (the lock is the group's)")
        if queue.lock_ms is None:
            self._alter_group(queue.group, {"share.record.lock.duration.ms": str(lock_ms)})
            queue.lock_ms = lock_ms

    def _new_member(self, queue: _Queue) -> _Member:
        """A share consumer of the queue's group that acquires one record per poll: max.poll.records 1
        is best effort (a share fetch acquires whole batches, and released in-flight records with
        them), a fetch of at most 1 byte returns one record batch, and every send is its own batch.
        fetch.wait.max.ms is short so that no share fetch is left waiting on the broker after a poll
        (see `_take`)."""
        client = ShareConsumer({"bootstrap.servers": self.bootstrap, "group.id": queue.group,
                                "share.acknowledgement.mode": "explicit", "max.poll.records": 1,
                                "fetch.max.bytes": 1, "max.partition.fetch.bytes": 1,
                                "fetch.wait.max.ms": FETCH_WAIT_MS, "log_level": 3})
        client.subscribe([queue.topic])
        # it joins in the background from now: a first poll's wait (FIRST_POLL_WAIT_S) from here
        return _Member(client, joined_by=time.monotonic() + self.latency.settle_s(FIRST_POLL_WAIT_S))

    def _receive_wait(self, queue: _Queue) -> float:
        """How long a receive polls for a record before it answers None: the join wait until the group
        has served anyone; else receive_timeout when given; else RECEIVE_WAIT_S, or FIRST_POLL_WAIT_S
        when no idle member has joined yet (polled, and a first poll's wait since it subscribed:
        `_Member.joined_by`), longer while the broker's round trips are slow (adapters/_latency.py);
        NOTHING_WAIT_S when the queue has no acquisition lock of its own and every record sent is
        finished or held (the broker should answer with nothing: the receive waits only for one share
        fetch to come back; a member that joins meanwhile fetches in the background, and what it
        acquires is answered by the next receive)."""
        if not queue.served:
            return max(self.join_timeout, self.receive_timeout or 0.0)
        if self.receive_timeout is not None:
            return self.receive_timeout
        if queue.lock_ms is None and not queue.available():
            return self.latency.settle_s(NOTHING_WAIT_S)
        now = time.monotonic()
        joined = any(member.polled and member.joined_by <= now for member in queue.idle)
        return self.latency.settle_s(RECEIVE_WAIT_S if joined else FIRST_POLL_WAIT_S)

    def _settle_fetch(self) -> None:
        """Wait until a share fetch the member left on the broker has surely come back (it waits there
        at most fetch.wait.max.ms): FETCH_SETTLE_S, longer while round trips are slow."""
        time.sleep(self.latency.settle_s(FETCH_SETTLE_S))

    def _collect(self, queue: _Queue, timeout_s: float) -> None:
        """Poll every idle member, the first for up to `timeout_s` and the others without waiting: a
        subscribed share consumer fetches in the background, so any idle member may have acquired the
        lowest available record, not only the one a receive polls. A member that got one is stashed
        with it for the next receive (see `receive`)."""
        for index, member in enumerate(list(queue.idle)):
            member.polled = True
            records = [r for r in member.client.poll(timeout_s if index == 0 else 0) if r.error() is None]
            if len(records) > 1:
                raise TimeoutError(f"a share fetch of at most 1 byte acquired {len(records)} records")
            if records:
                member.record = records[0]
                queue.served = True
                queue.idle.remove(member)
                queue.stashed.append(member)

    def _take(self, queue: _Queue) -> _Member | None:
        """The member holding the lowest offset acquired for the queue and not yet received, polling
        the idle members (a new one when none is idle) until one acquires a record, for up to
        `_receive_wait`; None when none came. Idle members fetch concurrently, so the lowest available
        record may still be on its way to one while a higher one has arrived at another: while a lower
        offset is available (`_Queue.available`) the receive keeps polling within the same wait, then
        answers with the lowest that came. After an empty wait the adapter waits until the last share
        fetches have surely come back (`_settle_fetch`), so that a record sent next is not acquired by
        a member nobody polls; a receive that got nothing measured no round trip."""
        self._collect(queue, 0)
        deadline: float | None = None
        while not queue.stashed or (queue.idle and self._lower_on_its_way(queue)):
            if deadline is None:
                if not queue.idle and not queue.stashed:
                    queue.idle.append(self._new_member(queue))
                deadline = time.monotonic() + self._receive_wait(queue)
            left = deadline - time.monotonic()
            if left <= 0:
                if queue.stashed:
                    break
                self._settle_fetch()
                self._no_round_trip()
                return None
            self._collect(queue, min(left, 0.02))
        member = min(queue.stashed, key=lambda m: int(m.record.offset()))
        queue.stashed.remove(member)
        queue.busy.append(member)
        return member

    def _release(self, queue: _Queue, member: _Member, kind: Any) -> bool:
        """Acknowledge the member's record with `kind` and commit; whether the broker took it. Then
        `_drain` the member."""
        record, member.record = member.record, None
        queue.busy.remove(member)
        member.client.acknowledge(record, kind)
        answers = member.client.commit_sync(self.timeout)
        taken = not any(error is not None for error in answers.values())
        if taken and (kind != AcknowledgeType.RELEASE or int(record.delivery_count()) >= queue.limit):
            queue.finished.add(int(record.offset()))
        self._drain(queue, member)
        return taken

    def _drain(self, queue: _Queue, member: _Member) -> None:
        """A share consumer with nothing left to acknowledge fetches on its own right after a commit
        (librdkafka 2.16), so it may have acquired the lowest available record already, the very one
        it released included. Such a record is stashed with the member: the next receive of any
        consumer of the queue takes it, as the broker gave it out at that moment (its delivery count
        is already up by one, as the model's is at that receive). The wait is skipped when every
        record sent is finished or held by a member (`_Queue.available`; never with an acquisition lock
        of its own, which could run out): the member then has nothing to acquire, and should the broker
        differ, the next receive polls this member too (`_collect`). While it waits, the other idle
        members are polled too (they fetch in the background and may have acquired the record this
        one did not): once every record sent is finished or held (stashed included), nothing is left
        for this member to acquire and the wait ends there."""
        if queue.lock_ms is None and not queue.available():
            self._settle_deadline(DRAIN_S)  # the round trip of the operation ends here
            queue.idle.append(member)
            return
        deadline = self._settle_deadline(DRAIN_S)
        while (left := deadline - time.monotonic()) > 0:
            records = [r for r in member.client.poll(min(left, DRAIN_POLL_S)) if r.error() is None]
            if len(records) > 1:
                raise TimeoutError(f"a share fetch of at most 1 byte acquired {len(records)} records")
            if records:
                member.record = records[0]
                queue.stashed.append(member)
                return
            self._collect(queue, 0)
            if queue.lock_ms is None and not queue.available():
                queue.idle.append(member)
                return
        self._settle_fetch()
        queue.idle.append(member)

    @operation
    def close_consumer(self, consumer: str) -> None:
        """The records the consumer holds are RELEASEd: they are available again with their counts
        kept, or archived at the limit, which is what a member leaving the group does to what it
        acquired (SharePartition#releaseAcquiredRecords: the same transition to AVAILABLE without an
        increment); the members stay in the group, idle, for the next receives."""
        state = self._forget_consumer(consumer)
        queue = self._queue(state.queue)
        for member in state.held.values():
            self._release(queue, member, AcknowledgeType.RELEASE)

    def _close_members(self, queue: _Queue) -> None:
        """Close the group's members, each within a bounded wait (a share consumer's close commits and
        leaves the group; one that does not return in time is left to its thread)."""
        members = [*queue.idle, *queue.busy, *queue.stashed, *queue.stale]
        queue.idle, queue.busy, queue.stashed, queue.stale = [], [], [], []
        threads = [threading.Thread(target=_close_quietly, args=(m.client,), daemon=True) for m in members]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + self.timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------ messages
    @staticmethod
    def _lower_on_its_way(queue: _Queue) -> bool:
        """A record below the lowest stashed one is available (never known with a lock of the
        queue's own, which may run out)."""
        if queue.lock_ms is not None:
            return False
        lowest = min(int(m.record.offset()) for m in queue.stashed)
        return any(offset < lowest for offset in queue.available())

    @operation
    def send(self, to: str, message: Message) -> str:
        self._route(to, message)
        if message.ttl_ms is not None:
            raise Unsupported("message TTLs")
        failures: list[str] = []

        offsets: list[int] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(str(err))
            else:
                offsets.append(int(msg.offset()))

        assert self.producer is not None
        self.producer.produce(self._physical(to), value=message.id.encode(), on_delivery=delivered)
        if self.producer.flush(self.timeout) > 0:
            raise TimeoutError("the record was not acknowledged by the broker")
        if failures:
            return "failed"
        for name in self.addresses.get(to, []):
            self._queue(name).sent.update(offsets)
        return "accepted"

    @operation
    def receive(self, consumer: str) -> str | None:
        """A pull: the lowest offset an idle member of the group (or a new one) acquired (`_take`)."""
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        member = self._take(queue)
        if member is None:
            return None
        msg_id = str(member.record.value().decode())
        self._forget_stale(queue, msg_id)
        state.held[msg_id] = member
        # REDELIVERY-41: the record's lock ran from its acquisition, at the latest now: `advance` waits
        # for it to run out on the broker by the time the model's ack wait does (a loaded machine's
        # late first poll of a new group acquires it seconds after open())
        self._note_ttl(queue.lock_ms)
        return msg_id

    def _forget_stale(self, queue: _Queue, msg_id: str) -> None:
        """REDELIVERY-41: a record acquired again after its lock ran out is no longer held by the
        consumer that received it before (its member, stuck with an unacknowledged record, is retired)."""
        for other in self.consumers.values():
            member = other.held.pop(msg_id, None) if other.queue == queue.name else None
            if member is not None:
                queue.busy.remove(member)
                queue.stale.append(member)

    def _settle(self, consumer: str, msg_id: str, kind: Any) -> str:
        state = self._consumer(consumer)
        member = state.held.pop(msg_id, None)
        if member is None:
            return "failed"  # DELIVERY-8: not held by this consumer (refused here, nothing sent)
        return "ok" if self._release(self._queue(state.queue), member, kind) else "failed"

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        self._no_tx(tx)
        return self._settle(consumer, msg_id, AcknowledgeType.ACCEPT)

    @operation
    def nack(self, consumer: str, msg_id: str, requeue: bool = True, **forms: Any) -> str:
        if forms:
            raise Unsupported(f"nack {', '.join(sorted(forms))}")
        kind = AcknowledgeType.RELEASE if requeue else AcknowledgeType.REJECT
        return self._settle(consumer, msg_id, kind)

    def advance(self, ms: int) -> Result:
        """With an acquisition lock shorter than the broker's in use, sleep until the broker's clock
        has run as long as the logical one (BrokerAdapter.advance); else only move the logical clock
        (nothing on the broker waits for time within an example)."""
        if ms > 0 and not any(q.lock_ms is not None for q in self.queues.values()):
            self._clock_ms += ms
            self._clock_origin = time.monotonic() - self._clock_ms / 1000
            return Result.ok(None)
        return super().advance(ms)

    # ------------------------------------------------------------------ observations
    @operation
    def delivery_count(self, queue: str, msg_id: str) -> int:
        for consumer in self.consumers.values():
            member = consumer.held.get(msg_id) if consumer.queue == queue else None
            if member is not None:
                return int(member.record.delivery_count())
        raise NotObservable("Kafka shows a delivery count only with an acquired record (ShareFetch "
                            "AcquiredRecords); no admin API lists a share partition's records")
