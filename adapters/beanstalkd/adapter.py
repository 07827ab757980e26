"""The `beanstalkd` adapter: beanstalkd work queues through greenstalk, claiming `beanstalkd`.

By default the adapter starts its own ``beanstalkd`` on a free loopback port (:mod:`.server`,
jobs in memory only; ``server_bin=PATH`` names the binary) and stops it in :meth:`shutdown`.
``url=beanstalk://host:port`` (``--url``) or ``$MQCONFORM_BEANSTALKD_URL`` uses a running server instead.

How each operation maps to the protocol (tubes, reserve, release, bury, stats), and what is not
offered and why: docs/adapters/beanstalkd.md.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import greenstalk

from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.text import one_line

from .._base import BrokerAdapter, Refused, Unsupported, operation, physical_prefix, roundtrip_rate
from .._urls import parse_endpoint, redact
from ..contract import AdapterError, Result
from .server import BeanstalkdServer, find_binary

URL_ENV = "MQCONFORM_BEANSTALKD_URL"
DEFAULT_PORT = 11300
#: every job's time-to-run: far beyond any example, so no reservation times out
TTR_S = 3600
#: the model's priorities 0..MAX_PRIORITY (DELIVERY-3) map to beanstalkd priority MAX_PRIORITY - p
MAX_PRIORITY = 9
#: how long a close waits for beanstalkd to give the connection's reserved jobs back
RELEASE_WAIT_S = 2.0

CAPABILITIES = frozenset({
    "queues", "priorities", "nack", "nack_reject", "nack_delay", "delivery_count", "consumer_pull",
    "independent_consumers", "advance_time", "delete",
    "counter:message_count", "counter:pending_count", "counter:delivering_count",
    "counter:scheduled_count", "counter:paged_count", "counter:added",
})


def beanstalk_priority(priority: int) -> int:
    """beanstalkd's priority of a model priority (0..9, higher more urgent): 9 - p (0 most urgent)."""
    if not 0 <= priority <= MAX_PRIORITY:
        raise Refused(f"priority {priority} outside 0..{MAX_PRIORITY}")
    return MAX_PRIORITY - priority


@attrs.define
class _Queue:
    name: str
    tube: str
    producer: Any
    #: message id -> job id (every job this example put into the tube)
    jobs: dict[str, int] = attrs.Factory(dict)
    #: job id -> (message id, beanstalkd priority)
    by_job: dict[int, tuple[str, int]] = attrs.Factory(dict)


@attrs.define
class _Consumer:
    name: str
    queue: str
    client: Any
    #: message id -> job id, what this connection has reserved and not settled
    held: dict[str, int] = attrs.Factory(dict)


class BeanstalkdAdapter(BrokerAdapter):
    """beanstalkd tubes behind the adapter contract."""

    name = "beanstalkd"
    profile = "beanstalkd"
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {
        "browser": "browser consumers", "max_unacked": "max_unacked (beanstalkd has no reservation cap)",
        "pending_ids": "pending order (beanstalkd shows only the next ready job)",
        "browse": "browsing (beanstalkd shows only the next ready job)",
    }
    SHUTDOWN_ENDS: ClassVar[Mapping[str, str]] = {"server": "stop"}

    def __init__(self, url: str | None = None, server_bin: str | None = None, timeout: float = 2.0,
                 ttr_s: int = TTR_S) -> None:
        self.server_bin = server_bin
        self.server: BeanstalkdServer | None = None
        self.url = url or (None if server_bin else os.environ.get(URL_ENV))
        #: no URL given: the adapter runs its own server (started by open(), again if it died)
        self.own_server = self.url is None
        self.timeout = float(timeout)
        #: every put's time-to-run in seconds (``-o ttr_s=N``; the machines need the default hour)
        self.ttr_s = int(ttr_s)
        self.capabilities = CAPABILITIES
        self.server_version = ""
        self.admin: Any = None
        self.prefix = ""
        self._reset()

    # ------------------------------------------------------------------ plumbing
    def _connect(self, address: tuple[str, int]) -> Any:
        sock = socket.create_connection(address, timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return greenstalk.Client(sock, encoding=None)

    def _address(self) -> tuple[str, int]:
        assert self.url is not None
        endpoint = parse_endpoint(self.url, "beanstalk", DEFAULT_PORT)
        return endpoint.host, endpoint.port

    def _admin(self) -> Any:
        if self.admin is None:
            raise ConnectionError("not connected (open() first)")
        return self.admin

    def _classify(self, op: str, exc: Exception) -> Result | None:
        """A server answer (NOT_FOUND, BAD_FORMAT, ...) is fail; a timeout or a lost connection info."""
        if isinstance(exc, TimeoutError):
            why = one_line(exc) if "reserved" in str(exc) else f"no answer within {self.timeout:g} s"
            return Result.info(f"beanstalkd: {op}: {why}")
        if isinstance(exc, OSError):
            return Result.info(f"beanstalkd: {op}: connection lost ({one_line(exc)})")
        if isinstance(exc, greenstalk.UnknownResponseError):
            return Result.info(f"beanstalkd: {op}: unexpected answer {exc.status!r}")
        if isinstance(exc, greenstalk.BeanstalkdError):
            return Result.fail(f"beanstalkd: {op}: {type(exc).__name__}")
        return None

    # ------------------------------------------------------------------ lifecycle
    def open(self, namespace: str) -> None:
        """Connect (starting the adapter's own server first when no URL is given) and start a fresh
        tube prefix for `namespace`; AdapterError when beanstalkd cannot be used."""
        if self.admin is not None:
            self.close()
        if self.own_server and (self.server is None or not self.server.running()):
            if self.server is not None:
                self.server.stop()
            binary = find_binary(self.server_bin)
            self.server = BeanstalkdServer(binary).start()
            self.url = self.server.url
        try:
            admin = self._connect(self._address())
            stats = admin.stats()
        except (OSError, greenstalk.Error) as exc:
            raise AdapterError(f"beanstalkd: cannot use {redact(self.url or '')}: {one_line(exc)}") from None
        self.server_version = str(stats.get("version", ""))
        self.admin = admin
        self.prefix = physical_prefix(namespace, False)
        self._reset()

    def close(self) -> None:
        """Close the consumers (their jobs come back), delete every job the example put, disconnect."""
        admin, self.admin = self.admin, None
        held = [job for c in self.consumers.values() for job in c.held.values()]
        for consumer in self.consumers.values():
            _quietly_close(consumer.client)
        if admin is not None:
            try:
                self._await_released(admin, held)
                for queue in self.queues.values():
                    for job in queue.by_job:
                        with contextlib.suppress(greenstalk.NotFoundError):
                            admin.delete(job)
            except (OSError, greenstalk.Error):
                pass  # beanstalkd gone: nothing can be removed any more
            finally:
                _quietly_close(admin)
        for queue in self.queues.values():
            _quietly_close(queue.producer)
        self._reset()

    def shutdown(self) -> None:
        """The base's: close(), then stop the adapter's own server (if it started one), whose URL it
        forgets."""
        if self.server is not None:
            self.url = None
        super().shutdown()

    # ------------------------------------------------------------------ declarations
    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        self._check_new_queue(config)
        if config.ring_size >= 0:
            raise Unsupported("ring (beanstalkd tubes have no length limit)")
        tube = f"{self.prefix}.{config.name}"
        producer = self._connect(self._address())
        try:
            producer.use(tube)
        except BaseException:
            _quietly_close(producer)
            raise
        self.addresses.setdefault(config.address_name, []).append(config.name)
        self.queues[config.name] = _Queue(config.name, tube, producer)

    @operation
    def open_consumer(self, config: ConsumerConfig) -> None:
        queue: _Queue = self._check_new_consumer(config)
        self._require_pull(config)
        if config.max_unacked is not None:
            raise Unsupported(self._why("max_unacked"))
        client = self._connect(self._address())
        try:
            client.watch(queue.tube)
            client.ignore("default")
        except BaseException:
            _quietly_close(client)
            raise
        self.consumers[config.name] = _Consumer(config.name, queue.name, client)

    # ------------------------------------------------------------------ messages
    @operation
    def send(self, to: str, message: Message) -> str:
        queue = self._single_route(to, message)
        if queue is None:
            return "accepted"
        pri = beanstalk_priority(message.priority)
        head = message.id.encode() + b"\n"
        body = head + b"x" * max(message.size - len(head), 0)
        job = int(queue.producer.put(body, priority=pri, delay=0, ttr=self.ttr_s))
        queue.jobs[message.id] = job
        queue.by_job[job] = (message.id, pri)
        return "accepted"

    @operation
    def receive(self, consumer: str) -> str | None:
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        try:
            job = state.client.reserve(timeout=0)
        except greenstalk.TimedOutError:
            return None
        known = queue.by_job.get(job.id)
        msg_id = known[0] if known is not None else bytes(job.body).split(b"\n", 1)[0].decode()
        state.held[msg_id] = job.id
        return msg_id

    @operation
    def ack(self, consumer: str, msg_id: str, tx: bool = False) -> str:
        self._no_tx(tx)
        state = self._consumer(consumer)
        job = state.held.pop(msg_id, None)
        if job is None:
            return "failed"
        try:
            state.client.delete(job)
        except greenstalk.NotFoundError:
            return "failed"
        return "ok"

    @operation
    def nack(self, consumer: str, msg_id: str, requeue: bool = True, multiple: bool = False,
             delay_ms: int = 0) -> str:
        """release (requeue) or bury (requeue=False, REDELIVERY-24) of a job this consumer holds."""
        if multiple:
            raise Unsupported("nack multiple")
        if delay_ms % 1000 or delay_ms < 0 or (delay_ms and not requeue):
            raise Unsupported("nack delay_ms other than whole seconds (a release delay is seconds)")
        state = self._consumer(consumer)
        queue = self._queue(state.queue)
        # a job this connection does not hold goes to the server too: release and bury act only
        # on the reserving connection's jobs (prot.c remove_reserved_job), so NOT_FOUND -> failed
        job = state.held.get(msg_id, queue.jobs.get(msg_id))
        if job is None:
            return "failed"  # never put: no job id to name
        pri = queue.by_job[job][1]
        try:
            if requeue:
                state.client.release(greenstalk.Job(job, b""), priority=pri, delay=delay_ms // 1000)
            else:
                state.client.bury(greenstalk.Job(job, b""), priority=pri)
        except greenstalk.NotFoundError:
            state.held.pop(msg_id, None)
            return "failed"
        del state.held[msg_id]
        return "ok"

    @operation
    def close_consumer(self, consumer: str) -> None:
        """Close the consumer's connection; beanstalkd releases what it reserved (on the hang-up)."""
        state = self._forget_consumer(consumer)
        _quietly_close(state.client)
        self._await_released(self._admin(), list(state.held.values()))

    def _await_released(self, admin: Any, jobs: list[int]) -> None:
        """Wait until none of `jobs` is reserved any more (beanstalkd handles a hang-up
        asynchronously: cttest_close_releases_job); TimeoutError after RELEASE_WAIT_S."""
        deadline = time.monotonic() + RELEASE_WAIT_S
        waiting = list(jobs)
        while waiting:
            still = []
            for job in waiting:
                try:
                    if admin.stats_job(job).get("state") == "reserved":
                        still.append(job)
                except greenstalk.NotFoundError:
                    pass
            waiting = still
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"jobs {waiting} still reserved {RELEASE_WAIT_S:g} s after the close")
            time.sleep(0.002)

    @operation(name="delete")
    def delete_message(self, queue: str, msg_id: str) -> bool:
        """``delete <id>`` on the admin connection (DELIVERY-31..33): True when beanstalkd deleted the
        job (ready or delayed); False for a job reserved by a consumer (NOT_FOUND), gone, never sent,
        or buried (on the dead-letter list, outside the queue: no command)."""
        state = self._queue(queue)
        job = state.jobs.get(msg_id)
        if job is None:
            return False
        admin = self._admin()
        try:
            if admin.stats_job(job).get("state") == "buried":
                return False
            admin.delete(job)
        except greenstalk.NotFoundError:
            return False
        return True

    # ------------------------------------------------------------------ observation
    @operation
    def counters(self, queue: str) -> dict[str, int]:
        stats = self._admin().stats_tube(self._queue(queue).tube)
        ready = int(stats["current-jobs-ready"])
        reserved = int(stats["current-jobs-reserved"])
        delayed = int(stats["current-jobs-delayed"])
        return {"message_count": ready + reserved + delayed, "pending_count": ready,
                "delivering_count": reserved, "scheduled_count": delayed, "paged_count": 0,
                "added": int(stats["total-jobs"])}

    @operation
    def delivery_count(self, queue: str, msg_id: str) -> int | None:
        job = self._queue(queue).jobs.get(msg_id)
        if job is None:
            return None
        try:
            stats = self._admin().stats_job(job)
        except greenstalk.NotFoundError:
            return None
        if stats.get("state") == "buried":
            return None
        return int(stats["reserves"])

    def job_stats(self, queue: str, msg_id: str) -> dict[str, Any] | None:
        """``stats-job`` of a message's job (the per-job counters: reserves, timeouts, releases,
        buries, kicks), or None when it is gone; for tests and reports, outside the contract."""
        job = self._queue(queue).jobs.get(msg_id)
        if job is None:
            return None
        try:
            return dict(self._admin().stats_job(job))
        except greenstalk.NotFoundError:
            return None


def _quietly_close(client: Any) -> None:
    with contextlib.suppress(OSError):
        client.close()


def raw_roundtrip_loop(n: int, url: str | None = None, **_: Any) -> float:
    """Round trips per second of greenstalk alone: put, reserve-with-timeout 0, delete; n times or
    until a 60 s deadline (against `url`, else a beanstalkd of its own)."""
    server = None
    if url is None:
        server = BeanstalkdServer(find_binary()).start()
        url = server.url
    endpoint = parse_endpoint(url, "beanstalk", DEFAULT_PORT)
    tube = f"mqc-raw.{os.getpid()}.{time.monotonic_ns()}"
    client: Any = greenstalk.Client((endpoint.host, endpoint.port), encoding=None, use=tube, watch=tube)
    try:
        def step(i: int) -> None:
            client.put(b"m%d\n" % i + b"x" * 100, ttr=TTR_S)
            client.delete(client.reserve(timeout=0))

        return roundtrip_rate(n, step)
    finally:
        client.close()
        if server is not None:
            server.stop()
