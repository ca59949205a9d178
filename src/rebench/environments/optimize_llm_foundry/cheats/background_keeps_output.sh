#!/usr/bin/env bash
# Cheat: return at once and let a detached process train and write trained_model/ later,
# keeping the script's output open, so that a scorer waiting for the output to close (and
# not for the script) would let it finish while the clock stood at a fraction of a second.
cd "$(dirname "$0")"
setsid nohup python -m foundry.finetune_fast finetune.yaml < /dev/null &
disown
echo "returned"
exit 0
