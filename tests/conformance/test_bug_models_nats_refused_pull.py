"""The bug model nats-refused-pull-counts-redelivered (mqconform.reference_model.bugs): a redelivery that
a pull request is not given (nats-server consumer.go loopAndGatherMsgs puts it back with
decDeliveryCount) keeps a 0 o.rdc entry after one delivery, and num_redelivered (len(o.rdc)) counts it
until its ack, removal, next delivery or a restart. Where nothing is put back, or what is put back
was not a once-delivered redelivery, the model with the bug is the claimed jetstream model. No broker
is needed (the regression scenario on nats-server itself: tests/adapters/test_nats_history_findings.py;
each variant here was replayed on nats-server 2.14.5, DEVIATION, and 2.14.6, PASS)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import annotate
from tests.conformance.bug_model_support import scenario_steps

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests/adapters/scenarios"
STALE_PIN = SCENARIOS / "nats-stale-pin-pull-reports-no-redelivered.yaml"
BUG = BUGS["nats-refused-pull-counts-redelivered"]
CLAIMED = profile("jetstream")
WITH_BUG = BUG.enable(CLAIMED)
SHAPE = SHAPES["pull-leaves-redelivery-waiting"]


def _steps(path: Path) -> list[dict[str, Any]]:
    return scenario_steps(path)


def _redelivered(steps: list[dict[str, Any]], with_bug: bool) -> list[int | None]:
    """q's num_redelivered after each step, as the claimed model or the model with the bug says."""
    annotated = annotate(steps, WITH_BUG if with_bug else CLAIMED)
    return [next((c["num_redelivered"] for c in s["expect"].get("consumer_state", []) if c["queue"] == "q"),
                 None) for s in annotated]


def _stream(priority: str | None = None, consumers: tuple[str, ...] = ("c",)) -> list[dict[str, Any]]:
    join: dict[str, Any] = {"name": "q", "address": "s"}
    if priority is not None:
        join["priority"] = priority
    return [{"address": {"name": "s", "retention": "limits"}}, {"join": join},
            *({"consumer": {"name": c, "queue": "q", "window_bytes": 0}} for c in consumers)]


def test_the_option_is_off_on_every_profile_and_the_bug_model_switches_it_on() -> None:
    assert BUG.option == "put_back_keeps_zero_redelivered"
    assert not any(options.put_back_keeps_zero_redelivered for options in PROFILES.values())
    assert WITH_BUG.put_back_keeps_zero_redelivered


def test_the_bug_model_counts_the_redelivery_a_stale_pin_request_was_refused() -> None:
    """The regression scenario: c's request names the removed pin (423) after m1 was NAKed."""
    steps = _steps(STALE_PIN)
    assert _redelivered(steps, with_bug=False)[-1] == 0
    assert _redelivered(steps, with_bug=True)[-1] == 1
    assert _redelivered(steps, with_bug=True)[:-1] == _redelivered(steps, with_bug=False)[:-1]


def test_the_zero_entry_goes_with_an_ack_and_a_restart_and_a_redelivery_counts_rightly() -> None:
    """As replayed on 2.14.5: the ack deletes the entry (0), a restart restores o.rdc from the store,
    which never had it (0), the next delivery makes it 1 (1 on the claimed model too)."""
    refused = _steps(STALE_PIN)
    acked = [*refused, {"ack": {"consumer": "c", "id": "m1"}}]
    assert _redelivered(acked, with_bug=True)[-2:] == [1, 0]
    restarted = [*refused, {"restart": "graceful"}]
    assert _redelivered(restarted, with_bug=True)[-2:] == [1, 0]
    again = [*refused, {"receive": "c"}]
    assert _redelivered(again, with_bug=True)[-2:] == [1, 1]
    assert _redelivered(again, with_bug=False)[-2:] == [0, 1]
    # after the real redelivery the entry is a true one: an ack still clears it, nothing is left over
    assert _redelivered([*again, {"ack": {"consumer": "c", "id": "m1"}}], with_bug=True)[-1] == 0


def test_every_request_that_is_not_given_the_redelivery_leaves_the_entry() -> None:
    """The same put-back in loopAndGatherMsgs: a request without an id while another client's pin holds
    (cycled), an overflow request whose threshold does not hold, a max_bytes request the message does
    not fit (409; no priority group, so nats-server 2.10.25 too)."""
    cycled = [*_stream("pinned_client", ("c1", "c2")), {"send": {"to": "s", "id": "m1", "size": 1}},
              {"receive": "c1"}, {"nack": {"consumer": "c1", "id": "m1"}}, {"receive": "c2"}]
    overflow = [*_stream("overflow"), {"send": {"to": "s", "id": "m1", "size": 1}},
                {"fetch": {"consumer": "c", "batch": 1}}, {"nack": {"consumer": "c", "id": "m1"}},
                {"fetch": {"consumer": "c", "batch": 1, "min_pending": 9}}]
    max_bytes = [*_stream(), {"send": {"to": "s", "id": "m1", "size": 100}}, {"receive": "c"},
                 {"nack": {"consumer": "c", "id": "m1"}},
                 {"fetch": {"consumer": "c", "batch": 1, "max_bytes": 2}}]
    for steps in (cycled, overflow, max_bytes):
        assert _redelivered(steps, with_bug=False)[-1] == 0
        assert _redelivered(steps, with_bug=True)[-1] == 1
        assert SHAPE(scenario_trace(steps, "jetstream") or [])


def test_a_first_delivery_or_a_second_redelivery_put_back_is_the_claimed_model() -> None:
    """A message never delivered goes back without o.rdc (o.sseq--); one delivered twice already has an
    entry of 1, which incDeliveryCount and decDeliveryCount leave at 1: nothing changes."""
    first = [*_stream(), {"send": {"to": "s", "id": "m1", "size": 100}},
             {"fetch": {"consumer": "c", "batch": 1, "max_bytes": 2}}]
    twice = [*_stream(), {"send": {"to": "s", "id": "m1", "size": 100}}, {"receive": "c"},
             {"nack": {"consumer": "c", "id": "m1"}}, {"receive": "c"},
             {"nack": {"consumer": "c", "id": "m1"}},
             {"fetch": {"consumer": "c", "batch": 1, "max_bytes": 2}}]
    assert _redelivered(first, with_bug=True) == _redelivered(first, with_bug=False)
    assert _redelivered(first, with_bug=True)[-1] == 0
    assert _redelivered(twice, with_bug=True) == _redelivered(twice, with_bug=False)
    assert _redelivered(twice, with_bug=True)[-1] == 1


def test_the_shape_needs_a_request_that_leaves_a_redelivery_waiting() -> None:
    assert SHAPE(scenario_trace(_steps(STALE_PIN), "jetstream") or [])
    served = [*_stream(), {"send": {"to": "s", "id": "m1", "size": 1}}, {"receive": "c"},
              {"nack": {"consumer": "c", "id": "m1"}}, {"receive": "c"}]
    trace = scenario_trace(served, "jetstream")
    assert trace is not None and not SHAPE(trace)
    for other in ("nats-restart-keeps-redelivered-at-max-deliver.yaml",
                  "nats-max-deliver-1-reports-no-redelivered.yaml"):
        trace = scenario_trace(_steps(SCENARIOS / other), "jetstream")
        assert trace is not None and not SHAPE(trace), other
