"""The brokers' vocabulary in the machines: the ring machine declares queues with the claimed profile's
own overflow policies and byte bounds, and nacks with the forms the profile and the adapter both have."""

from __future__ import annotations

import collections
from typing import Any

import attrs
import pytest

from mqconform.adapters.contract import Result
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.driver import Driver
from mqconform.conformance.exploring.machines.redelivery import FIXED_LIMIT, RedeliveryMachine
from mqconform.conformance.exploring.machines.ring import RingMachine
from mqconform.conformance.exploring.runner import merge_outcomes, run_machine
from mqconform.reference_model.profiles import profile


@pytest.mark.rules("RING-27", "RING-28", "REDELIVERY-24")
@pytest.mark.parametrize("name", ["rabbitmq-classic", "jetstream"])
def test_ring_machine_draws_the_profiles_vocabulary(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: collections.Counter[tuple[Any, ...]] = collections.Counter()
    original = Driver.both_values

    def spy(self: Driver, op: str, args: Any, compare: str | None = None) -> tuple[Any, Any]:
        if op == "queue":
            seen["overflow", args.get("overflow")] += 1
            seen["bytes", args.get("max_length_bytes")] += 1
        if op == "nack":
            seen["requeue", args.get("requeue", True)] += 1
        return original(self, op, args, compare)

    monkeypatch.setattr(Driver, "both_values", spy)
    claimed = profile(name)
    # a fixed seed, not derandomize: the derandomized exploration depended on the tests run before it
    # in the same process (after test_run_command's `mqconform run`, it never nacked with requeue=false)
    hyp = suite_settings.get("dev", max_examples=120, database=None)
    result = run_machine(RingMachine, lambda: ReferenceAdapter(name), claimed, hyp, seed_value=1)
    assert result.findings == [] and result.unknown is None
    drawn = {value for (kind, value) in seen if kind == "overflow"}
    assert drawn == {None} | {policy for policy, _ in claimed.overflow_policies}
    # the nack forms, where the redelivery machine (which inherits the ring machine's nack) nacks more
    result = run_machine(RedeliveryMachine, lambda: ReferenceAdapter(name), claimed, hyp, seed_value=1)
    assert result.findings == [] and result.unknown is None
    assert seen["requeue", False] > 0 and seen["requeue", True] > 0, sorted(seen.items(), key=str)
    assert seen["bytes", 250] > 0  # RING-27: both have byte bounds (JetStream max_bytes)


class _IgnoresNackForms(ReferenceAdapter):
    """A broker that requeues whatever the nack says (REDELIVERY-24/25 broken)."""

    def nack(self, consumer: str, msg_id: str, requeue: bool = True, multiple: bool = False,
             delay_ms: int = 0) -> Any:
        return super().nack(consumer, msg_id)


class _IgnoresOverflow(ReferenceAdapter):
    """A broker that applies its default overflow whatever the declaration names (RING-28 broken)."""

    def declare_queue(self, config: Any) -> Any:
        return super().declare_queue(attrs.evolve(config, overflow=None))


def _run(adapter: type[ReferenceAdapter], name: str, examples: int) -> Any:
    hyp = suite_settings.get("dev", max_examples=examples, database=None, derandomize=True)
    return run_machine(RingMachine, lambda: adapter(name), profile(name), hyp, max_reruns=0)


@pytest.mark.rules("RING-27", "RING-28", "REDELIVERY-24", "REDELIVERY-25", "DELIVERY-22", "DELIVERY-23")
@pytest.mark.parametrize(("name", "evidenced"), [
    ("rabbitmq-classic", {"RING-27", "RING-28", "REDELIVERY-24", "REDELIVERY-25", "DELIVERY-22",
                          "DELIVERY-23"}),
    ("jetstream", {"RING-28", "REDELIVERY-24", "DELIVERY-22", "DELIVERY-23"}),
])
def test_a_conforming_run_evidences_the_vocabulary_rules(name: str, evidenced: set[str]) -> None:
    """The vocabulary the ring machine generates is compared under checks of its own, whose rules a
    run of a conforming implementation passes."""
    result = _run(ReferenceAdapter, name, 200)
    assert result.findings == [] and result.unknown is None
    passed = {rule for rule, state in merge_outcomes([result], name).items() if state == "pass"}
    assert evidenced <= passed, evidenced - passed


@pytest.mark.rules("REDELIVERY-24", "RING-28")
@pytest.mark.parametrize(("broken", "rule"), [(_IgnoresNackForms, "REDELIVERY-24"),
                                                (_IgnoresOverflow, "RING-28")])
def test_a_broker_that_ignores_the_vocabulary_fails_its_rule(broken: type[ReferenceAdapter],
                                                             rule: str) -> None:
    result = _run(broken, "rabbitmq-classic", 200)
    assert result.findings, "the broken broker went unnoticed"
    assert any(rule in finding.rules for finding in result.findings), [
        (f.check, f.rules) for f in result.findings]


class _IgnoresSubjectLimits(ReferenceAdapter):
    """A JetStream stream without its per-subject limit (RING-31..33 broken)."""

    def declare_queue(self, config: Any) -> Any:
        return super().declare_queue(attrs.evolve(config, max_per_subject=-1, discard_new_per_subject=False))


@pytest.mark.rules("RING-31", "RING-32", "RING-33")
def test_the_ring_machine_evidences_per_subject_limits_and_finds_them_ignored() -> None:
    """Per-subject limits (JetStream max_msgs_per_subject): a conforming run passes RING-31..33, a
    stream that ignores the limit fails one of them."""
    result = _run(ReferenceAdapter, "jetstream", 200)
    assert result.findings == [] and result.unknown is None
    passed = {rule for rule, state in merge_outcomes([result], "jetstream").items() if state == "pass"}
    assert {"RING-31", "RING-32", "RING-33"} <= passed
    broken = _run(_IgnoresSubjectLimits, "jetstream", 200)
    assert any({"RING-31", "RING-32", "RING-33"} & set(f.rules) for f in broken.findings), [
        (f.check, f.rules) for f in broken.findings]


class _IgnoresSubjectLimitUpdates(ReferenceAdapter):
    """A JetStream stream whose update of max_msgs_per_subject trims nothing (RING-34 broken)."""

    def set_subject_limit(self, queue: str, limit: int) -> Any:
        return self._do(lambda: setattr(self.world.broker.queues[queue], "max_per_subject", limit))


@pytest.mark.rules("RING-34")
def test_a_subject_limit_update_that_trims_nothing_fails_ring_34() -> None:
    result = _run(ReferenceAdapter, "jetstream", 200)
    passed = {rule for rule, state in merge_outcomes([result], "jetstream").items() if state == "pass"}
    assert "RING-34" in passed
    broken = _run(_IgnoresSubjectLimitUpdates, "jetstream", 200)
    assert any("RING-34" in f.rules for f in broken.findings), [(f.check, f.rules) for f in broken.findings]


class _BrokerLimitOnly(ReferenceAdapter):
    """Kafka before 4.3: a queue has the broker's delivery limit, a declared one is refused."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.capabilities = self.capabilities | {FIXED_LIMIT}
        self.declared: list[int | None] = []

    def declare_queue(self, config: Any) -> Any:
        self.declared.append(config.max_delivery_attempts)
        if config.max_delivery_attempts is not None:
            return Result.fail("unsupported: a delivery limit of its own")
        return super().declare_queue(config)


@pytest.mark.rules("REDELIVERY-26")
def test_an_adapter_with_only_the_brokers_delivery_limit_gets_the_profiles_default() -> None:
    """The redelivery machine declares no delivery limit for an adapter that states FIXED_LIMIT: its
    queues take the profile's default (REDELIVERY-26) instead of a limit the adapter refuses (the run
    was inconclusive)."""
    adapters: list[_BrokerLimitOnly] = []

    def factory() -> _BrokerLimitOnly:
        adapters.append(_BrokerLimitOnly("kafka-share"))
        return adapters[-1]

    hyp = suite_settings.get("dev", max_examples=30, database=None)
    result = run_machine(RedeliveryMachine, factory, profile("kafka-share"), hyp, seed_value=1)
    assert result.findings == [] and result.unknown is None
    assert {limit for adapter in adapters for limit in adapter.declared} == {None}
