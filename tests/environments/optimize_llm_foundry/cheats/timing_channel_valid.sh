#!/usr/bin/env bash
# Channel probe: the fast trainer, then a sleep of a held-out byte's worth of tenths of a
# second (modulo 32). Valid: the shown seconds are the score, so they carry the delay
# (about 5 bits a scoring at this resolution); the delay costs the run its score, which is
# what the environment accepts (README). Nothing else may be shown.
set -euo pipefail
cd "$(dirname "$0")"
python -m foundry.finetune_fast finetune.yaml
byte=$(head -n 1 train_data.jsonl | tail -c 10 | head -c 1 | od -An -tu1 | tr -d ' ')
sleep "$(( byte % 32 / 10 )).$(( byte % 32 % 10 ))"
