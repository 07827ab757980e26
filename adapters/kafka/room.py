"""The `kafka` broker's room (:mod:`mqconform.adapters.rooms`) and its releases for the matrix: the jars
of Maven Central's ``org.apache.kafka:kafka_2.13`` (a runtime classpath). Imports nothing of the adapter
(:mod:`mqconform.releases` reads it)."""

from __future__ import annotations

from ..rooms import CLASSPATH_KIND, BrokerRoom, Line, Release

#: the Apache Kafka 4.x releases (KRaft only, share groups: KIP-932) Maven Central serves, oldest first
KAFKA_RELEASES = ("4.0.0", "4.0.1", "4.0.2", "4.1.0", "4.1.1", "4.1.2", "4.2.0", "4.2.1", "4.2.2", "4.3.0",
                  "4.3.1", "4.4.0")

RELEASES = Line("kafka", table=tuple(
    Release("kafka", v, f"kafka_2.13-{v}.jar", maven=f"org.apache.kafka:kafka_2.13:jar:{CLASSPATH_KIND}")
    for v in KAFKA_RELEASES), since="4.2.0",
    since_why="4.0 has share groups only as an early-access preview, without the share.version feature; "
              "on 4.1 (preview) a new share group served its first member nothing within 25 s in 2 of 4 "
              "tries with confluent-kafka 2.16.1")
ROOM = BrokerRoom(name="kafka", adapter="mqconform.adapters.kafka:KafkaShareAdapter", profile="kafka-share",
                  order=90, releases=RELEASES)
