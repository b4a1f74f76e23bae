#!/usr/bin/env bash
# Regenerates the lock files in locks/ from pyproject.toml's ranges, with hashes, by uv:
#
#   scripts/lock.sh                      keep every pinned version that still fits the ranges;
#                                        pin what is new (after editing pyproject.toml)
#   scripts/lock.sh --upgrade            the newest versions the ranges allow, for everything
#   scripts/lock.sh --upgrade-package P  the newest allowed P (repeatable), the rest kept
#
# One resolution for all sets (tests.txt: every extra and the dev tools) decides each
# package's version; every other set is resolved under it as a constraint, so the sets agree
# and the bootstrap can install several of them together. build.txt holds what building the
# lab and Qpid Proton (from its sdist) needs, installed first so that builds fetch nothing.
# After a change: scripts/bootstrap.sh --tests, then the whole suite (docs/contributing.md).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf 'lock: %s\n' "$*" >&2; }
die() { printf 'lock: error: %s\n' "$*" >&2; exit 2; }

upgrade=()
while [ $# -gt 0 ]; do
  case "$1" in
    --upgrade) upgrade+=(--upgrade) ;;
    --upgrade-package)
      [ $# -ge 2 ] || die "--upgrade-package needs a package name"
      upgrade+=(--upgrade-package "$2"); shift ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (options: --upgrade, --upgrade-package NAME)" ;;
  esac
  shift
done

uv="${UV:-$root/.venv/bin/uv}"
[ -x "$uv" ] || uv="$(command -v uv || true)"
[ -n "$uv" ] || die "uv not found: run scripts/bootstrap.sh --tests (it installs uv) or put uv on PATH"

# The oldest Python the lab supports; the locks are universal (markers for newer ones).
python_version="$(sed -n 's/^requires-python = ">=\([0-9.]*\)"$/\1/p' pyproject.toml)"
[ -n "$python_version" ] || die "no requires-python = \">=X.Y\" line in pyproject.toml"

mkdir -p locks
compile() {  # compile OUT [uv pip compile arguments…]
  local out="$1"; shift
  "$uv" pip compile --quiet --generate-hashes --universal --python-version "$python_version" \
    --custom-compile-command "scripts/lock.sh" --annotation-style line "$@" -o "locks/$out"
  say "locks/$out: $(grep -c '==' "locks/$out") packages"
}

compile tests.txt pyproject.toml --extra dev "${upgrade[@]+"${upgrade[@]}"}"
compile core.txt pyproject.toml -c locks/tests.txt
for extra in reports docker hosts; do
  compile "$extra.txt" pyproject.toml --extra "$extra" -c locks/tests.txt
done
compile build.txt locks/build.in -c locks/tests.txt "${upgrade[@]+"${upgrade[@]}"}"
say "done: review with git diff locks/, then run scripts/bootstrap.sh --tests and the suite"
