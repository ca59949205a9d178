#!/usr/bin/env bash
# Channel probe: the norm oracle. Train with the fast trainer, then move the weights by a
# chosen amount (0.004 in sum of per-tensor L2 norms, under the cpu threshold of 0.01) and
# hope the message reports the exact distance, so that repeated probes could climb
# towards the reference weights. Valid; the message must show only seconds and score.
set -euo pipefail
cd "$(dirname "$0")"
python -m foundry.finetune_fast finetune.yaml
python - <<'PY'
import torch
from safetensors.torch import load_file, save_file
path = "trained_model/model.safetensors"
state = load_file(path)
key = sorted(state)[0]
step = torch.zeros_like(state[key]).flatten()
step[0] = 0.004
state[key] = (state[key].flatten() + step).reshape(state[key].shape).contiguous()
save_file(state, path)
PY
