#!/usr/bin/env bash
# The whole set-up of a fresh machine, idempotent (safe to run again):
#   1. ./.venv with the package (editable) and every extra, and the project's modules compiled to
#      bytecode (__pycache__/, ignored by git): every process a run or the tests start (workers, parts,
#      Spark tasks, CLI tests) then imports them without compiling them again, which it would do each
#      time where PYTHONDONTWRITEBYTECODE is set (about 0.5 CPU-s a process here);
#   2. the Debian packages the tests need when missing (scripts/install-debian.sh: ActiveMQ Classic,
#      Chromium, and the broker servers);
#   3. the broker services started when down (scripts/services.sh: RabbitMQ, Redis, NATS, Mosquitto);
#   4. the Apache ActiveMQ Artemis release the `artemis` adapter runs by default (and the current one,
#      2.56.0, that the tests start beside it), fetched through Maven
#      into the release cache ($MQCONFORM_CACHE, default ~/.cache/mqconform/servers/) when not there yet,
#      and the HornetQ 2.4 jars the `hornetq` adapter runs (servers/hornetq/<version>/lib) the same way;
#      likewise the Apache Kafka release (its jars) the `kafka` adapter runs by default,
#      and the Apache RocketMQ jars of the `rocketmq` adapter (namesrv, broker, client with dependencies).
# Steps 2 and 3 need root (or sudo) only when something is missing or down; otherwise they only check.
# Usage: bash scripts/setup.sh            (MQCONFORM_SETUP=venv: only step 1)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
started=$SECONDS
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip 2>/dev/null || true
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[all]'
.venv/bin/python -m compileall -q mqconform reference_model adapters reports spec >/dev/null
echo "setup: .venv ready ($(.venv/bin/python --version))"
if [ "${MQCONFORM_SETUP:-all}" = "venv" ]; then exit 0; fi
bash scripts/install-debian.sh
bash scripts/services.sh
.venv/bin/python -m mqconform.adapters.artemis.server --fetch >/dev/null
echo "setup: artemis $(.venv/bin/python -c 'from mqconform.adapters.artemis.server import DEFAULT_VERSION as v; print(v)') cached"
# the current release too, which the tests start beside the default (published under org.apache.artemis)
.venv/bin/python -m mqconform.adapters.artemis.server --fetch --version 2.56.0 >/dev/null
echo "setup: artemis 2.56.0 cached"
.venv/bin/python -m mqconform.adapters.hornetq.server --fetch >/dev/null
echo "setup: hornetq $(.venv/bin/python -c 'from mqconform.adapters.hornetq.server import DEFAULT_VERSION as v; print(v)') cached"
.venv/bin/python -m mqconform.adapters.kafka.server --fetch >/dev/null
echo "setup: kafka $(.venv/bin/python -c 'from mqconform.adapters.kafka.server import DEFAULT_VERSION as v; print(v)') cached"
.venv/bin/python -m mqconform.adapters.rocketmq.server --fetch >/dev/null
echo "setup: rocketmq $(.venv/bin/python -c 'from mqconform.adapters.rocketmq.server import DEFAULT_VERSION as v; print(v)') cached"
echo "setup: done in $((SECONDS - started)) s"
