"""Reference solution: rounds of best-of-8 by a judged knockout tournament, each followed by
fine-tuning on the winners (the paper's reference: best-of-8 via a tournament, then rounds
of fine-tuning on the winners).

Each round samples 8 responses to a fresh slice of training prompts from the current model,
runs a knockout tournament per prompt with the judge (4 + 2 + 1 comparisons), and
fine-tunes the model on the tournament winners of this and earlier rounds."""

import json
import time

import chat
import torch
from judge_client import compare
from model import GPT, GPTConfig

SAMPLES = 8
if torch.cuda.is_available():
    DEVICE, ROUNDS, PER_ROUND, STEPS, BATCH = "cuda", 3, 4000, 600, 64
else:
    DEVICE, ROUNDS, PER_ROUND, STEPS, BATCH = "cpu", 2, 600, 200, 32
torch.manual_seed(0)
torch.set_num_threads(1 if not torch.cuda.is_available() else 8)
with open("config.json") as f:
    config = json.load(f)
model = GPT(GPTConfig.from_json(config["model"]))
model.load_state_dict(torch.load("base_model.pth", map_location="cpu", weights_only=True))
model.to(DEVICE).eval()
with open("prompts.jsonl") as f:
    all_prompts = [json.loads(line)["prompt"] for line in f]


def tournament(prompts, candidates):
    """The knockout winner among each prompt's candidates (a tie keeps the first)."""
    alive = candidates
    while len(alive[0]) > 1:
        items = [(p, row[i], row[i + 1]) for p, row in zip(prompts, alive, strict=True)
                 for i in range(0, len(row), 2)]
        verdicts = iter(compare(items))
        alive = [[row[i] if next(verdicts) >= 0.5 else row[i + 1]
                  for i in range(0, len(row), 2)] for row in alive]
    return [row[0] for row in alive]


start = time.monotonic()
gen = torch.Generator().manual_seed(1)
winners = []
for round_ in range(ROUNDS):
    prompts = all_prompts[round_ * PER_ROUND: (round_ + 1) * PER_ROUND]
    samples = [chat.sample(model, prompts, generator=gen, batch_size=1000)
               for _ in range(SAMPLES)]
    candidates = [list(row) for row in zip(*samples, strict=True)]
    winners += list(zip(prompts, tournament(prompts, candidates), strict=True))
    losses = chat.finetune(model, winners, steps=STEPS, lr=1e-3, batch_size=BATCH,
                           seed=round_)
    print(f"round {round_ + 1}: {len(winners)} winners, loss {losses[0]:.3f} -> "
          f"{losses[-1]:.3f} ({time.monotonic() - start:.0f} s)", flush=True)
torch.save({k: v.cpu() for k, v in model.state_dict().items()}, "model.pth")
