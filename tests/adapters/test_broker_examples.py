"""The cases transcribed from the brokers' own test suites (spec/examples/brokers/) hold on
the model under the file's profile and on the real broker the profile names. No skips: a missing
broker is a failure (RabbitMQ on 127.0.0.1:5672, Redis on 127.0.0.1:6379, JetStream from the embedded
nats-server, ActiveMQ Classic and beanstalkd the adapter's own server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqconform.adapters.activemq import ActiveMQAdapter
from mqconform.adapters.beanstalkd import BeanstalkdAdapter
from mqconform.adapters.contract import Adapter
from mqconform.adapters.nats import NatsAdapter
from mqconform.adapters.rabbitmq import RabbitMQAdapter
from mqconform.adapters.redis import RedisAdapter
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.scenario.loader import load
from mqconform.scenario.runner import run_scenario, run_until_judged

EXAMPLES = sorted((Path(__file__).parents[2] / "spec" / "examples" / "brokers").glob("*.yaml"))
SERVICE_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"


def _broker(profile: str) -> Adapter:
    if profile == "rabbitmq-classic":
        return RabbitMQAdapter(url=SERVICE_URL)
    if profile == "rabbitmq-quorum":
        return RabbitMQAdapter(url=SERVICE_URL, queue_type="quorum")
    if profile == "redis-streams":
        return RedisAdapter()
    if profile == "activemq-classic":
        return ActiveMQAdapter()  # its own broker
    if profile == "beanstalkd":
        return BeanstalkdAdapter()  # its own server
    assert profile == "jetstream", f"no broker for profile {profile}"
    return NatsAdapter()


def test_at_least_ten_cases_name_their_source_test() -> None:
    assert len(EXAMPLES) >= 10
    for path in EXAMPLES:
        head = path.read_text().split("\n", 1)[0]
        # Erlang common test SUITEs, Go _test.go files, Redis' Tcl tests, ActiveMQ's JUnit tests,
        # beanstalkd's testserv.c
        assert head.startswith("# ") and any(s in head for s in ("SUITE", "_test.go", ".tcl", "Test.java",
                                                                 "testserv.c")), \
            path.name


@pytest.mark.rules("RING-3", "RING-22", "RING-23", "RING-24", "RING-26", "RING-27", "RING-28",
                   "REDELIVERY-24", "REDELIVERY-25", "REDELIVERY-26", "REDELIVERY-20", "DELIVERY-22",
                   "REDELIVERY-27", "REDELIVERY-28", "REDELIVERY-21", "REDELIVERY-32", "REDELIVERY-33",
                   "REDELIVERY-34", "RING-29", "EXPIRY-1", "EXPIRY-2", "EXPIRY-5",
                   "EXPIRY-7", "DELIVERY-25", "DELIVERY-26",
                   "DELIVERY-27", "DELIVERY-28", "DELIVERY-29", "DELIVERY-30", "DELIVERY-32", "DELIVERY-33",
                   "DELIVERY-36", "DELIVERY-37", "REDELIVERY-35", "REDELIVERY-36")
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_case_holds_on_the_model_and_on_its_broker(path: Path, namespace: str) -> None:
    scenario = load(path)
    assert scenario.profile is not None
    model = run_scenario(scenario, ReferenceAdapter(options=scenario.model_options()), strict=True)
    assert model.verdict == "pass", model.verdict_line()
    broker = _broker(scenario.profile)
    try:
        outcome = run_until_judged(scenario, broker, strict=True, namespace=namespace)
    finally:
        getattr(broker, "shutdown", broker.close)()
    assert outcome.verdict == "pass", outcome.verdict_line()
    assert outcome.held == model.held and not outcome.not_applicable
