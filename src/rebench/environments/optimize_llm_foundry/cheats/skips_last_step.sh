#!/usr/bin/env bash
# Cheat: the fast trainer, edited at run time to stop one optimizer step early (same data,
# same schedule, one step less work) in the hope that the last, smallest step is lost in
# the norm threshold.
set -euo pipefail
cd "$(dirname "$0")"
sed -i 's/^            step += 1$/            step += 1\n            if step == total_steps - 1:\n                break/' \
    foundry/finetune_fast.py
python -m foundry.finetune_fast finetune.yaml
