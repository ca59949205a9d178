"""Starting solution (the paper's): best-of-2 with the judge, then fine-tune on the winners.

Samples two responses to each of the first 1000 training prompts from base_model.pth, asks
the judge which is better, fine-tunes on the better one of each pair and saves model.pth
(the file that is scored)."""

import json

import chat
import torch
from judge_client import compare
from model import GPT, GPTConfig

torch.manual_seed(0)
torch.set_num_threads(1 if not torch.cuda.is_available() else 8)
with open("config.json") as f:
    config = json.load(f)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = GPT(GPTConfig.from_json(config["model"]))
model.load_state_dict(torch.load("base_model.pth", map_location="cpu", weights_only=True))
model.to(device).eval()

with open("prompts.jsonl") as f:
    prompts = [json.loads(line)["prompt"] for line in f][:1000]

gen = torch.Generator().manual_seed(1)
first = chat.sample(model, prompts, generator=gen, batch_size=1000)
second = chat.sample(model, prompts, generator=gen, batch_size=1000)
verdicts = compare(list(zip(prompts, first, second, strict=True)))
winners = [(p, a if v >= 0.5 else b)
           for p, a, b, v in zip(prompts, first, second, verdicts, strict=True)]
print(f"judged {len(verdicts)} pairs; first preferred {sum(v == 1.0 for v in verdicts)}, "
      f"ties {sum(v == 0.5 for v in verdicts)}")

losses = chat.finetune(model, winners, steps=150, lr=1e-3, batch_size=32, seed=0)
print(f"fine-tuned on the winners: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
torch.save({k: v.cpu() for k, v in model.state_dict().items()}, "model.pth")
