#!/usr/bin/env bash
# Sets up the lab on this machine, idempotently: the virtual environment at .venv/, the lab
# and the Python packages asked for, and the Toxiproxy server.
#
#   scripts/bootstrap.sh            what `lab run` needs on local processes (the first run)
#   scripts/bootstrap.sh --reports  also PySpark, DuckDB and matplotlib (`lab report`, campaigns' reports)
#   scripts/bootstrap.sh --docker   also the Docker SDK and testcontainers (`--backend docker`)
#   scripts/bootstrap.sh --hosts    also AsyncSSH (`--backend ssh`)
#   scripts/bootstrap.sh --tests    everything: the above, and pytest and the lab's dev tools
#
# Run it as often as you like; a second run only checks. A set of packages installed once stays
# installed: asking for less later removes nothing. Every package comes from the lock files in
# locks/ (exact versions, hash-checked: the bits CI passed with), made by scripts/lock.sh.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv"
toxiproxy_version="v2.12.0"

say() { printf 'bootstrap: %s\n' "$*" >&2; }
die() { printf 'bootstrap: error: %s\n' "$*" >&2; exit 2; }

extras=()
for arg in "$@"; do
  case "$arg" in
    --reports) extras+=(reports) ;;
    --docker) extras+=(docker) ;;
    --hosts) extras+=(hosts) ;;
    --tests|--all) extras+=(tests) ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option ${arg} (options: --reports, --docker, --hosts, --tests)" ;;
  esac
done

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || die "python3 not found; the lab needs Python >= 3.11"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || die "$("$python" --version 2>&1) is too old; the lab needs Python >= 3.11"

# The Toxiproxy server: one on PATH wins; otherwise build the pinned release, beside the
# Python packages' install (both mostly wait on downloads and compilers).
toxiproxy_build=""
gobin=""
cleanup() {
  [ -z "$toxiproxy_build" ] || kill "$toxiproxy_build" 2>/dev/null || true
  [ -z "$gobin" ] || rm -rf "$gobin"
}
trap cleanup EXIT
if ! command -v toxiproxy-server >/dev/null && [ ! -x "$venv/bin/toxiproxy-server" ]; then
  command -v go >/dev/null || die "toxiproxy-server is not on PATH and Go is missing to build it; install Go or put toxiproxy-server ${toxiproxy_version} on PATH"
  say "building toxiproxy-server ${toxiproxy_version} with go install, in the background"
  gobin="$(mktemp -d)"
  GOBIN="$gobin" go install \
    -ldflags "-X github.com/Shopify/toxiproxy/v2.Version=${toxiproxy_version}" \
    "github.com/Shopify/toxiproxy/v2/cmd/server@${toxiproxy_version}" \
    >"$gobin/build.log" 2>&1 &
  toxiproxy_build=$!
fi

if [ ! -x "$venv/bin/python" ]; then
  say "creating the virtual environment in .venv/"
  "$python" -m venv "$venv"
fi

# Reinstall only when the package metadata or the locks changed since the last install, or
# when a set not installed yet is asked for. The stamp holds their digest and the sets installed.
stamp="$venv/.lab-installed"
digest="$(cat pyproject.toml locks/*.txt | sha256sum | cut -d' ' -f1)"
had_digest=""
had_extras=""
if [ -f "$stamp" ]; then
  had_digest="$(sed -n 1p "$stamp")"
  had_extras="$(sed -n 2p "$stamp")"
fi
want_extras="$had_extras"
[ "$had_digest" = "$digest" ] || want_extras=""  # new metadata: install what is asked, afresh
for extra in "${extras[@]+"${extras[@]}"}"; do
  case " $want_extras " in *" $extra "*) ;; *) want_extras="${want_extras:+$want_extras }$extra" ;; esac
done
for extra in $had_extras; do  # what was installed before stays installed
  [ "$extra" != dev ] || extra=tests  # the name --tests had before the locks
  case " $want_extras " in *" $extra "*) ;; *) want_extras="${want_extras:+$want_extras }$extra" ;; esac
done
if [ "$had_digest" != "$digest" ] || [ "$want_extras" != "$had_extras" ]; then
  locks=(-r locks/core.txt)
  for extra in $want_extras; do locks+=(-r "locks/$extra.txt"); done
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes)
  say "installing the lab${want_extras:+ with ${want_extras// /, }} into .venv/ from locks/ (Qpid Proton is built from source where no wheel fits: about a minute more)"
  # What builds need first (the lab's build backend, what Proton's sdist builds with), then
  # the locked packages built without isolation, so nothing unpinned is fetched; then the lab
  # itself, editable, with no dependency of its own left to resolve.
  "${pip[@]}" -r locks/build.txt
  "${pip[@]}" --no-build-isolation "${locks[@]}"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation -e .
  printf '%s\n%s\n' "$digest" "$want_extras" > "$stamp"
fi

if [ -n "$toxiproxy_build" ]; then
  if ! wait "$toxiproxy_build"; then
    tail -n 20 "$gobin/build.log" >&2
    toxiproxy_build=""
    die "go install of toxiproxy-server ${toxiproxy_version} failed (above)"
  fi
  toxiproxy_build=""
  install -m 0755 "$gobin/server" "$venv/bin/toxiproxy-server.tmp"
  mv "$venv/bin/toxiproxy-server.tmp" "$venv/bin/toxiproxy-server"
fi

say "ready: .venv/bin/lab"
