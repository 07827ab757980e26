"""docs/contract.md stays true: every operation, `call` op and capability is documented, and the
answers it documents are the ones the reference adapter gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mqconform.adapters.contract import ACK_RESULTS, EXTRA_CAPABILITIES, SEND_RESULTS
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.operations import CALL_OPS, CALL_RESULTS, OPERATIONS, call_operation
from mqconform.reference_model.config import AddressConfig, ConsumerConfig, Message, QueueConfig
from mqconform.reference_model.options import BROKER_FEATURES, FEATURES
from mqconform.scenario.schema import OPS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "contract.md").read_text()
README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
MACHINES_DIR = Path(__file__).resolve().parents[2] / "mqconform" / "conformance" / "exploring" / "machines"


def _documented(name: str) -> bool:
    return f"`{name}`" in DOC


def test_every_operation_and_capability_is_documented() -> None:
    missing = [op for op in (*OPS, *OPERATIONS, *CALL_OPS) if not _documented(op)]
    missing += [cap for cap in sorted(FEATURES | BROKER_FEATURES | EXTRA_CAPABILITIES)
                if not _documented(cap) and not (cap.startswith("counter:") and _documented(cap[8:]))]
    assert not missing, f"docs/contract.md does not mention: {', '.join(missing)}"


def test_every_call_op_a_machine_uses_is_a_contract_call_op() -> None:
    used = set()
    for path in MACHINES_DIR.glob("*.py"):
        used |= set(re.findall(r'\.call\("([a-z_]+)"', path.read_text()))
    assert {"locate", "store_state", "throttle_state", "request"} <= used
    assert used <= set(CALL_OPS), used - set(CALL_OPS)


def test_documented_answers_are_listed() -> None:
    for value in (*SEND_RESULTS, *ACK_RESULTS, *(v for vs in CALL_RESULTS.values() for v in vs)):
        assert _documented(value), value
    for keys in CALL_OPS.values():
        for key in keys or ():
            assert key in DOC, key


@pytest.mark.rules("DELIVERY-2", "DELIVERY-8", "PAGING-3")
def test_send_and_ack_answers_are_the_reference_adapters() -> None:
    seen: set[object] = set()
    for policy in ("PAGE", "DROP", "FAIL", "BLOCK"):
        adapter = ReferenceAdapter("artemis")
        adapter.open("doc")
        adapter.declare_address(AddressConfig("a", max_size_bytes=150, full_policy=policy))
        adapter.declare_queue(QueueConfig("q", address="a"))
        for n in range(3):
            seen.add(adapter.send("a", Message(f"{policy}{n}")).value)
    assert seen == set(SEND_RESULTS)
    adapter = ReferenceAdapter("artemis")
    adapter.open("doc")
    adapter.declare_queue(QueueConfig("q"))
    adapter.open_consumer(ConsumerConfig("c", "q", window_bytes=0))
    adapter.send("q", Message("m1"))
    answers = [adapter.ack("c", "m1").value]
    adapter.receive("c")
    answers += [adapter.ack("c", "m1").value, adapter.ack("c", "m1").value]
    assert answers == ["failed", "ok", "failed"] and set(answers) == set(ACK_RESULTS)


def test_call_answers_are_the_reference_adapters() -> None:
    adapter = ReferenceAdapter("artemis")
    adapter.open("doc")
    got: dict[str, set[object]] = {op: set() for op in CALL_RESULTS}

    def call(op: str, **kw: object) -> object:
        result = adapter.call(op, **kw)
        assert result.is_ok, (op, result.error)
        if op in got:
            got[op].add(result.value)
        return result.value

    call("throttle", name="t", max_sessions=1)
    call("offer", throttle="t", id="a")
    call("offer", throttle="t", id="b")
    call("offer", throttle="t", id="c")
    assert isinstance(call("complete", throttle="t", id="a"), list)
    assert set(call("throttle_state", throttle="t")) == set(CALL_OPS["throttle_state"] or ())  # type: ignore[arg-type]
    call("admission", queues={"send": {"wait_ms": 200, "capacity": 1}})
    call("submit", queue="send", id="r1")
    call("submit", queue="send", id="r2")
    assert call("take", queue="send") == "r1"
    assert set(call("request", id="r2")) == set(CALL_OPS["request"] or ())  # type: ignore[arg-type]
    call("store", name="s", max_bytes=200, block_size=100)
    call("put", store="s", id="p1", size=100)
    call("put", store="s", id="p2", size=100)
    call("put", store="s", id="p3", size=100)
    assert call("locate", store="s", id="p1") == 0 and call("locate", store="s", id="zz") is None
    call("remove", store="s", id="p1")
    call("remove", store="s", id="p1")
    call("open_requester", store="s")
    call("truncate", store="s")
    call("close_requester", store="s")
    call("truncate", store="s", caller="requester")
    call("truncate", store="s")
    assert set(call("store_state", store="s")) == set(CALL_OPS["store_state"] or ())  # type: ignore[arg-type]
    for op, values in CALL_RESULTS.items():
        assert got[op] <= set(values), (op, got[op])
    assert got["offer"] == {"queued", "held"} and got["put"] == {"ok", "e$max_file_exceeded"}
    assert got["remove"] == {"ok", "e$record_not_found"}


@pytest.mark.rules("REDELIVERY-30")
def test_close_session_is_a_call_and_not_applicable_without_sessions() -> None:
    from tests.example_adapter import FifoAdapter

    assert call_operation(FifoAdapter(), "close_session", "c").error.startswith("unsupported")  # type: ignore[union-attr]
    adapter = ReferenceAdapter("artemis")
    adapter.open("doc")
    adapter.declare_queue(QueueConfig("q"))
    adapter.open_consumer(ConsumerConfig("c", "q"))
    assert "sessions" in adapter.capabilities
    assert call_operation(adapter, "close_session", "c").is_ok


def test_readme_links_the_contract_reference() -> None:
    assert "docs/contract.md" in README


def test_the_scenario_language_lists_every_step_operation() -> None:
    """docs/scenarios.md names every operation a scenario step may have (SCENARIO_OPS)."""
    import re

    from mqconform.operations import SCENARIO_OPS

    text = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text(encoding="utf-8")
    found = re.search(r"step has one operation \((.*?)\)", text, re.S)
    assert found is not None
    listed = {name.strip() for name in found.group(1).split(",")}
    assert set(SCENARIO_OPS) <= listed, sorted(set(SCENARIO_OPS) - listed)
