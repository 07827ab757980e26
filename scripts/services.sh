#!/usr/bin/env bash
# Start the machine's broker services if they are down (loopback only). Idempotent.
# Needs root (or sudo) only to start a service that is down.
# Usage: bash scripts/services.sh
set -uo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; fi

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && exec 3>&- 3<&-; }
wait_port() { for _ in $(seq 1 "${2:-60}"); do port_open "$1" && return 0; sleep 0.5; done; return 1; }

start() {  # name port command...
  local name=$1 port=$2; shift 2
  if port_open "$port"; then echo "services: $name up on $port"; return 0; fi
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "services: $name is down and $1 is not installed (bash scripts/install-debian.sh)" >&2; return 1
  fi
  echo "services: starting $name"
  $SUDO "$@" </dev/null >/dev/null 2>&1 || true
  if wait_port "$port" 90; then echo "services: $name up on $port"; return 0; fi
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    echo "services: $name did not start on $port (not root, no sudo): as root, bash scripts/services.sh" >&2
  else
    echo "services: $name did not start on $port" >&2
  fi
  return 1
}

# RabbitMQ, its distribution port and epmd on loopback only
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
status=0
start rabbitmq 5672 rabbitmq-server -detached || status=1
start redis 6379 redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || status=1
start nats 4222 start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
  -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server || status=1
start mosquitto 1883 mosquitto -d -c "$PWD/scripts/mosquitto.conf" || status=1
exit $status
