"""The queue in JetStream's terms, compared after every step of a queue machine where the claimed
profile has the feature ``consumer_state`` (jetstream) and the adapter the capability (the stream's
fields also need ``stream_state``).

DELIVERY-27 (num_pending, num_ack_pending, num_redelivered), DELIVERY-28 (the delivered consumer and
stream sequences), DELIVERY-29 (the ack floor pair) from ``call("consumer_state", queue=...)`` and
DELIVERY-30 (msgs, first_seq, last_seq, num_deleted) from ``call("stream_state", queue=...)``: the
model's answer against the implementation's, one check per rule.
"""

from __future__ import annotations

from typing import Any

from .checks import Checks, check
from .driver import Driver, Inconclusive

#: check -> the fields of the observation it compares
CONSUMER_CHECKS = {
    "consumer_state.counts": ("num_pending", "num_ack_pending", "num_redelivered"),
    "consumer_state.delivered": ("delivered_consumer_seq", "delivered_stream_seq"),
    "consumer_state.ack_floor": ("ack_floor_consumer_seq", "ack_floor_stream_seq"),
}
STREAM_CHECKS = {"stream_state.stream": ("msgs", "first_seq", "last_seq", "num_deleted")}
#: observation (call op and capability) -> its checks
OBSERVATIONS = {"consumer_state": CONSUMER_CHECKS, "stream_state": STREAM_CHECKS}
#: compare_stream_state runs where queue_machine.counters_agree has the capability consumer_state
STREAM_STATE_CHECKS = Checks(
    check("consumer_state.counts", "DELIVERY-27", needs=("consumer_state",)),
    check("consumer_state.delivered", "DELIVERY-28", needs=("consumer_state",)),
    check("consumer_state.ack_floor", "DELIVERY-29", needs=("consumer_state",)),
    check("stream_state.stream", "DELIVERY-30", needs=("consumer_state", "stream_state")))


def _both(d: Driver, op: str, queue: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model's and the implementation's answer (an answer but ok stops the run)."""
    expected = d.model.call(op, queue=queue)
    actual = d.adapter.call(op, queue=queue)
    if not actual.is_ok:
        raise Inconclusive(f"{op}: the adapter could not answer: {actual.error}")
    return dict(expected.value), dict(actual.value)


def compare_stream_state(d: Driver, caps: frozenset[str], queue: str) -> None:
    """Compare every JetStream observation of `queue` both sides offer."""
    for op, checks in OBSERVATIONS.items():
        if op not in caps:
            continue
        want, got = _both(d, op, queue)
        d.observe(op, queue, got)
        for name, fields in checks.items():
            for field in fields:
                d.expect_equal(name, want[field], got.get(field), f"queue {queue} {op} {field}: ",
                               field=field)
