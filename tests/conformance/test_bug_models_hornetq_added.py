"""The bug model hornetq-2.4-messages-added-depaged-delivering (HornetQ 2.4.9's MessagesAdded counts a
message that was paged and depaged once more from its dispatch until its acknowledgement commits or it
goes back to the queue; docs/findings/hornetq-2.4-paging.md, finding 4): it reproduces its regression
scenario (the plain model holds it), the broker's answers replayed are the bug model's at every step,
no other bug model explains it and it explains no unrelated counterexample; what it changes, case by
case (a transacted ack, a close, a rollback, a message never paged). No broker is needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.judging.bug_replay import holds_under
from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.conformance.judging.deviations import load_registry
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import load, run_scenario
from tests.conformance.bug_model_support import bug_model, loaded_steps

ROOT = Path(__file__).resolve().parents[2]
BUG = "hornetq-2.4-messages-added-depaged-delivering"
PROFILE = "hornetq-2.4"
SCENARIO = ROOT / "tests/adapters/scenarios/hornetq-2.4-messages-added-depaged-delivering.yaml"
UNRELATED = ROOT / "tests/adapters/scenarios/artemis-drop-at-limit-delivering-negative.yaml"


def _model(bug: str | None, prof: str = PROFILE) -> ReferenceAdapter:
    return bug_model(bug, prof)



def test_no_profile_switches_the_bug_on() -> None:
    assert not any(getattr(profile(name), BUGS[BUG].option) for name in PROFILES)


def test_the_bug_model_fails_the_scenario_as_the_broker_and_the_plain_model_holds_it() -> None:
    assert run_scenario(load(SCENARIO), _model(None), namespace="t").verdict == "pass"
    outcome = run_scenario(load(SCENARIO), _model(BUG), namespace="t")
    assert outcome.verdict == "fail"
    steps = loaded_steps(SCENARIO)
    assert holds_under(steps, BUG, profile(PROFILE), lambda: _model(BUG))
    assert not holds_under(steps, BUG, profile(PROFILE), lambda: _model(None))
    trace = scenario_trace(steps, PROFILE)
    assert trace is not None and SHAPES["depaged-message-delivering"](trace)


def test_no_other_bug_model_explains_the_scenario() -> None:
    steps = loaded_steps(SCENARIO)
    for other in BUGS:
        if other != BUG:
            assert not holds_under(steps, other, profile(PROFILE), lambda: _model(BUG)), other


def test_it_explains_no_unrelated_counterexample() -> None:
    """Artemis' double decDelivering (another bug, no paging): the implementation with that bug fails
    under this bug model as under the plain one, and the shape does not accept the counterexample."""
    steps = loaded_steps(UNRELATED)
    other = "artemis-drop-at-limit-delivering-negative"
    assert not holds_under(steps, BUG, profile("artemis"), lambda: _model(other, "artemis"))
    trace = scenario_trace(steps, "artemis")
    assert trace is not None and not SHAPES["depaged-message-delivering"](trace)


def test_the_registry_names_one_entry_with_the_bug_model() -> None:
    entries = [d for d in load_registry().deviations if d.model == BUG]
    assert len(entries) == 1
    entry = entries[0]
    assert entry.adapter == "hornetq" and entry.profiles == frozenset({PROFILE})
    assert entry.rules == BUGS[BUG].rules == ("DELIVERY-9",) and not entry.unmodelled
    assert entry.scenario is not None and ROOT / entry.scenario == SCENARIO
    assert entry.versions.contains("2.4.9.Final") and entry.measured.fails == ("2.4.9.Final",)


class Story:
    """Finding 4's story on the model with the bug: max-size 200, m1 and m2 in memory, m3 paged."""

    def __init__(self, bug: str | None = BUG) -> None:
        self.model = _model(bug)
        self.model.open("t")
        assert self.model.declare_address(AddressConfig("a", max_size_bytes=200, page_size_bytes=100)).is_ok
        assert self.model.declare_queue(QueueConfig("q", address="a")).is_ok
        assert self.model.open_consumer(ConsumerConfig("c", "q", window_bytes=0)).is_ok
        sent = [self.model.send("a", Message(f"m{i}", size=100)).value for i in (1, 2, 3)]
        assert sent == ["accepted", "accepted", "paged"]

    def added(self) -> int:
        return int(self.model.counters("q").value["added"])

    def __call__(self, method: str, *args: Any) -> Any:
        answer = getattr(self.model, method)(*args)
        assert answer.is_ok, answer
        return answer.value


def test_the_extra_count_runs_from_the_dispatch_of_a_depaged_message_to_its_ack() -> None:
    story = Story()
    assert story.added() == 3
    assert story("receive", "c") == "m1"  # m3 depaged (not delivered): counted once
    assert story.added() == 3 and story.model.counters("q").value["paged_count"] == 0
    assert story("receive", "c") == "m2"
    assert story.added() == 3  # m2 was never paged
    assert story("receive", "c") == "m3"
    assert story.added() == 4
    story("ack", "c", "m1")
    assert story.added() == 4
    story("ack", "c", "m3")
    assert story.added() == 3
    story("ack", "c", "m2")
    assert story.added() == 3


def test_a_transacted_ack_ends_it_at_the_commit_and_a_rollback_returns_it() -> None:
    story = Story()
    for msg in ("m1", "m2", "m3"):
        assert story("receive", "c") == msg
    story("ack", "c", "m3", True)  # in the session's transaction: the page counter keeps m3
    assert story.added() == 4
    story("rollback", "c")  # back to the queue (QueueImpl#addHead -> #refAdded)
    assert story.added() == 3
    assert sorted(story("receive", "c") for _ in range(3)) == ["m1", "m2", "m3"]
    assert story.added() == 4
    story("ack", "c", "m3", True)
    assert story.added() == 4
    story("commit", "c")
    assert story.added() == 3


def test_a_close_returns_it_and_a_message_never_paged_is_counted_once() -> None:
    story = Story()
    for msg in ("m1", "m2", "m3"):
        assert story("receive", "c") == msg
    assert story.added() == 4
    story("close_consumer", "c")  # every held message goes back to the queue
    assert story.added() == 3
    plain = Story(None)
    for msg in ("m1", "m2", "m3"):
        assert plain("receive", "c") == msg
    assert plain.added() == 3  # the plain model: each message once


def test_without_paging_the_bug_model_counts_as_the_plain_model() -> None:
    for bug in (BUG, None):
        model = _model(bug)
        model.open("t")
        model.declare_address(AddressConfig("a", max_size_bytes=1000, page_size_bytes=100))
        model.declare_queue(QueueConfig("q", address="a"))
        model.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
        for i in (1, 2, 3):
            assert model.send("a", Message(f"m{i}", size=100)).value == "accepted"
        assert [model.receive("c").value for _ in range(3)] == ["m1", "m2", "m3"]
        assert model.counters("q").value["added"] == 3
