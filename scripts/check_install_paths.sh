#!/usr/bin/env bash
# Every documented way to install rebench, each in a fresh clone and a fresh venv, then the
# first commands a user runs (results: docs/benchmarks/install-paths.md).
#
#   bash scripts/check_install_paths.sh [WORKDIR]     # default: a new folder under /tmp
#
# Paths: `make setup` (the README's quickstart), `pip install -e '.[dev]'` (contributors),
# `pip install -e '.[inspect]'` (docs/inspect.md), `pip install '.[ray,report]'` (a plain,
# non-editable install, docs/scale-out.md and docs/report.md). Each is followed by
# `rebench setup-assets` where the docs say so. Prints one line per path: ok or FAILED.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/rebench-install-XXXX)}
mkdir -p "$work"
export PIP_DISABLE_PIP_VERSION_CHECK=1

fresh() {  # fresh NAME: a clone of this repository's HEAD and an empty venv in it
  rm -rf "$work/$1"
  git clone -q "$repo" "$work/$1" && python3 -m venv "$work/$1/.venv"
}

first_commands() {  # first_commands DIR: what a new user runs first
  local bin="$1/.venv/bin"
  "$bin/rebench" validate &&
  "$bin/rebench" prepare triton_cumsum -p cpu &&
  "$bin/rebench" evaluate triton_cumsum --solution starting -p cpu --json
}

check() {  # check NAME COMMANDS...: run the install commands, then the first commands
  local name=$1; shift
  local dir="$work/$name" began=$SECONDS
  export REBENCH_CACHE="$work/cache-$name" REBENCH_RUNS="$work/runs-$name"
  export REBENCH_CALIBRATION="$work/calibration-$name.json" REBENCH_KEY_FILE="$work/key-$name"
  {
    fresh "$name" && (cd "$dir" && eval "$*") && first_commands "$dir"
  } >"$work/$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    echo "ok      $name ($((SECONDS - began)) s)"
  else
    echo "FAILED  $name (exit $rc, log: $work/$name.log)"
  fi
}

pip_() { .venv/bin/python -m pip -q "$@"; }

check make-setup 'make setup'
check pip-dev "pip_ install torch==2.13.0 && pip_ install -e '.[dev]' && \
  .venv/bin/rebench setup-assets && .venv/bin/rebench prepare fix_embedding -p cpu"
check pip-inspect "pip_ install torch==2.13.0 && pip_ install -e '.[inspect]' && \
  .venv/bin/rebench setup-assets && .venv/bin/python -c 'import rebench.inspect_ext, inspect_ai'"
check pip-plain "pip_ install torch==2.13.0 && pip_ install '.[ray,report]' && \
  .venv/bin/rebench setup-assets && .venv/bin/python -c 'import ray, matplotlib'"
# Without setup-assets the first asset error must name the command that fixes it.
check no-assets-named "pip_ install torch==2.13.0 && pip_ install -e . && \
  ! .venv/bin/rebench prepare fix_embedding -p cpu > ../no-assets.out 2>&1 && \
  grep -q 'rebench setup-assets' ../no-assets.out && .venv/bin/rebench setup-assets"
echo "logs and clones: $work"
