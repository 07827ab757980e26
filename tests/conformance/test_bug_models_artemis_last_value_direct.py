"""The Artemis bug model artemis-last-value-direct-delivery-stays-current (LASTVALUE-5, LASTVALUE-6): a
keyed message a consumer takes the moment it is sent to a last-value queue (QueueImpl#deliverDirect,
never listed) stays its value's current message, so a message of its value returned by a close is
pruned as stale, and, with the bug artemis-last-value-nack-pruned-before-credit held, a nack of it is
not. It gives the regression scenario's broker answer where the plain model holds the scenario; a
message listed before its delivery, one without the key and a non-destructive queue are as the plain
model has them. No broker is needed."""

from __future__ import annotations

from pathlib import Path

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.judging.bug_replay import holds_under
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
BUG = "artemis-last-value-direct-delivery-stays-current"
NACK_BUG = "artemis-last-value-nack-pruned-before-credit"
SCENARIO = ROOT / "tests/adapters/scenarios/artemis-last-value-direct-delivery-stays-current.yaml"


def test_no_profile_switches_the_bug_on() -> None:
    assert not any(getattr(profile(name), BUGS[BUG].option) for name in PROFILES)


def test_the_bug_model_gives_the_brokers_answer_where_the_plain_model_holds() -> None:
    assert_bug_model_gives_the_brokers_answer(BUG, SCENARIO, "artemis", "last-value-direct-delivery", 4,
                                              "step 6 ", "queue r message_count: expected 1, actual 0")


def _after_nack(bug: str | None, *, listed: bool = False, keyed: bool = True,
                non_destructive: bool = False) -> tuple[list[str], int]:
    """The bug NACK_BUG held, and `bug` besides: m1 (priority 0, keyed unless not `keyed`) sent to a
    last-value queue whose prefetching consumer has room for one (or, `listed`, sent before the consumer
    opens), m2 (priority 4) after it; m1 received and nacked: the pending ids and the replaced count."""
    options = BUGS[NACK_BUG].enable(profile("artemis"))
    model = ReferenceAdapter(options=BUGS[bug].enable(options) if bug else options)
    model.open("t")
    model.declare_queue(QueueConfig(name="q", last_value_key="lvk", non_destructive=non_destructive))
    consumer = ConsumerConfig(name="c", queue="q", window_bytes=-1, max_unacked=1)
    if not listed:
        model.open_consumer(consumer)
    model.send("q", Message(id="m1", size=100, priority=0, properties={"lvk": "v0"} if keyed else {}))
    if listed:
        model.open_consumer(consumer)
    model.send("q", Message(id="m2", size=100))
    assert model.receive("c").value == "m1"
    if non_destructive:
        return model.pending_ids("q").value, model.counters("q").value["replaced"]
    assert model.nack("c", "m1").value == "ok"
    return model.pending_ids("q").value, model.counters("q").value["replaced"]


def test_a_nack_of_a_message_taken_at_its_send_is_not_pruned() -> None:
    """2.40.0: the nack bug prunes a nacked message delivered from the list (not current); one taken at
    its send is still current with this bug, and stays (the claimed model keeps both)."""
    assert _after_nack(None) == ([], 1)
    assert _after_nack(BUG) == (["m1"], 0)
    plain = bug_model(None, "artemis")
    assert not plain.options.nack_pass_before_credit and not getattr(plain.options, BUGS[BUG].option)


def test_a_message_listed_before_its_delivery_is_pruned_as_the_plain_model_has_it() -> None:
    """2.40.0: the same steps with m1 sent before the consumer opens (delivered from the list,
    LastValueQueue#refRemoved forgets it) prune m1 at the nack, with this bug or without it."""
    assert _after_nack(BUG, listed=True) == _after_nack(None, listed=True) == ([], 1)


def test_a_message_without_the_key_and_a_non_destructive_queue_are_unchanged() -> None:
    assert _after_nack(BUG, keyed=False) == _after_nack(None, keyed=False) == (["m1"], 0)
    assert _after_nack(BUG, non_destructive=True) == _after_nack(None, non_destructive=True)


def test_a_close_returns_a_message_of_that_value_as_stale() -> None:
    """Measured once on 2.40.0: m4 (v1) listed, then taken by c1; m5 (v1) taken by c2 at its send; c1's
    close returns m4, which the broker prunes (putIfAbsent finds m5) where the plain model keeps it."""
    def returned(bug: str | None) -> list[str]:
        model = bug_model(bug, "artemis")
        model.open("t")
        model.declare_queue(QueueConfig(name="r", last_value_key="lvk"))
        model.send("r", Message(id="m4", size=100, properties={"lvk": "v1"}))
        for name in ("c1", "c2"):
            model.open_consumer(ConsumerConfig(name=name, queue="r", window_bytes=-1, max_unacked=1))
        model.send("r", Message(id="m5", size=100, properties={"lvk": "v1"}))
        model.close_consumer("c1")
        return model.pending_ids("r").value

    assert returned(None) == ["m4"]
    assert returned(BUG) == []


def test_a_nack_by_a_full_consumer_of_a_message_taken_at_its_send() -> None:
    """2.40.0 and 2.56.0: m1 taken at its send by a consumer that holds at most one, received and nacked
    with nothing else in the queue. The claimed model gives it back (the close rule, LASTVALUE-6); the
    nack bug alone prunes it (not current, and the pass runs before the nacker's credit returns); the
    broker, with this bug too, keeps it current and gives it back, as both bugs together do."""
    def after(*bugs: str) -> tuple[list[str], int, int]:
        options = profile("artemis")
        for bug in bugs:
            options = BUGS[bug].enable(options)
        model = ReferenceAdapter(options=options)
        model.open("t")
        model.declare_queue(QueueConfig(name="q", last_value_key="lvk"))
        model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=-1, max_unacked=1))
        model.send("q", Message(id="m1", size=100, properties={"lvk": "v1"}))
        assert model.receive("c").value == "m1"
        assert model.nack("c", "m1").value == "ok"
        counters = model.counters("q").value
        return model.pending_ids("q").value, counters["replaced"], counters["delivering_count"]

    assert after() == after(BUG) == after(NACK_BUG, BUG) == ([], 0, 1)
    assert after(NACK_BUG) == ([], 1, 0)


def test_the_nack_scenario_is_the_nack_bug_with_this_bug_held_or_not() -> None:
    """The 2.56.0 ci run's ring area (eight FAILs explored with this bug's option on) is the bug
    artemis-last-value-nack-pruned-before-credit: s1 is given from the list after its close, so this
    bug does not keep it current, and the nack bug prunes it with this bug held or not; this bug alone
    changes nothing there."""
    path = ROOT / "tests/adapters/scenarios/artemis-last-value-nack-pruned-before-credit.yaml"
    scenario = load(path)
    assert run_scenario(scenario, bug_model(None, "artemis"), namespace="t").verdict == "pass"
    assert run_scenario(scenario, bug_model(BUG, "artemis"), namespace="t").verdict == "pass"
    steps = scenario_steps(path)
    assert not holds_under(steps, BUG, profile("artemis"), lambda: bug_model(BUG, "artemis"))
    both = ReferenceAdapter(options=BUGS[NACK_BUG].enable(BUGS[BUG].enable(profile("artemis"))))
    assert holds_under(steps, NACK_BUG, profile("artemis"), lambda: both, options={BUGS[BUG].option: True})


def test_a_send_goes_directly_only_while_the_brokers_flag_is_on() -> None:
    """QueueImpl#directDeliver: a listed send clears it; the next send re-checks it at once (the list is
    empty: back on, so k1 is taken at its send, stays current, and its nack keeps it); after the next
    listed send it stays off (the re-check is due a second of real time later), so k2 is listed, given
    from the list, no longer current, and pruned at its nack as without this bug (a 2.40.0 ci run's
    ring area: six FAILs of a model that sent directly whenever its list was empty)."""
    model = ReferenceAdapter(options=BUGS[BUG].enable(BUGS[NACK_BUG].enable(profile("artemis"))))
    model.open("t")
    model.declare_queue(QueueConfig(name="q", last_value_key="lvk"))
    model.open_consumer(ConsumerConfig(name="c", queue="q", window_bytes=-1, max_unacked=1))

    def consumed(*ids: str) -> None:
        for msg_id in ids:
            assert model.receive("c").value == msg_id and model.ack("c", msg_id).value == "ok"

    def nacked(key_id: str, after: str) -> list[str]:
        """`key_id` (lvk v0, priority 0) sent to the empty queue, `after` behind it; `key_id` nacked."""
        model.send("q", Message(id=key_id, size=100, priority=0, properties={"lvk": "v0"}))
        model.send("q", Message(id=after, size=100))
        assert model.receive("c").value == key_id and model.nack("c", key_id).value == "ok"
        return model.pending_ids("q").value

    for msg_id in ("a1", "a2"):  # a1 taken at its send, a2 listed behind it: the flag off
        model.send("q", Message(id=msg_id, size=100))
    consumed("a1", "a2")
    assert nacked("k1", "b1") == ["k1"]  # re-checked at k1's send: on, k1 still current
    consumed("b1", "k1")
    for msg_id in ("a3", "a4"):
        model.send("q", Message(id=msg_id, size=100))
    consumed("a3", "a4")
    assert nacked("k2", "b2") == []  # off for good: k2 was listed, forgotten at its delivery, pruned
