"""The operation table and the model's call operations (reference_model/calls.py) agree."""

from __future__ import annotations

from mqconform.operations import CALL_OPS, OPERATIONS
from mqconform.reference_model.calls import CALLS


def test_the_model_runs_the_call_operations_the_table_names() -> None:
    assert {name: op.model for name, op in OPERATIONS.items() if op.model is not None} == CALLS
    # every call operation has a model of its own
    assert set(CALL_OPS) <= set(CALLS)


def test_every_scenario_operation_runs_on_an_adapter() -> None:
    for name, op in OPERATIONS.items():
        assert op.in_scenario or op.call, name
        assert op.run is not None or op.call, name
