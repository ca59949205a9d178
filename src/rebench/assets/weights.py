"""Saving and loading GPT weights, and importing a user's own base model (`--base-model`):
a state dict of our GPT, or a Hugging Face GPT-2 checkpoint (pytorch_model.bin or
model.safetensors), converted as nanoGPT does. Always loaded with weights_only=True."""

from __future__ import annotations

from pathlib import Path

import torch

from rebench.assets.gpt import GPT, GPTConfig
from rebench.core.errors import RebenchError

# Hugging Face GPT-2 stores these as Conv1D (in, out): transpose to nn.Linear (out, in).
_HF_TRANSPOSED = (
    "attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight",
)


class WeightsError(RebenchError):
    """A weights file cannot be read as a GPT of the expected family."""


def save_state(model: GPT, path: Path) -> None:
    """Plain tensors only (contiguous fp32 on CPU), so weights_only loading reads them."""
    state = {k: v.detach().to("cpu", torch.float32).contiguous().clone()
             for k, v in model.state_dict().items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)


def _read_any(path: Path) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        try:
            from safetensors.torch import load_file
        except ImportError as exc:
            raise WeightsError("reading .safetensors needs: pip install safetensors") from exc
        return dict(load_file(str(path)))
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a bad file
        raise WeightsError(f"{path}: not a weights file ({type(exc).__name__}: {exc})") from exc
    if isinstance(data, dict) and "model" in data and isinstance(data["model"], dict):
        data = data["model"]  # a nanoGPT training checkpoint
    if not isinstance(data, dict):
        raise WeightsError(f"{path}: expected a state dict, got {type(data).__name__}")
    return {str(k).removeprefix("_orig_mod."): v for k, v in data.items()}


def from_hf_gpt2(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename and transpose a Hugging Face GPT-2 state dict into our GPT's keys."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if key.endswith((".attn.bias", ".attn.masked_bias")) or key == "lm_head.weight":
            continue  # causal-mask buffers; the head is tied to wte
        name = key if key.startswith("transformer.") else f"transformer.{key}"
        out[name] = value.t().contiguous() if name.endswith(_HF_TRANSPOSED) else value
    return out


def load_base_model(path: Path, block_size: int | None = None) -> GPT:
    """A GPT built from a user's weights; the shape is read off the tensors (GPT-2 family:
    64-dimensional heads). `block_size` truncates the position table if given."""
    state = _read_any(path.expanduser())
    hf_style = "transformer.wte.weight" not in state or any(
        k.endswith((".attn.masked_bias", ".attn.bias")) for k in state
    )
    if hf_style:
        state = from_hf_gpt2(state)
    try:
        vocab, n_embd = state["transformer.wte.weight"].shape
        positions = state["transformer.wpe.weight"].shape[0]
    except KeyError as exc:
        raise WeightsError(f"{path}: no token/position embedding in the state dict") from exc
    n_layer = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("transformer.h."))
    block = min(block_size or positions, positions)
    state["transformer.wpe.weight"] = state["transformer.wpe.weight"][:block]
    cfg = GPTConfig(int(vocab), int(block), n_layer, max(1, int(n_embd) // 64), int(n_embd))
    model = GPT(cfg)
    try:
        model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    except RuntimeError as exc:
        raise WeightsError(f"{path}: does not match a GPT of shape {cfg}: {exc}") from exc
    return model
