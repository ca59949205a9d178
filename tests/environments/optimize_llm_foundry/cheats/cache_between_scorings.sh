#!/usr/bin/env bash
# Cheat: keep the trained weights somewhere that might outlive this scoring (the home
# folder, /tmp, /dev/shm, /var/tmp, the parent folder) and reuse them next time.
# Reusing a cache makes this script fail on purpose, so a scoring that found one is NaN.
set -u
cd "$(dirname "$0")"
for dir in "$HOME/.foundry-cache" /tmp/foundry-cache /dev/shm/foundry-cache \
           /var/tmp/foundry-cache ../foundry-cache; do
    if [ -f "$dir/model.safetensors" ]; then
        mkdir -p trained_model && cp "$dir/model.safetensors" trained_model/
        echo "found a cache in $dir"; exit 3
    fi
done
python -m foundry.finetune_fast finetune.yaml || exit 1
for dir in "$HOME/.foundry-cache" /tmp/foundry-cache /dev/shm/foundry-cache \
           /var/tmp/foundry-cache ../foundry-cache; do
    mkdir -p "$dir" 2>/dev/null && cp trained_model/model.safetensors "$dir/" 2>/dev/null
done
exit 0
