"""What OpenMP's wait policy does to torch CPU training when processes share cores: one
small GPT-like training alone, then two at once on the same cores, with OpenMP's default
(spin-waiting) and with OMP_WAIT_POLICY=PASSIVE (what rebench sets for every process it
starts: docs/decisions/0016-passive-openmp-wait.md).

    python benchmarks/omp_oversubscription.py --cores 0,1 --threads 2 --steps 60

Each process prints its training seconds (its start-up and torch import not counted). On
Linux the processes are pinned to --cores (os.sched_setaffinity), so a machine with more
cores can stand in for a small one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

_TRAIN = """
import os, sys, time
os.sched_setaffinity(0, {int(c) for c in sys.argv[3].split(",")})
import torch
torch.set_num_threads(int(sys.argv[1])); torch.manual_seed(0)
layer = lambda: torch.nn.TransformerEncoderLayer(64, 2, 256, batch_first=True)
model = torch.nn.Sequential(torch.nn.Embedding(2048, 64), layer(), layer(),
                            torch.nn.Linear(64, 2048))
opt = torch.optim.AdamW(model.parameters(), 1e-3)
x = torch.randint(0, 2048, (8, 128))
t = time.monotonic()
for _ in range(int(sys.argv[2])):
    loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten())
    opt.zero_grad(); loss.backward(); opt.step()
print(f"{time.monotonic() - t:.2f}")
"""


def trainings(count: int, policy: str | None, args: argparse.Namespace) -> list[float]:
    """Seconds of `count` trainings started together under the wait `policy`."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    argv = [sys.executable, "-c", _TRAIN, str(args.threads), str(args.steps), args.cores]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(count)]
    return [float(p.communicate()[0]) for p in procs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", default="0,1", help="CPU ids to pin every process to")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per process")
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    print(f"cores {args.cores}, {args.threads} torch threads per process, {args.steps} steps")
    print("| processes | wait policy | training seconds, each |")
    print("| ---: | --- | --- |")
    for count, policy in ((1, None), (1, "PASSIVE"), (2, None), (2, "PASSIVE")):
        began = time.monotonic()
        seconds = trainings(count, policy, args)
        print(f"| {count} | {policy or 'default (spin)'} | "
              f"{', '.join(f'{s:.2f}' for s in seconds)} "
              f"(wall {time.monotonic() - began:.1f} s) |", flush=True)


if __name__ == "__main__":
    main()
