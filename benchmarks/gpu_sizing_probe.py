"""Cost of the parts of two gpu profiles on one GPU, before committing to their sizes.

    PYTHONPATH=src python benchmarks/gpu_sizing_probe.py --out probe.json

optimize_llm_foundry: for candidate base-model shapes and sequence lengths, the seconds of
one optimizer step of the finetuning recipe (16 rows in microbatches of 4, bf16 autocast,
fp32 master weights, AdamW), of an evaluation pass's forward per row, of a full checkpoint
(model and AdamW state, torch.save to local disk) and of loading it back, and of the fp32
safetensors save. From these the starting pipeline (evals, checkpoints, conversion) and
the reference (training and one save) are estimated per shape.

small_scaling_law: seconds per training step of the fixed 4-layer GPT (block 1024, batch
64, GPT-2 vocabulary) at several widths, and the FLOP budget a 10-minute target run would
have at each width (FLOPs = n_layer * n_embd^2 * 12 * 6 * block * batch * max_iters).

Synthetic tokens throughout: the costs do not depend on the data.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from rebench.assets.gpt import GPT, GPTConfig
from rebench.assets.train import TrainConfig, make_optimizer


def _sync() -> None:
    torch.cuda.synchronize()


def _release() -> None:
    """Give the last measurement's memory back (its model and optimizer are out of scope)."""
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def _timed(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    """Median seconds of fn() after one warm-up call."""
    fn()
    _sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _sync()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def foundry_shape(n_layer: int, n_embd: int, n_head: int, seq: int, vocab: int,
                  rows: int, folder: Path) -> dict[str, float]:
    """Seconds of the finetuning pipeline's parts for one base-model shape."""
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=vocab, block_size=seq, n_layer=n_layer, n_head=n_head,
                          n_embd=n_embd)).to(dev)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.95), eps=1e-8)
    batch, micro = 16, 4
    x = torch.randint(0, vocab, (batch, seq), device=dev)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        for i in range(0, batch, micro):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits, _ = model(x[i:i + micro])
            loss = F.cross_entropy(logits.float().view(-1, vocab), x[i:i + micro].view(-1))
            (loss / batch).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    step_s = _timed(step, 4)

    @torch.no_grad()
    def eval_batch() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            model(x[:micro])

    eval_row_s = _timed(eval_batch, 6) / micro
    path = folder / "ckpt.pt"
    start = time.perf_counter()
    state = {"model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
             "optimizer": opt.state_dict()}
    torch.save({"state": state}, path)
    os.sync()
    ckpt_save_s = time.perf_counter() - start
    ckpt_bytes = path.stat().st_size
    del state
    start = time.perf_counter()
    loaded = torch.load(path, map_location="cpu", weights_only=False)
    ckpt_load_s = time.perf_counter() - start
    del loaded
    path.unlink()
    start = time.perf_counter()
    weights = {k: v.detach().to("cpu", torch.float32).contiguous()
               for k, v in model.state_dict().items()}
    save_file(weights, str(folder / "model.safetensors"))
    os.sync()
    st_save_s = time.perf_counter() - start
    (folder / "model.safetensors").unlink()
    steps = rows // batch
    result = {
        "n_layer": n_layer, "n_embd": n_embd, "seq": seq, "params_m": round(params / 1e6, 1),
        "step_s": round(step_s, 4), "eval_row_s": round(eval_row_s, 5),
        "ckpt_gb": round(ckpt_bytes / 1e9, 2), "ckpt_save_s": round(ckpt_save_s, 2),
        "ckpt_load_s": round(ckpt_load_s, 2), "safetensors_save_s": round(st_save_s, 2),
        "train_s": round(steps * step_s, 1), "eval_pass_s": round(rows * eval_row_s, 2),
        "peak_mem_gb": round(torch.cuda.max_memory_allocated() / 1e9, 1),
    }
    print(json.dumps(result), flush=True)
    return result


def scaling_width(n_embd: int, steps: int) -> dict[str, float]:
    """Seconds per step of small_scaling_law's gpu recipe at one width."""
    dev = torch.device("cuda")
    n_layer, block, batch, vocab = 4, 1024, 64, 50257
    model = GPT(GPTConfig(vocab_size=vocab, block_size=block, n_layer=n_layer,
                          n_head=n_embd // 64, n_embd=n_embd)).to(dev)
    cfg = TrainConfig(steps=steps, batch_size=batch, lr=1e-3, min_lr=1e-4, warmup_steps=1,
                      bf16=True)
    opt = make_optimizer(model.named_parameters(), cfg)
    x = torch.randint(0, vocab, (batch, block + 1), device=dev)

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            _, loss = model(x[:, :-1], x[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[union-attr]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        float(loss.item())  # type: ignore[union-attr]

    for _ in range(3):
        step()
    _sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    _sync()
    per_step = (time.perf_counter() - start) / steps
    flops_per_iter = n_layer * n_embd * n_embd * 12 * 6 * block * batch
    result = {"n_embd": n_embd, "step_s": round(per_step, 5),
              "flops_per_iter": flops_per_iter,
              "budget_10min": float(f"{600 / per_step * flops_per_iter:.3g}")}
    print(json.dumps(result), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--skip-foundry", action="store_true")
    args = parser.parse_args()
    out: dict[str, object] = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    scaling = []
    for width in (256, 512, 768, 1024, 1536):
        scaling.append(scaling_width(width, 20))
        _release()
    out["small_scaling_law"] = scaling
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))
    if not args.skip_foundry:
        shapes = [(24, 1536, 16, 512), (24, 1536, 16, 1024), (24, 2048, 16, 512),
                  (24, 2048, 16, 1024), (16, 2048, 16, 2048)]
        with tempfile.TemporaryDirectory(dir=os.environ.get("PROBE_DIR")) as tmp:
            foundry = []
            for layers, width, heads, seq in shapes:
                foundry.append(foundry_shape(layers, width, heads, seq, 8192, 1000, Path(tmp)))
                _release()
                if args.out:
                    out["optimize_llm_foundry"] = foundry
                    args.out.write_text(json.dumps(out, indent=1))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
