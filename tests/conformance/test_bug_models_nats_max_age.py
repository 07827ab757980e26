"""The bug model nats-max-age-after-a-ttl-message (mqconform.reference_model.bugs): a Nats-TTL store moves
an age check that startAgeChk armed (nats-server filestore.go, ageChkTime 0) to up to 2 s later, and
the queue then expires only at that check. Where no Nats-TTL store meets such a check, the model with
the bug expires as the claimed jetstream model does. No broker is needed (the regression scenario on
nats-server itself: tests/adapters/test_nats.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import annotate
from tests.conformance.bug_model_support import scenario_steps

ROOT = Path(__file__).resolve().parents[2]
FINDING = ROOT / "docs/findings/nats-max-age-after-a-ttl-message.yaml"
BUG = BUGS["nats-max-age-after-a-ttl-message"]
CLAIMED = profile("jetstream")
WITH_BUG = BUG.enable(CLAIMED)


def _steps(path: Path) -> list[dict[str, Any]]:
    return scenario_steps(path)


def _counts(steps: list[dict[str, Any]], with_bug: bool) -> list[int | None]:
    """q's message_count after each step, as the claimed model or the model with the bug says."""
    annotated = annotate(steps, WITH_BUG if with_bug else CLAIMED)
    return [next((q["message_count"] for q in s["expect"].get("queue", []) if q["name"] == "q"), None)
            for s in annotated]


def test_the_option_is_off_on_every_profile_and_the_bug_model_switches_it_on() -> None:
    assert BUG.option == "ttl_store_postpones_age_check"
    assert not any(options.ttl_store_postpones_age_check for options in PROFILES.values())
    assert WITH_BUG.ttl_store_postpones_age_check


def test_the_bug_model_keeps_the_messages_to_the_postponed_check() -> None:
    """m1-m3 (max_age 2 s) stored at 3.5 s are due at 5.5 s; m4, with a Nats-TTL, at 5.0 s moves the
    check to 7.0 s: at 6.5 s the broker (2.11.10 to 2.15.1) still holds all four, the claimed model one;
    by 7.5 s both are empty (m4's max_age falls at 7.0 s too)."""
    steps = [*_steps(FINDING), {"advance": 1000}]
    assert _counts(steps, with_bug=False)[-2:] == [1, 0]
    assert _counts(steps, with_bug=True)[-2:] == [4, 0]


def test_without_the_ttl_the_bug_model_is_the_claimed_model() -> None:
    """The finding's control: m4 without a Nats-TTL changes nothing (m1-m3 gone at 5.5 s)."""
    steps = _steps(FINDING)
    send = next(i for i, s in enumerate(steps) if "send" in s)
    steps[send] = {"send": {k: v for k, v in steps[send]["send"].items() if k != "ttl_ms"}}
    assert _counts(steps, with_bug=True) == _counts(steps, with_bug=False)
    assert _counts(steps, with_bug=True)[-1] == 1


def test_a_check_that_a_check_pinned_is_not_moved_by_a_ttl_store() -> None:
    """m1 at 0 s goes at 2.0 s, and that check re-arms for m2 (due 3.5 s) with ageChkTime set: m3 with a
    Nats-TTL at 2.5 s would fire at 4.5 s, later, so the guard keeps 3.5 s (as on nats-server 2.15.1)."""
    steps: list[dict[str, Any]] = [
        {"queue": {"name": "q", "message_ttl_ms": 2000}}, {"send": {"to": "q", "id": "m1"}},
        {"advance": 1500}, {"send": {"to": "q", "id": "m2"}}, {"advance": 1000},
        {"send": {"to": "q", "id": "m3", "ttl_ms": 4000}}, {"advance": 1500}, {"advance": 1000}]
    assert _counts(steps, with_bug=True) == _counts(steps, with_bug=False) == [0, 1, 1, 2, 1, 2, 1, 0]


def test_a_ttl_store_that_brings_the_check_sooner_expires_as_the_claimed_model() -> None:
    """A Nats-TTL of 1 s sent at 0.5 s moves m1's check (2.0 s) to 1.5 s: sooner, so nothing is late;
    the check then re-arms for m1."""
    steps: list[dict[str, Any]] = [
        {"queue": {"name": "q", "message_ttl_ms": 2000}}, {"send": {"to": "q", "id": "m1"}},
        {"advance": 500}, {"send": {"to": "q", "id": "m2", "ttl_ms": 1000}},
        {"advance": 1200}, {"advance": 1000}]
    assert _counts(steps, with_bug=True) == _counts(steps, with_bug=False) == [0, 1, 1, 2, 1, 0]


def test_an_emptied_queue_disarms_and_the_next_store_arms_a_movable_check_again() -> None:
    """After the check that empties the queue (cancelAgeChk), a store without a TTL arms startAgeChk
    again (ageChkTime 0), so a later Nats-TTL store moves it: the bug recurs."""
    first = _steps(FINDING)
    steps = [*first, {"advance": 1500}, {"send": {"to": "q", "id": "m5"}}, {"advance": 1500},
             {"send": {"to": "q", "id": "m6", "ttl_ms": 4000}}, {"advance": 1000}]
    assert _counts(steps, with_bug=False)[-1] == 1
    assert _counts(steps, with_bug=True)[-1] == 2


def test_the_streams_creation_arms_a_check_that_pins_the_next_one() -> None:
    """The expiry machine's set-up: q declared at 0 s arms a check at 2.0 s (newFileStore's startAgeChk);
    m1 at 0.5 s leaves it there. That check re-arms, pinned, for m1 at 2.5 s, so a Nats-TTL store at 2.0 s
    does not move it (as replayed 6 of 6 on nats-server 2.15.1): the claimed model's counts. Without the
    creation's timer m1's own startAgeChk (2.5 s) would have been moved to 4.0 s."""
    steps: list[dict[str, Any]] = [
        {"address": {"name": "dlx"}}, {"queue": {"name": "dlq", "address": "dlx"}},
        {"queue": {"name": "q", "message_ttl_ms": 2000}},
        {"consumer": {"name": "c-q", "queue": "q", "window_bytes": 0}}, {"advance": 500},
        {"send": {"to": "q", "id": "m1"}}, {"advance": 1500},
        {"send": {"to": "q", "id": "m2", "ttl_ms": 4000}}, {"advance": 1500}]
    assert _counts(steps, with_bug=True) == _counts(steps, with_bug=False)
    assert _counts(steps, with_bug=True)[-3:] == [1, 2, 1]


DELIVERED = ROOT / "tests/adapters/scenarios/nats-max-age-delivered-after-a-ttl-message.yaml"


def test_messages_held_by_a_consumer_wait_for_the_postponed_check_too() -> None:
    """JetStream expires a delivered, unacknowledged message by max_age as a ready one: m1-m3, received
    and held, stay to the moved check (6.0 s) as ready ones would, and the bug's shape (the registry's
    pre-filter) counts them as what the last advance expired. Before, the shape looked at ready
    messages only, so a random seed of the README's main job met this bug and exited 1 unexplained."""
    from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace

    steps = _steps(DELIVERED)
    assert _counts(steps, with_bug=False)[-1] == 1
    assert _counts(steps, with_bug=True)[-1] == 4
    trace = scenario_trace(steps, "jetstream")
    assert trace is not None
    assert SHAPES["max-age-expiry-after-ttl-send"](trace)
    # without the receive, the same messages are ready ones: the shape held there before too
    ready = [s for s in steps if "receive_batch" not in s]
    trace = scenario_trace(ready, "jetstream")
    assert trace is not None and SHAPES["max-age-expiry-after-ttl-send"](trace)
    # without the Nats-TTL publish it is not this bug's shape
    plain = [{"send": {"to": "q", "id": "m4"}} if "send" in s else s for s in steps]
    trace = scenario_trace(plain, "jetstream")
    assert trace is not None and not SHAPES["max-age-expiry-after-ttl-send"](trace)
