"""The shared base's ``call`` dispatch and ``shutdown`` (adapters/_base.py), on small fake adapters:
a ``@component`` method answers its ``call`` operation, one not declared (or without the capability
it requires) answers the unchanged ``unsupported`` message; the built-in adapters declare their
``call`` operations this way and none dispatches by hand."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

from mqconform.adapters._base import BrokerAdapter, Refused, component, operation
from mqconform.adapters.contract import Result
from mqconform.adapters.registry import BUILTIN

UNSUPPORTED_RESTART = "unsupported: flow-control component 'restart'"


class Handle:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def stop(self) -> None:
        self.log.append(f"{self.name}.stop")

    def close(self) -> None:
        self.log.append(f"{self.name}.close")


class Fake(BrokerAdapter):
    name = "fake"
    SHUTDOWN_ENDS: ClassVar[Mapping[str, str]] = {"server": "stop", "control": "close"}

    def __init__(self, capabilities: frozenset[str] = frozenset()) -> None:
        self.capabilities = capabilities
        self.log: list[str] = []
        self.server: Handle | None = Handle(self.log, "server")
        self.control: Handle | None = None
        self._reset()

    def close(self) -> None:
        self.log.append("close")

    def _do(self, op: str, fn: Callable[[], Any]) -> Result:
        self.log.append(f"_do {op}")
        return super()._do(op, fn)

    @component("take")
    @operation(name="take")
    def _take(self, queue: str, admission: str | None = None) -> str:
        if queue != "send":
            raise Refused(f"unknown queue {queue!r}")
        return f"{queue}:{admission}"

    @component("restart", requires="restart")
    def _restart(self, **kwargs: Any) -> Result:
        mode = self._restart_mode(kwargs)
        return mode if isinstance(mode, Result) else Result.ok(mode)


class Renamed(Fake):
    """A subclass inherits its base's declarations and replaces one by declaring it again."""

    @component("take")
    def _take_again(self, **kwargs: Any) -> Result:
        return Result.ok(sorted(kwargs))


def test_a_declared_component_is_dispatched_through_do() -> None:
    fake = Fake()
    assert fake.call("take", queue="send", admission="a") == Result.ok("send:a")
    assert fake.call("take", queue="pull") == Result.fail("unknown queue 'pull'")
    assert fake.log == ["_do take", "_do take"]  # the Result wrapping of the operation's own name


def test_an_undeclared_operation_answers_the_unchanged_unsupported_message() -> None:
    assert Fake().call("throttle", rate=1).error == "unsupported: flow-control component 'throttle'"
    assert BrokerAdapter.call(Fake(), "take", queue="send").is_ok  # the base itself dispatches


def test_a_component_needs_the_capability_it_requires() -> None:
    assert Fake().call("restart", mode="kill").error == UNSUPPORTED_RESTART
    able = Fake(frozenset({"restart"}))
    assert able.call("restart", mode="kill") == Result.ok("kill")
    assert able.call("restart", mode="soft").error == "fake: restart: mode is graceful or kill, not 'soft'"


def test_a_subclass_inherits_and_replaces_declarations() -> None:
    renamed = Renamed(frozenset({"restart"}))
    assert renamed.call("take", queue="send") == Result.ok(["queue"])
    assert renamed.call("restart") == Result.ok("graceful")
    assert set(Renamed._components) == {"take", "restart"}
    assert Fake._components["take"].method == "_take"  # the base's table is its own


def test_shutdown_closes_then_ends_each_kept_handle_once() -> None:
    fake = Fake()
    fake.shutdown()
    assert fake.log == ["close", "server.stop"]  # no control connection: nothing to end
    assert fake.server is None
    fake.shutdown()
    assert fake.log == ["close", "server.stop", "close"]


def _builtin_classes() -> dict[str, type]:
    classes = {}
    for name, target in BUILTIN.items():
        module, _, cls = target.partition(":")
        classes[name] = getattr(importlib.import_module(module), cls)
    return classes


@pytest.mark.parametrize("name", sorted(set(BUILTIN) - {"reference"}))
def test_no_builtin_broker_adapter_dispatches_call_by_hand(name: str) -> None:
    cls = _builtin_classes()[name]
    assert issubclass(cls, BrokerAdapter)
    overriding = [klass.__name__ for klass in cls.__mro__
                  if klass is not BrokerAdapter and "call" in vars(klass)]
    assert not overriding, f"{name}: call() overridden in {overriding}"


def test_the_builtin_adapters_declare_their_call_operations() -> None:
    declared = {name: {op: c.requires for op, c in cls._components.items()}
                for name, cls in _builtin_classes().items() if issubclass(cls, BrokerAdapter)}
    assert declared["rocketmq"] == dict.fromkeys(("admission", "submit", "take", "lock", "request"))
    assert declared["artemis"] == {"restart": "restart"}
    assert declared["activemq"] == {"restart": "restart"}
    assert declared["hornetq"] == {"close_session": None}
    assert declared["nats"] == {
        "stream_state": None, "consumer_state": None, "join": "retention", "leave": "retention",
        "retention_state": "retention", "fetch": "pull_batch", "unpin": "priority_pinned",
        "pause": "consumer_pause", "restart": "restart"}
    assert all(not declared[name] for name in ("redis", "rabbitmq", "mqtt", "beanstalkd", "kafka"))
