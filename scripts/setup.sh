#!/usr/bin/env bash
# Set up a development environment in ./.venv: the package (editable) with every extra.
# Idempotent; safe to run again. Usage: bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip 2>/dev/null || true
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[all]'
echo "setup: .venv ready ($(.venv/bin/python --version))"
