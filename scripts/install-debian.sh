#!/usr/bin/env bash
# Install the Debian packages the project needs when they are missing: ActiveMQ Classic (the
# `activemq` adapter runs its own instance from /usr/share/activemq), Chromium (the HTML report
# test), the broker servers scripts/services.sh starts (RabbitMQ, Redis, NATS, Mosquitto) and
# beanstalkd (the `beanstalkd` adapter runs its own server from /usr/bin/beanstalkd), Maven and Java
# (the Maven Central brokers, fetched with `mvn dependency:copy`; Spark), and javac (the rocketmq
# adapter compiles its broker driver, adapters/rocketmq/driver/).
# Nothing is started here. Idempotent: a package whose file is present is left alone, and
# `apt-get update` runs only when an install needs it. Usage: bash scripts/install-debian.sh
set -euo pipefail

#: package -> a file that proves it is installed
PACKAGES=(
  "activemq:/usr/share/activemq/bin/activemq.jar"
  "chromium:/usr/bin/chromium"
  "rabbitmq-server:/usr/sbin/rabbitmq-server"
  "redis-server:/usr/bin/redis-server"
  "nats-server:/usr/sbin/nats-server"
  "mosquitto:/usr/sbin/mosquitto"
  "beanstalkd:/usr/bin/beanstalkd"
  "maven:/usr/bin/mvn"
  "openjdk-17-jre-headless:/usr/bin/java"
  "openjdk-17-jdk-headless:/usr/bin/javac"
)

missing=()
for entry in "${PACKAGES[@]}"; do
  package=${entry%%:*} proof=${entry#*:}
  if [ ! -e "$proof" ]; then missing+=("$package"); fi
done
if [ ${#missing[@]} -eq 0 ]; then echo "install-debian: every package present"; exit 0; fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-debian: ${missing[*]} missing and apt-get not available; install them by hand" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-debian: ${missing[*]} missing and not root (no sudo); as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
LOCK=(-o DPkg::Lock::Timeout=300)  # wait for a concurrent apt/dpkg instead of failing
apt() { $SUDO apt-get "${LOCK[@]}" "$@" </dev/null >/dev/null; }
known() { apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]'; }
for package in "${missing[@]}"; do
  if ! known "$package"; then echo "install-debian: updating the package lists"; apt update -qq; break; fi
done
echo "install-debian: installing ${missing[*]}"
if ! apt install -y -qq --no-install-recommends "${missing[@]}"; then
  echo "install-debian: install failed once (stale lists?); apt-get update and retry"
  apt update -qq
  apt install -y -qq --no-install-recommends "${missing[@]}"
fi
for entry in "${PACKAGES[@]}"; do
  package=${entry%%:*} proof=${entry#*:}
  if [ ! -e "$proof" ]; then echo "install-debian: $package installed but $proof is missing" >&2; exit 1; fi
done
echo "install-debian: done"
