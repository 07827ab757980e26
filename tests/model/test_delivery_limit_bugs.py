"""The two bug models hooked where a returned message reaches its delivery limit
(reference_model/redelivery.py, reference_model/bugs): rabbitmq-server#5609 (a quorum-queue nack that
drops its message at the limit grants the consumer credit twice) and Artemis' double decDelivering of a
message an individual cancel drops (artemis-drop-at-limit-delivering-negative): what each changes, and
that each changes nothing where the broker is right. Their regression scenarios:
tests/conformance/test_bug_models_delivery_limit.py."""

from __future__ import annotations

from typing import Any

import pytest

from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import profile
from mqconform.scenario import annotate

RABBITMQ = "rabbitmq-server-5609"
ARTEMIS = "artemis-drop-at-limit-delivering-negative"


def _last(steps: list[dict[str, Any]], bug: str | None, prof: str) -> dict[str, Any]:
    """The model's expectations at the last step (with bug model `bug` switched on, or none)."""
    options = BUGS[bug].enable(profile(prof)) if bug else profile(prof)
    expect: dict[str, Any] = annotate(steps, options)[-1]["expect"]
    return expect


def test_no_profile_has_either_bug() -> None:
    from mqconform.reference_model.profiles import PROFILES

    for name in PROFILES:
        options = profile(name)
        assert not options.nack_at_limit_grants_credit_twice
        assert not options.cancel_drop_decrements_delivering_twice


QUORUM_NACK_AT_LIMIT: list[dict[str, Any]] = [
    {"queue": {"name": "q", "max_delivery_attempts": 1}},
    {"consumer": {"name": "c", "queue": "q", "window_bytes": -1, "max_unacked": 1}},
    {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3", "m4"], "size": 100}},
    {"receive": "c"}, {"nack": {"consumer": "c", "id": "m1"}},  # returned: x-delivery-count 1
    {"receive": "c"}]


def test_5609_the_extra_credit_stays_with_the_consumer_and_adds_up() -> None:
    """x-delivery-limit 0 (rabbit_fifo: the first return is over it): each nack drops its message,
    and the prefetch-1 consumer holds one message more after each, as long as it lives; a new
    consumer starts from its prefetch."""
    start: list[dict[str, Any]] = [
        {"queue": {"name": "q", "max_delivery_attempts": 0}},
        {"consumer": {"name": "c", "queue": "q", "window_bytes": -1, "max_unacked": 1}},
        {"send_batch": {"to": "q", "ids": [f"m{i}" for i in range(1, 9)], "size": 100}},
        {"receive": "c"}, {"nack": {"consumer": "c", "id": "m1"}}]
    second = [*start, {"receive": "c"}, {"nack": {"consumer": "c", "id": "m2"}}]
    acked = [*second, {"receive": "c"}, {"ack": {"consumer": "c", "id": "m3"}}]
    reopened = [*acked, {"close": "c"},
                {"consumer": {"name": "c", "queue": "q", "window_bytes": -1, "max_unacked": 1}}]
    for steps, plain, buggy in ((start, 1, 2), (second, 1, 3), (acked, 1, 3), (reopened, 1, 1)):
        assert _last(steps, None, "rabbitmq-quorum")["queue"][0]["delivering_count"] == plain
        assert _last(steps, RABBITMQ, "rabbitmq-quorum")["queue"][0]["delivering_count"] == buggy


def test_5609_a_reject_or_a_nack_under_the_limit_grants_one_credit() -> None:
    """A nack with requeue: false (a Ra #discard) and a nack that returns the message (#return under
    the limit) are right on 3.10 too: the bug model answers as the plain model."""
    for steps in ([*QUORUM_NACK_AT_LIMIT[:4], {"nack": {"consumer": "c", "id": "m1", "requeue": False}}],
                  QUORUM_NACK_AT_LIMIT,
                  [*QUORUM_NACK_AT_LIMIT, {"nack": {"consumer": "c", "id": "m1", "requeue": False}}]):
        assert annotate(steps, BUGS[RABBITMQ].enable(profile("rabbitmq-quorum"))) == \
            annotate(steps, profile("rabbitmq-quorum"))


ARTEMIS_DROP: list[dict[str, Any]] = [
    {"queue": {"name": "q", "max_delivery_attempts": 1}},
    {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
    {"send_batch": {"to": "q", "ids": ["m1", "m2", "m3"], "size": 100}},
    {"receive": "c"}, {"nack": {"consumer": "c", "id": "m1"}}]


def test_artemis_each_drop_takes_one_more_and_the_count_stays_off() -> None:
    first = _last(ARTEMIS_DROP, ARTEMIS, "artemis")["queue"][0]
    assert (first["delivering_count"], first["message_count"], first["killed"]) == (-1, 1, 1)
    second = [*ARTEMIS_DROP, {"receive": "c"}, {"nack": {"consumer": "c", "id": "m2"}}, {"receive": "c"}]
    counts = _last(second, ARTEMIS, "artemis")["queue"][0]
    assert (counts["delivering_count"], counts["message_count"]) == (-1, -1)  # m3 held, two drops
    plain = _last(second, None, "artemis")["queue"][0]
    assert (plain["delivering_count"], plain["message_count"]) == (1, 1)


@pytest.mark.parametrize("variant", ["bound dead-letter address", "under the limit"])
def test_artemis_the_right_paths_stay_right(variant: str) -> None:
    """With a dead-letter address that has a queue (the move returns true: the message is moved, not
    dropped) and for a nack under the limit (returned) the bug model answers as the plain model."""
    steps = list(ARTEMIS_DROP)
    if variant == "bound dead-letter address":
        steps[0:1] = [{"address": {"name": "dla"}}, {"queue": {"name": "dlq", "address": "dla"}},
                      {"queue": {"name": "q", "max_delivery_attempts": 1, "dead_letter": "dla"}}]
    else:
        steps[0] = {"queue": {"name": "q", "max_delivery_attempts": 2}}
    killed = annotate(steps, profile("artemis"))[-1]["expect"]["queue"][-1]["killed"]
    assert killed == (1 if variant == "bound dead-letter address" else 0)
    assert annotate(steps, BUGS[ARTEMIS].enable(profile("artemis"))) == annotate(steps, profile("artemis"))
