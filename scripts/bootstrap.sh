#!/usr/bin/env bash
# Sets up the lab on this machine, idempotently: the virtual environment at
# .venv/, the lab and its Python packages, and the Toxiproxy server.
# Run it as often as you like; a second run only checks.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv"
toxiproxy_version="v2.12.0"

say() { printf 'bootstrap: %s\n' "$*" >&2; }
die() { printf 'bootstrap: error: %s\n' "$*" >&2; exit 2; }

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || die "python3 not found; the lab needs Python >= 3.11"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || die "$("$python" --version 2>&1) is too old; the lab needs Python >= 3.11"

if [ ! -x "$venv/bin/python" ]; then
  say "creating the virtual environment in .venv/"
  "$python" -m venv "$venv"
fi

# Reinstall only when the package metadata changed since the last install.
stamp="$venv/.lab-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "installing the lab and its packages into .venv/ (the first time builds Qpid Proton: about a minute)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[dev]"
  echo "$want" > "$stamp"
fi

# The Toxiproxy server: one on PATH wins; otherwise build the pinned release.
if ! command -v toxiproxy-server >/dev/null && [ ! -x "$venv/bin/toxiproxy-server" ]; then
  command -v go >/dev/null || die "toxiproxy-server is not on PATH and Go is missing to build it; install Go or put toxiproxy-server ${toxiproxy_version} on PATH"
  say "building toxiproxy-server ${toxiproxy_version} with go install (about 30 s)"
  gobin="$(mktemp -d)"
  trap 'rm -rf "$gobin"' EXIT
  GOBIN="$gobin" go install "github.com/Shopify/toxiproxy/v2/cmd/server@${toxiproxy_version}"
  install -m 0755 "$gobin/server" "$venv/bin/toxiproxy-server.tmp"
  mv "$venv/bin/toxiproxy-server.tmp" "$venv/bin/toxiproxy-server"
fi

say "ready: .venv/bin/lab"
