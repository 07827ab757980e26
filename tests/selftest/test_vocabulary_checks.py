"""The checks of DELIVERY-15, DELIVERY-21 and SCHED-13 can fail, each on its own.

Rule ids: DELIVERY-15 (pending.one_place, delivery.one_place), DELIVERY-21 (drain.accounted),
SCHED-13 (send.no_schedule).
"""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from mqconform.adapters.reference import ReferenceAdapter
from mqconform.conformance.exploring import settings as suite_settings
from mqconform.conformance.exploring.base import RunContext
from mqconform.conformance.exploring.driver import Violation
from mqconform.conformance.exploring.registry import MACHINES
from mqconform.conformance.exploring.runner import machine_class, run_machine
from mqconform.reference_model.profiles import ARTEMIS, JETSTREAM
from mqconform.reference_model.world import World
from mqconform.selftest.mutants import MUTANTS


def _mutant(name: str):  # type: ignore[no-untyped-def]
    return next(m for m in MUTANTS if m.name == name)


def _only(check: str, adapter_factory, claimed=ARTEMIS) -> Violation:  # type: ignore[no-untyped-def]
    """Run the delivery machine with every check but `check` disabled; the violation it raised."""
    machine = MACHINES["delivery"]
    disabled = frozenset(machine.RULES) - {check}
    context = RunContext(adapter_factory, claimed, None, disabled)
    with pytest.raises(Violation) as info:
        run_state_machine_as_test(machine_class(machine, context),
                                  settings=suite_settings.get("ci", database=None))
    return info.value


def test_pending_listing_a_held_message_is_caught_by_pending_one_place() -> None:
    result = run_machine(MACHINES["delivery"], _mutant("pending-lists-delivering").adapter, ARTEMIS,
                         suite_settings.get("ci", database=None), max_reruns=0)
    assert result.findings and result.findings[0].check == "pending.one_place"
    assert "DELIVERY-15" in result.findings[0].rules


def test_a_loss_is_caught_by_the_final_drain_alone() -> None:
    violation = _only("drain.accounted", _mutant("close-drops-prefetched").adapter)
    assert violation.check == "drain.accounted" and violation.rules == ("DELIVERY-21",)
    assert "never came out" in violation.message


def test_a_message_delivered_to_two_consumers_is_caught_by_delivery_one_place() -> None:
    violation = _only("delivery.one_place", _mutant("close-returns-all-consumers").adapter)
    assert violation.check == "delivery.one_place" and "still delivering" in violation.message


def test_a_delivery_time_accepted_without_scheduling_is_caught() -> None:
    """A JetStream-claiming implementation that offers and performs scheduling (the model with the
    feature) fails SCHED-13; one that does not offer it is answered unsupported by the driver."""
    scheduling = JETSTREAM.evolve(features=JETSTREAM.features | {"scheduling"})

    def adapter() -> ReferenceAdapter:
        made = ReferenceAdapter(options=JETSTREAM, world_factory=lambda _: World(scheduling))
        made.capabilities = made.capabilities | {"scheduling"}
        return made

    result = run_machine(MACHINES["delivery"], adapter, JETSTREAM, suite_settings.get("ci", database=None),
                         max_reruns=0)
    assert result.findings and result.findings[0].check == "send.no_schedule"
    assert "SCHED-13" in result.findings[0].rules
