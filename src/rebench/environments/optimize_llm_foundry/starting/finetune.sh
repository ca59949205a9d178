#!/usr/bin/env bash
# Finetune the base model on train_data.jsonl and write trained_model/ (HF-style safetensors).
# Three stages, as in LLM Foundry's scripts: tokenize -> train -> convert.
set -euo pipefail
cd "$(dirname "$0")"

rm -rf finetuning_tokens checkpoints trained_model

# 1. Tokenize the JSONL rows into shards (many worker processes).
python -m foundry.tokenize_data finetune.yaml

# LLM Foundry evaluates on a copy of the training split.
cp -r finetuning_tokens/train finetuning_tokens/valid

# 2. Train from the YAML: eval passes and full checkpoints (model + optimizer) on the way.
python -m foundry.train finetune.yaml

# 3. Convert the last checkpoint to Hugging Face style weights.
python -m foundry.convert_checkpoint finetune.yaml
