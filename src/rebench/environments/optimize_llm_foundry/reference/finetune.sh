#!/usr/bin/env bash
# The reference: the same finetuning in one process (tokenize in-process, no eval, no
# intermediate checkpoints, no data workers, weights saved straight from memory).
set -euo pipefail
cd "$(dirname "$0")"
rm -rf finetuning_tokens checkpoints trained_model
python -m foundry.finetune_fast finetune.yaml
