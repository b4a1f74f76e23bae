#!/usr/bin/env bash
# Tries the newest versions pyproject.toml's ranges allow, ignoring the locks: installs them
# into a virtual environment of its own (.venv-newest/), says which packages differ from
# locks/tests.txt, and runs the fast suite (no processes, containers, Spark, JVMs, browsers)
# with them. Exit status: the suite's. The nightly workflow runs it, so a release that breaks
# the lab shows as one red job naming the packages that changed, before a lock takes it.
#
#   scripts/try-newest.sh [PYTEST ARGS…]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv-newest"
python="${PYTHON:-python3}"

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --upgrade --upgrade-strategy eager -e '.[dev]'

drift="$("$venv/bin/python" scripts/lock_drift.py locks/tests.txt)"
printf 'the newest versions allowed, against locks/tests.txt:\n%s\n' "$drift"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  printf '### Newest versions against the lock\n```\n%s\n```\n' "$drift" >> "$GITHUB_STEP_SUMMARY"
fi

fast="not processes and not docker and not spark and not brokerj and not artemis"
fast="$fast and not allure and not docs and not actionlint and not hosts"
status=0
"$venv/bin/pytest" -m "$fast" -n auto -q "$@" || status=$?
if [ "$status" -ne 0 ]; then
  changed="$(printf '%s\n' "$drift" | sed '$d' | paste -sd ',' - | sed 's/,/, /g')"
  message="the fast suite fails with the newest versions the ranges allow; changed from the lock: ${changed:-nothing}"
  if [ -n "${GITHUB_ACTIONS:-}" ]; then echo "::error::$message"; else echo "try-newest: $message" >&2; fi
fi
exit "$status"
