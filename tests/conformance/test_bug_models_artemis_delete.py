"""The bug model artemis-non-destructive-delete-uncounted (a delete by id from a non-destructive Artemis
queue takes the message off but counts it nowhere and keeps its bytes; QueueImpl#deleteReference acks
NORMAL, postAcknowledge leaves such an ack of a non-destructive queue at once): it reproduces its
regression scenario (the plain model holds it), the broker's answers are the bug model's at every step,
no other bug model explains it, and it changes nothing on a destructive queue. No broker is needed."""

from __future__ import annotations

from pathlib import Path

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.judging.bug_replay import holds_under
from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.config import Message, QueueConfig
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import load, run_scenario
from tests.conformance.bug_model_support import bug_model, loaded_steps

ROOT = Path(__file__).resolve().parents[2]
BUG = "artemis-non-destructive-delete-uncounted"
SCENARIO = ROOT / "tests/adapters/scenarios/artemis-non-destructive-delete-uncounted.yaml"


def _model(bug: str | None) -> ReferenceAdapter:
    return bug_model(bug, "artemis")



def test_no_profile_switches_the_bug_on() -> None:
    assert not any(getattr(profile(name), BUGS[BUG].option) for name in PROFILES)


def test_the_bug_model_fails_the_scenario_as_the_broker_and_the_plain_model_holds_it() -> None:
    assert run_scenario(load(SCENARIO), _model(None), namespace="t").verdict == "pass"
    assert run_scenario(load(SCENARIO), _model(BUG), namespace="t").verdict == "fail"
    steps = loaded_steps(SCENARIO)
    assert holds_under(steps, BUG, profile("artemis"), lambda: _model(BUG))
    assert not holds_under(steps, BUG, profile("artemis"), lambda: _model(None))
    trace = scenario_trace(steps, "artemis")
    assert trace is not None and SHAPES["non-destructive-delete"](trace)


def test_no_other_bug_model_explains_the_scenario() -> None:
    steps = loaded_steps(SCENARIO)
    for other in BUGS:
        if other != BUG:
            assert not holds_under(steps, other, profile("artemis"), lambda: _model(BUG)), other


def _after_delete(bug: str | None, non_destructive: bool) -> dict[str, int]:
    model = _model(bug)
    model.open("t")
    model.declare_queue(QueueConfig(name="q", non_destructive=non_destructive))
    for msg_id in ("m1", "m2"):
        model.send("q", Message(id=msg_id, size=100))
    assert model.delete_message("q", "m1").value is True
    counters = model.counters("q").value
    return {key: counters[key] for key in ("message_count", "acknowledged", "killed")}


def test_only_a_non_destructive_queue_counts_the_delete_nowhere() -> None:
    assert _after_delete(BUG, True) == {"message_count": 1, "acknowledged": 0, "killed": 0}
    assert _after_delete(None, True) == {"message_count": 1, "acknowledged": 1, "killed": 0}
    assert _after_delete(BUG, False) == _after_delete(None, False) == {"message_count": 1, "acknowledged": 1,
                                                                        "killed": 0}
