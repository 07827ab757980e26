"""The broker rooms: every broker folder of adapters/ describes its broker once (adapters/rooms.py), and
the registry's built-ins, the coverage table's rows, the release lines and the test session's services
are what the rooms say; a room imports no broker client, and a new room is found without a list."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from mqconform import releases
from mqconform.adapters import registry
from mqconform.adapters.rooms import ROOT, BrokerRoom, Line, room, rooms, rooms_in
from mqconform.commands.spec import BUILTIN_TARGETS
from mqconform.reference_model.profiles import PROFILES

ADAPTERS = ROOT / "adapters"
NAMES = [r.name for r in rooms()]


def test_every_broker_folder_is_a_room() -> None:
    folders = sorted(p.name for p in ADAPTERS.iterdir() if (p / "adapter.py").is_file())
    assert folders and sorted(NAMES) == folders
    assert len(set(NAMES)) == len(NAMES)
    assert len({r.order for r in rooms()}) == len(NAMES)


def test_the_builtins_are_the_reference_and_the_rooms() -> None:
    assert list(registry.BUILTIN) == ["reference", *NAMES]
    assert registry.BUILTIN["reference"] == "mqconform.adapters.reference:ReferenceAdapter"
    for r in rooms():
        assert registry.resolve(r.name) == r.adapter


@pytest.mark.parametrize("name", NAMES)
def test_a_room_names_its_adapter_profile_and_docs(name: str) -> None:
    chosen = room(name)
    assert chosen is not None and chosen.name == name
    cls = registry.load_class(name)
    assert f"{cls.__module__}:{cls.__name__}".startswith(chosen.adapter.partition(":")[0])
    assert cls.__name__ == chosen.adapter.partition(":")[2]
    assert cls.name == name
    assert getattr(cls, "profile", chosen.profile) == chosen.profile
    assert chosen.profile in PROFILES
    assert (ROOT / chosen.docs).is_file()
    if chosen.releases is not None:
        assert chosen.releases.adapter == name


def test_an_unknown_name_has_no_room() -> None:
    assert room("no-such-broker") is None


def test_importing_the_rooms_imports_no_adapter_module() -> None:
    """A room's __init__ is light: finding the rooms loads no adapter class, so no broker client (only
    the rooms' own ``room`` modules, below a broker folder)."""
    clients = ("pika", "nats", "redis", "proton", "stomp", "paho", "greenstalk", "confluent_kafka")
    code = ("import sys\nfrom mqconform.adapters.rooms import rooms\nrooms()\n"
            "from mqconform.adapters import registry\nfrom mqconform import releases\n"
            "print(sorted(m for m in sys.modules if m.startswith('mqconform.adapters.')"
            f" and m.count('.') > 2 or m.partition('.')[0] in {clients!r}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['mqconform.adapters.artemis.room',", "'mqconform.adapters.kafka.room']"]


def test_the_coverage_rows_are_the_rooms_options_in_order() -> None:
    expected = [(r.name, dict(o)) for r in rooms() for o in r.coverage_options]
    assert list(BUILTIN_TARGETS) == expected
    assert ("rabbitmq", {"queue_type": "quorum"}) in BUILTIN_TARGETS
    assert [name for name, _ in BUILTIN_TARGETS][:3] == ["nats", "rabbitmq", "rabbitmq"]


def test_the_release_lines_are_the_rooms() -> None:
    assert {r.name: r.releases for r in rooms() if r.releases is not None} == releases.LINES
    assert set(releases.LINES) == {"nats", "redis", "artemis", "kafka"}
    assert all(isinstance(line, Line) for line in releases.LINES.values())
    without = next(r.name for r in rooms() if r.releases is None)
    with pytest.raises(releases.ReleaseError, match=f"no release line for adapter '{without}'"):
        releases.line(without)


def test_the_test_session_starts_the_rooms_services() -> None:
    conftest = importlib.import_module("tests.conftest")
    assert conftest.SERVICES == {5672: "rabbitmq", 6379: "redis", 4222: "nats", 1883: "mosquitto"}


def test_a_new_room_is_found_by_its_folder_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package with a ROOM is a room; one without, or private, is not; the order field orders them."""
    base = tmp_path / "fakeadapters"
    for name, body in {
        "zmq": 'ROOM = BrokerRoom(name="zmq", adapter="x.zmq:ZmqAdapter", profile="seeds", order=5)\n',
        "amq": 'ROOM = BrokerRoom(name="amq", adapter="x.amq:AmqAdapter", profile="seeds", order=7,\n'
               '                  coverage_options=({"a": 1}, {}))\n',
        "helpers": "VALUE = 1\n",
        "_private": 'ROOM = BrokerRoom(name="private", adapter="x:Y", profile="seeds", order=1)\n',
    }.items():
        (base / name).mkdir(parents=True)
        (base / name / "__init__.py").write_text("from mqconform.adapters.rooms import BrokerRoom\n" + body)
    (base / "__init__.py").write_text("")
    (base / "loose.py").write_text("ROOM = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = rooms_in("fakeadapters")
    assert [r.name for r in found] == ["zmq", "amq"]
    assert found[0].docs == "docs/adapters/zmq.md"
    assert [dict(o) for o in found[1].coverage_options] == [{"a": 1}, {}]
    assert found[0].coverage_options == BrokerRoom("q", "m:C", "p", 0).coverage_options
