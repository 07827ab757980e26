"""The two Artemis priority-list bug models found by fresh seed 989465 (2.40.0):
artemis-priority-removal-lowers-highest (a last-value prune below the top level lowers
highestPriority, and the next reset puts every iterator there) and
artemis-ring-eviction-keeps-last-priority (a ring's poll leaves lastPriority and highestPriority, so an
add at the evicted level resets no iterator). Each gives its regression scenario's broker answer where
the plain model holds the scenario, no other bug model explains it, and each, with ARTEMIS-4985's,
leaves the other scenarios to their own bug. The first also on a non-destructive queue, whose consumers
walk the same list (each with its own iterator), with the repeat and scheduled-reset bug models there.
No broker is needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.judging.bug_replay import holds_under
from mqconform.conformance.judging.deviation_shapes import SHAPES, scenario_trace
from mqconform.reference_model.bugs import BUGS
from mqconform.reference_model.config import ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.profiles import PROFILES, profile
from mqconform.scenario import load, run_scenario
from tests.conformance.bug_model_support import (
    assert_bug_model_gives_the_brokers_answer,
    bug_model,
    scenario_steps,
)

ROOT = Path(__file__).resolve().parents[2]
PRUNE = "artemis-priority-removal-lowers-highest"
POLL = "artemis-ring-eviction-keeps-last-priority"
SCENARIOS = {
    PRUNE: ROOT / "tests/adapters/scenarios/artemis-last-value-prune-skips-higher-priority.yaml",
    POLL: ROOT / "tests/adapters/scenarios/artemis-ring-eviction-keeps-priority-iterator-low.yaml",
}
SHAPE = {PRUNE: "removal-below-higher-priority", POLL: "same-priority-send-not-reset"}
#: the step (1-based) and answer at which the broker (2.40.0) differs from the plain model
BROKER = {PRUNE: (6, "result: expected m2, actual m3"),
          POLL: (12, "queue q pending: expected [m8], actual [m10]")}


@pytest.mark.parametrize("bug", [PRUNE, POLL])
def test_no_profile_switches_the_bug_on(bug: str) -> None:
    assert not any(getattr(profile(name), BUGS[bug].option) for name in PROFILES)


@pytest.mark.parametrize("bug", [PRUNE, POLL])
def test_the_bug_model_gives_the_brokers_answer_where_the_plain_model_holds(bug: str) -> None:
    scenario = load(SCENARIOS[bug])
    assert run_scenario(scenario, bug_model(None, "artemis"), namespace="t").verdict == "pass"
    outcome = run_scenario(scenario, bug_model(bug, "artemis"), namespace="t")
    step, answer = BROKER[bug]
    assert outcome.verdict == "fail"
    line = outcome.verdict_line()
    assert f"step {step} " in line and answer in line, line
    steps = scenario_steps(SCENARIOS[bug])
    assert holds_under(steps, bug, profile("artemis"), lambda: bug_model(bug, "artemis"))
    assert not holds_under(steps, bug, profile("artemis"), lambda: bug_model(None, "artemis"))
    trace = scenario_trace(steps, "artemis")
    assert trace is not None and SHAPES[SHAPE[bug]](trace)


@pytest.mark.parametrize("bug", [PRUNE, POLL])
def test_no_other_bug_model_explains_the_scenario(bug: str) -> None:
    steps = scenario_steps(SCENARIOS[bug])
    for other in BUGS:
        if other != bug:
            assert not holds_under(steps, other, profile("artemis"), lambda: bug_model(bug, "artemis")), other


def test_artemis_4985_keeps_its_own_scenario_with_the_new_bugs_on() -> None:
    """The three options together (exploration past known bugs) still give ARTEMIS-4985's answer on its
    scenario, and each new bug alone does not."""
    scenario = load(ROOT / "docs/findings/artemis-priority-after-cancel.yaml")
    options = profile("artemis")
    every = options.evolve(stale_priority_iterators=True, priority_removal_lowers_highest=True,
                           priority_poll_keeps_last=True)
    assert "actual [m2, m3, m4, m5]" in run_scenario(scenario, ReferenceAdapter(options=every),
                                                     namespace="t").verdict_line()
    for bug in (PRUNE, POLL):
        assert run_scenario(scenario, bug_model(bug, "artemis"), namespace="t").verdict == "pass", bug


def _first_two(bug: str | None, *, last_value: bool) -> list[str | None]:
    """A consumer without credit, m1 (4) then m2 (9, the same last value when `last_value`), m3 (4):
    what its first two receives get."""
    model = bug_model(bug, "artemis")
    model.open("t")
    model.declare_queue(QueueConfig(name="q", last_value_key="lvk" if last_value else None))
    model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=0))
    props = {"lvk": "v0"}
    model.send("q", Message(id="m1", size=100, properties=props))
    model.send("q", Message(id="m2", size=100, priority=9, properties=props))
    model.send("q", Message(id="m3", size=100))
    return [model.receive("c").value, model.receive("c").value]


def test_without_a_prune_the_walk_keeps_priority_order() -> None:
    assert _first_two(PRUNE, last_value=True) == ["m3", "m2"]
    assert _first_two(None, last_value=True) == ["m2", "m3"]
    assert _first_two(PRUNE, last_value=False) == _first_two(None, last_value=False) == ["m2", "m1"]


#: the non-destructive version (seed 989465 on 2.40.0, lastvalue-3 to lastvalue-9): each consumer walks
#: the queue's one list with its own iterator, which the prune's lowered highestPriority sends below m2
NON_DESTRUCTIVE = (ROOT / "tests/adapters/scenarios"
                   / "artemis-non-destructive-last-value-prune-skips-higher-priority.yaml")
#: the options the lastvalue area explored with when it found the non-destructive case
EXPLORED = {"repeat_after_removal_returns_twice": True, "priority_removal_lowers_highest": True}


def test_a_non_destructive_consumer_walks_the_lowered_list_too() -> None:
    """DELIVERY-3, DELIVERY-12: the scenario holds on the plain model; the bug model gives the broker's
    m3 at step 6, which the replay explains alone and with the repeat bug the area explored past."""
    assert_bug_model_gives_the_brokers_answer(PRUNE, NON_DESTRUCTIVE, "artemis", None, 0, "step 6 ",
                                              "result: expected m2, actual m3")
    steps = scenario_steps(NON_DESTRUCTIVE)
    artemis = profile("artemis")
    both = ReferenceAdapter(options=artemis.evolve(**EXPLORED))
    assert holds_under(steps, PRUNE, artemis, lambda: both, options=EXPLORED)
    for other in BUGS:
        if other != PRUNE:
            assert not holds_under(steps, other, artemis, lambda: bug_model(PRUNE, "artemis")), other


def _non_destructive(options: dict[str, bool], *, fire: bool = False) -> list[str | None]:
    """The non-destructive scenario's steps, then (`fire`) a scheduled m6 fired to the head: what a
    receive of three gives under the artemis model with `options`."""
    model = ReferenceAdapter(options=profile("artemis").evolve(**options))
    model.open("t")
    model.declare_queue(QueueConfig(name="q", last_value_key="lvk", non_destructive=True))
    model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=0))
    props = {"lvk": "v0"}
    model.send("q", Message(id="m1", size=100, properties=props))
    model.send("q", Message(id="m2", size=100, priority=9, properties=props))
    for msg_id in ("m3", "m4", "m5"):
        model.send("q", Message(id=msg_id, size=100))
    if fire:
        model.send("q", Message(id="m6", size=100, scheduled_at_ms=10))  # the clock starts at 0
        model.advance(10)
    return [model.receive("c").value for _ in range(3)]


def test_the_walk_and_the_repeat_bug_give_the_brokers_batch() -> None:
    """lastvalue-7 (2.40.0): the broker gives [m3, m3, m4] to a receive of three. The walk hands out m3
    (level 4, below m2); the level-4 iterator lost m1 to the prune (its current null), so m3 comes twice
    (artemis_linked_list_repeat); then m4. The repeat bug alone gives m2 first, the walk alone no
    second m3."""
    assert _non_destructive(EXPLORED) == ["m3", "m3", "m4"]
    assert _non_destructive({"repeat_after_removal_returns_twice": True}) == ["m2", "m3", "m3"]
    assert _non_destructive({"priority_removal_lowers_highest": True}) == ["m3", "m4", "m5"]
    assert _non_destructive({}) == ["m2", "m3", "m4"]


def test_a_scheduled_reset_gives_the_consumer_a_new_iterator_at_the_top() -> None:
    """QueueImpl#resetAllIterators (artemis_scheduled_resets_iterators): a fired scheduled message
    replaces each consumer's iterator by a new one, which starts at the top level (m2) whatever the
    list's lowered highestPriority; without that bug the old iterator stays at level 4, below m2, and
    hands out m6 (fired to the head of level 4) first."""
    resets = {"priority_removal_lowers_highest": True, "scheduled_fire_resets_iterators": True}
    assert _non_destructive(resets, fire=True)[0] == "m2"
    assert _non_destructive({"priority_removal_lowers_highest": True}, fire=True)[0] == "m6"


def _pull_after_a_same_level_send(options: dict[str, bool]) -> list[str | None]:
    """A non-destructive last-value queue and a pull consumer: m1 at priority 0, m2 at 4 (listed
    m2, m1); m2 received; m3 (m2's value, priority 4) supersedes it; what the next receive gives."""
    model = ReferenceAdapter(options=profile("artemis").evolve(**options))
    model.open("t")
    model.declare_queue(QueueConfig(name="q", last_value_key="lvk", non_destructive=True))
    model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=0))
    model.send("q", Message(id="m1", size=100, priority=0, properties={"lvk": "v1"}))
    model.send("q", Message(id="m2", size=100, properties={"lvk": "v0"}))
    got = [model.receive("c").value]
    model.send("q", Message(id="m3", size=100, properties={"lvk": "v0"}))
    return [*got, model.receive("c").value]


def test_a_non_destructive_same_level_add_skips_a_consumer_that_moved_down() -> None:
    """The non-destructive same-level add (a 2.40.0 ci run's lastvalue area, eleven FAILs of one
    7-step story, taken as ARTEMIS-4985's for a day): the consumer's iterator went down to m1's level
    after it was given m2, and m3's add at the last add's level resets nothing, so the broker gives m1
    before m3; the claimed model gives m3, and so does 4985's model (it keeps such a consumer in list
    order: the story replays alike on releases without 4985's change)."""
    assert _pull_after_a_same_level_send({}) == ["m2", "m3"]
    same_level = BUGS["artemis-non-destructive-priority-same-level-add"].option
    assert _pull_after_a_same_level_send({same_level: True}) == ["m2", "m1"]
    assert _pull_after_a_same_level_send({BUGS["artemis-4985"].option: True}) == ["m2", "m3"]


def _credit_after_a_same_level_send(options: dict[str, bool]) -> list[str | None]:
    """The regression scenario artemis-non-destructive-priority-same-level.yaml on the model: b (0) and
    h1 (9) on a non-destructive queue, a consumer with one credit given h1, h2 (9) sent, h1 acked:
    the two receives."""
    model = ReferenceAdapter(options=profile("artemis").evolve(**options))
    model.open("t")
    model.declare_queue(QueueConfig(name="q", non_destructive=True))
    model.send("q", Message(id="b", size=100, priority=0))
    model.send("q", Message(id="h1", size=100, priority=9))
    model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=-1, max_unacked=1))
    got = [model.receive("c").value]
    model.send("q", Message(id="h2", size=100, priority=9))
    model.ack("c", "h1")
    return [*got, model.receive("c").value]


def test_the_same_level_add_bug_hands_out_the_lower_message_with_the_next_credit() -> None:
    """The consumer's iterator stopped at b (level 0) while it held h1; h2's add at 9 resets nothing,
    so the credit from h1's ack hands out b (every served release); the claimed model gives h2."""
    same_level = BUGS["artemis-non-destructive-priority-same-level-add"].option
    assert _credit_after_a_same_level_send({}) == ["h1", "h2"]
    assert _credit_after_a_same_level_send({same_level: True}) == ["h1", "b"]


def test_an_iterator_that_wraps_hands_out_nothing_in_that_pass() -> None:
    """A 2.40.0 ci story (lastvalue-7 of 2026-11-30): the consumer's iterator stopped at m6 (level 0),
    a same-level add (m13 at 9) reset nothing, and m13's prune of m6 (same value) emptied level 0.
    The ack's credit starts one delivery pass: the iterator finds nothing at or below level 0, wraps
    to the top and answers nothing (PriorityLinkedListImpl#hasNext), so with one consumer the pass
    ends and DeliveringCount stays 2; before, the walk handed out the top message at once. The prune
    itself starts no pass (QueueImpl#deliver calls pruneLastValues at a pass's end), nor does a send
    scheduled for later (QueueImpl#addTail returns at scheduleIfPossible)."""
    same_level = BUGS["artemis-non-destructive-priority-same-level-add"].option
    model = ReferenceAdapter(options=profile("artemis").evolve(**{same_level: True}))
    model.open("t")
    model.declare_queue(QueueConfig(name="q", last_value_key="lvk", non_destructive=True))
    model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=-1, max_unacked=2))
    for name in ("m2", "m3"):
        model.send("q", Message(id=name, size=100))
    model.send("q", Message(id="m6", size=100, priority=0, properties={"lvk": "v2"}))
    model.send("q", Message(id="m7", size=100, priority=9, properties={"lvk": "v0"}))
    assert [model.receive("c").value for _ in range(2)] == ["m2", "m3"]
    assert model.ack("c", "m3").value == "ok"  # m7 comes; the iterator then stops at m6
    model.send("q", Message(id="m13", size=100, priority=9, properties={"lvk": "v2"}))
    assert model.ack("c", "m2").value == "ok"
    assert model.counters("q").value["delivering_count"] == 1  # m7 only: m13 waits for the next pass
    model.send("q", Message(id="m20", size=100, scheduled_at_ms=60_000))  # scheduled: lists nothing
    assert model.counters("q").value["delivering_count"] == 1  # and starts no pass (a 2.56.0 ci story)
    model.send("q", Message(id="m14", size=100, priority=9))
    assert model.counters("q").value["delivering_count"] == 2  # the next pass hands out m13


def test_a_scheduled_fire_gives_every_consumer_a_new_iterator_at_the_top() -> None:
    """DELIVERY-3, SCHED-4: QueueImpl#addHead(List, scheduling) ends with resetAllIterators on every
    queue, and a new PriorityLinkedListIterator starts at the top level. A prune of m1 (4) below m2
    (9) lowers highestPriority (this module's bug); the fired m6 (4) then goes to the head, and the
    consumer's next receive is m2, the top, as 2.40.0 answered (a ci run's lastvalue-10, 2026-11-30:
    the walk kept the consumer's old iterator and expected m6)."""
    model = bug_model(PRUNE, "artemis")
    model.open("t")
    model.declare_queue(QueueConfig(name="q", last_value_key="lvk"))
    model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=0))
    assert model.advance(1010).is_ok
    model.send("q", Message(id="m1", size=100, properties={"lvk": "v2"}))
    model.send("q", Message(id="m2", size=100, priority=9, properties={"lvk": "v2"}))
    model.send("q", Message(id="m6", size=100, scheduled_at_ms=1020, properties={"lvk": "v0"}))
    assert model.advance(10).is_ok
    assert model.pending_ids("q").value == ["m2", "m6"]
    assert [model.receive("c").value, model.receive("c").value] == ["m2", "m6"]


def _receipts(steps: list[dict[str, object]], **options: bool) -> list[object]:
    from mqconform.scenario import annotate

    answers = annotate(steps, profile("artemis").evolve(**options))
    return [step["expect"].get("result") for step in answers if "receive" in step]


def test_a_pull_receive_whose_pass_wraps_gets_the_top_from_its_drain() -> None:
    """A 2.40.0 ci story (lastvalue-6 of 2026-11-30): m3 given to a pull consumer, whose busy iterator
    then stopped at m2 (level 0); m4 (level 4, m2's value) prunes m2. The next receive's first pass
    finds nothing at or below level 0 and wraps; the receive's drain runs another pass
    (ServerConsumerImpl#forceDelivery), which hands out m4 from the top, as the broker answered. A
    consumer with a window has no drain: its credit's one pass gives nothing
    (test_an_iterator_that_wraps_hands_out_nothing_in_that_pass)."""
    steps: list[dict[str, object]] = [
        {"queue": {"name": "q", "last_value_key": "lvk", "non_destructive": True}},
        {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
        {"send": {"to": "q", "id": "m2", "size": 100, "priority": 0, "properties": {"lvk": "v0"}}},
        {"send": {"to": "q", "id": "m3", "size": 100, "properties": {"lvk": "v1"}}},
        {"receive": "c"},
        {"send": {"to": "q", "id": "m4", "size": 100, "properties": {"lvk": "v0"}}},
        {"receive": "c"}]
    same_level = BUGS["artemis-non-destructive-priority-same-level-add"].option
    assert _receipts(steps, **{same_level: True}) == ["m3", "m4"]


def test_the_removal_bug_keeps_the_same_level_shortcut_while_highest_is_below_a_listed_level() -> None:
    """A 2.40.0 ci story (lastvalue-17 of 2026-11-30), a destructive last-value queue: m3 (9) prunes m2
    (4) and the removal loop leaves highestPriority at 0 under m3; m4..m6 (4) reset the iterators and
    raise it to 4; a consumer opened then starts at the top, and m7's add at 4, the last add's level
    and not above 4, resets nothing (checkHighest's shortcut): the receive gives m3, as the broker
    answered, not m4 (a reset to highestPriority)."""
    steps: list[dict[str, object]] = [
        {"queue": {"name": "q", "last_value_key": "lvk"}},
        {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
        {"send": {"to": "q", "id": "m2", "size": 100, "properties": {"lvk": "v1"}}},
        {"send": {"to": "q", "id": "m3", "size": 100, "priority": 9, "properties": {"lvk": "v1"}}},
        {"send_batch": {"to": "q", "ids": ["m4", "m5", "m6"], "size": 100}},
        {"close": "c"},
        {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
        {"send": {"to": "q", "id": "m7", "size": 100, "properties": {"lvk": "v0"}}},
        {"receive": "c"}]
    removal = BUGS["artemis-priority-removal-lowers-highest"].option
    assert _receipts(steps, **{removal: True}) == ["m3"]
