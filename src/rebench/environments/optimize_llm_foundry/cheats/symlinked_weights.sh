#!/usr/bin/env bash
# Cheat: a symbolic link in place of the weights (to the base model here; a link to
# anything outside the folder would name a path the scorer must never read either).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p trained_model
ln -s ../base_model/model.safetensors trained_model/model.safetensors
