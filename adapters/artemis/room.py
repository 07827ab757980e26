"""The `artemis` broker's room (:mod:`mqconform.adapters.rooms`) and its releases for the matrix: Maven
Central's ``org.apache.activemq:apache-artemis:<v>:tar.gz:bin`` (from 2.50.0 ``org.apache.artemis``: the
project's new group), fetched with ``mvn dependency:copy`` and unpacked; the "binary" is the
distribution's ``bin/artemis``. Imports nothing of the adapter (:mod:`mqconform.releases` reads it)."""

from __future__ import annotations

import re

from ..rooms import BrokerRoom, Line, Release

#: the ActiveMQ Artemis releases Maven Central serves as a bin distribution (tar.gz), oldest first
ARTEMIS_RELEASES = ("2.18.0", "2.19.0", "2.21.0", "2.26.0", "2.27.1", "2.28.0", "2.31.2", "2.35.0",
                    "2.37.0", "2.39.0", "2.40.0", "2.56.0")
#: the first Artemis release published under the Maven group ``org.apache.artemis`` (the project's
#: own top-level group since it left ActiveMQ; the old group holds only relocation poms from then on)
ARTEMIS_NEW_GROUP_SINCE = "2.50.0"


def artemis_group(version: str) -> str:
    """The Maven group of Artemis release `version`'s distribution."""
    def numbers(v: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", v)[:3])
    new = numbers(version) >= numbers(ARTEMIS_NEW_GROUP_SINCE)
    return "org.apache.artemis" if new else "org.apache.activemq"


RELEASES = Line("artemis", table=tuple(
    Release("artemis", v, "bin/artemis", maven=f"{artemis_group(v)}:apache-artemis:tar.gz:bin")
    for v in ARTEMIS_RELEASES))
ROOM = BrokerRoom(name="artemis", adapter="mqconform.adapters.artemis:ArtemisAdapter", profile="artemis",
                  order=70, releases=RELEASES)
