"""How fast one training step of small_scaling_law's cpu model is with 1 and with 2 torch
threads: the shared GPT (rebench.assets.gpt) at the cpu profile's shape (4 layers, block 64,
batch 8, head size 8, 2048-token vocabulary) and the widths its prepare trains at, through
the shared training loop (rebench.assets.train) on random tokens.

    python benchmarks/train_step_threads.py --cores 0,1 --steps 200

Each (width, threads) pair runs in a fresh process pinned to --cores (Linux), so a machine
with more cores can stand in for a 2-core one. It prints milliseconds per step, the median
of --repeats timed runs after one warm-up run of 20 steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_STEP = r"""
import json, os, sys, time
cores, threads, n_embd, steps, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5])
if cores and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {int(c) for c in cores.split(",")})
import numpy as np, torch
from rebench.assets.gpt import GPTConfig
from rebench.assets.train import TrainConfig, new_model, train
torch.set_num_threads(threads)
data = np.random.default_rng(0).integers(0, 2048, size=200_000).astype(np.uint16)
cfg = GPTConfig(vocab_size=2048, block_size=64, n_layer=4, n_head=n_embd // 8, n_embd=n_embd)
def run(n):
    model = new_model(cfg, 0)
    tc = TrainConfig(steps=n, batch_size=8, lr=2e-3, min_lr=2e-4, warmup_steps=1)
    start = time.perf_counter()
    train(model, data, tc, torch.device("cpu"))
    return (time.perf_counter() - start) * 1000 / n
run(20)
print(json.dumps([run(steps) for _ in range(repeats)]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", default="0,1", help="cores to pin to ('' for none)")
    parser.add_argument("--widths", default="16,24,32")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'n_embd':>6} {'threads':>7} {'ms/step':>8}  (median of {args.repeats} x "
          f"{args.steps} steps; cores {args.cores or 'any'})")
    for width in (int(w) for w in args.widths.split(",")):
        for threads in (int(t) for t in args.threads.split(",")):
            out = subprocess.run(
                [sys.executable, "-c", _STEP, args.cores, str(threads), str(width),
                 str(args.steps), str(args.repeats)],
                check=True, capture_output=True, text=True).stdout
            ms = statistics.median(json.loads(out.strip().splitlines()[-1]))
            print(f"{width:>6} {threads:>7} {ms:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
