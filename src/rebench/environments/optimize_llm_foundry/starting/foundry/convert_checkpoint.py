"""Stage 3: convert the last training checkpoint to Hugging Face style weights:
trained_model/model.safetensors (fp32) and config.json."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

from foundry.config import FinetuneConfig, config_from_argv


def convert(cfg: FinetuneConfig) -> Path:
    folder = Path(cfg.save_folder)
    name = (folder / "latest-rank0.txt").read_text().strip()
    checkpoint = torch.load(folder / name, map_location="cpu", weights_only=True)
    weights = {k: v.to(torch.float32).contiguous()
               for k, v in checkpoint["state"]["model"].items()}
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out / "model.safetensors"))
    shutil.copyfile(Path(cfg.base_model) / "config.json", out / "config.json")
    return out / "model.safetensors"


if __name__ == "__main__":
    print(f"wrote {convert(config_from_argv())}", flush=True)
