#!/usr/bin/env bash
# Install ActiveMQ Classic from Debian if it is missing (the `activemq` adapter runs its own
# instance from /usr/share/activemq; nothing is started here). Idempotent: does nothing when
# /usr/share/activemq/bin/activemq.jar exists, runs `apt-get update` only when the install needs
# it. Usage: bash scripts/install-activemq.sh
set -euo pipefail
JAR=/usr/share/activemq/bin/activemq.jar
if [ -f "$JAR" ]; then
  echo "install-activemq: present ($JAR)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-activemq: $JAR missing and apt-get not available; install ActiveMQ Classic 5.17 by hand" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-activemq: $JAR missing and not root (no sudo); run as root: apt-get install activemq" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
LOCK=(-o DPkg::Lock::Timeout=300)  # wait for a concurrent apt/dpkg instead of failing
has_candidate() { apt-cache policy activemq 2>/dev/null | grep -q 'Candidate: [0-9]'; }
if ! has_candidate; then
  echo "install-activemq: no package list knows activemq; running apt-get update"
  $SUDO apt-get "${LOCK[@]}" update -qq </dev/null >/dev/null
fi
if ! $SUDO apt-get "${LOCK[@]}" install -y -qq --no-install-recommends activemq </dev/null >/dev/null; then
  echo "install-activemq: install failed once (stale lists?); apt-get update and retry"
  $SUDO apt-get "${LOCK[@]}" update -qq </dev/null >/dev/null
  $SUDO apt-get "${LOCK[@]}" install -y -qq --no-install-recommends activemq </dev/null >/dev/null
fi
if [ ! -f "$JAR" ]; then
  echo "install-activemq: apt-get finished but $JAR is still missing" >&2
  exit 1
fi
echo "install-activemq: installed ($(dpkg-query -W -f='${Version}' activemq 2>/dev/null || echo unknown))"
