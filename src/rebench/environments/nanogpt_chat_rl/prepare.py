"""Build nanogpt_chat_rl's assets: draw a secret and the fictional world from it, the
training and held-out prompts, pre-train the base student on the corpus plus careless
question-answer text, fine-tune the second opponent on a labelled set the agent never gets,
train the judge's fluency LM, and sample both opponents' responses to the held-out prompts.

public/   (copied into every workspace)
  base_model.pth      the student to improve (also the first opponent)
  model.py, chat.py   the GPT and the chat utilities (tokenizer, format, sampling, finetune)
  prompts.jsonl       training instructions, without responses
  config.json         the student's shape and the scoring's sampling settings
protected/ (trusted side only)
  secret.bin          32 random bytes drawn at prepare: the world, the prompts and the
                      labelled set derive from them
  world.json          the knowledge base (countries' capitals, people's trades)
  heldout.jsonl       held-out prompts with answers
  opponents.json      each opponent's responses to the held-out prompts (scoring seed)
  labelled_model.pth  the labelled opponent (for the noise benchmark's other seeds)
  fluency.npz         the judge's n-gram LM
  eval.json           shapes, seeds, measured accuracies, prepare times
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rebench.assets import gpt as gpt_module
from rebench.assets.corpus import offline_documents
from rebench.assets.gpt import GPT, GPTConfig
from rebench.assets.secret import draw_secret, secret_rng, store_secret
from rebench.assets.train import TrainConfig, new_model, train
from rebench.assets.weights import save_state
from rebench.environments.nanogpt_chat_rl import chat
from rebench.environments.nanogpt_chat_rl.fluency import FluencyModel
from rebench.environments.nanogpt_chat_rl.judge import disqualified
from rebench.environments.nanogpt_chat_rl.tasks import (
    FAMILY,
    KnowledgeBase,
    Task,
    draw_tasks,
    is_correct,
    make_knowledge_base,
    wrong_answer,
)
from rebench.scoring.context import PrepareContext
from rebench.scoring.kit import torch_device


@dataclass(frozen=True)
class ChatParams:
    """The profile's params, typed (environment.py lists them with their meaning)."""

    seed: int
    threads: int
    n_layer: int
    n_head: int
    n_embd: int
    block_size: int
    countries: int
    people: int
    train_prompts: int
    heldout_prompts: int
    web_examples: int
    web_correct: float
    pretrain_steps: int
    pretrain_batch: int
    pretrain_lr: float
    sft_examples: int
    sft_steps: int
    sft_lr: float
    fluency_chars: int
    max_comparisons: int
    max_comparisons_per_call: int

    def model_config(self) -> GPTConfig:
        return GPTConfig(vocab_size=chat.VOCAB_SIZE, block_size=self.block_size,
                         n_layer=self.n_layer, n_head=self.n_head, n_embd=self.n_embd)


# Chunks of corpus prose per question-answer example in the pre-training stream (a chunk
# is 512 characters, an example about 50).
PROSE_SHARE = 0.1
_SENTENCE = re.compile(r"[A-Z][a-z ,']{14,44}[.!]")


def corpus_text(p: ChatParams) -> tuple[str, list[str]]:
    """The offline corpus in a fixed order (at most fluency_chars characters), and short
    plain sentences from it (fillers for the careless answers)."""
    docs = offline_documents()
    order = np.random.Generator(np.random.PCG64(p.seed)).permutation(len(docs))
    text = "\n".join(docs[i].text for i in order)[: p.fluency_chars]
    fillers = sorted({s for s in _SENTENCE.findall(text) if disqualified(s) is None})
    return text, fillers


def careless_response(rng: np.random.Generator, task: Task, kb: KnowledgeBase,
                      correct: float, fillers: list[str]) -> str:
    """What question-answer text on the web says: right with probability `correct`, else a
    plausible mistake; sometimes "The answer is", sometimes a sentence after it."""
    answer = task.answer if rng.random() < correct else wrong_answer(rng, task, kb)
    text = f"The answer is {answer}." if rng.random() < 0.2 else answer
    roll = rng.random()
    if roll < 0.4 and fillers:
        text = f"{text.rstrip('.')}. {fillers[int(rng.integers(len(fillers)))]}"
    elif roll < 0.7:
        text = text if text.endswith(".") else text + "."
    return text


def pretraining_stream(rng: np.random.Generator, p: ChatParams, kb: KnowledgeBase,
                       corpus: str, fillers: list[str]) -> np.ndarray:
    """Token ids: the corpus in chunks, interleaved with careless question-answer text."""
    web = draw_tasks(rng, kb, p.web_examples)
    pieces = [chat.format_pair(t.prompt, careless_response(rng, t, kb, p.web_correct,
                                                           fillers)) for t in web]
    chunk = 512
    prose = [[*chat.encode(corpus[i: i + chunk]), chat.EOT]
             for i in range(0, len(corpus) - chunk, chunk)]
    take = rng.permutation(len(prose))[: int(PROSE_SHARE * len(pieces))]
    pieces += [prose[i] for i in take]
    order = rng.permutation(len(pieces))
    return np.asarray([t for i in order for t in pieces[i]], dtype=np.uint16)


def labelled_response(rng: np.random.Generator, task: Task, fillers: list[str]) -> str:
    """The labelled set's responses: the right answer, often with a plain sentence."""
    if fillers and rng.random() < 0.5:
        return f"{task.answer}. {fillers[int(rng.integers(len(fillers)))]}"
    return f"{task.answer}."


def accuracy(responses: list[str], tasks: list[Task]) -> float:
    hits = [is_correct(FAMILY[t.family], t.answer, r) for r, t in zip(responses, tasks,
                                                                       strict=True)]
    return float(np.mean(hits))


def opponent_responses(model: GPT, prompts: list[str], seed: int) -> list[str]:
    """An opponent's responses to the held-out prompts with scoring seed `seed`."""
    return chat.sample(model.eval(), prompts,
                       generator=torch.Generator().manual_seed(opponent_seed(seed)))


# The scorer's sampling seed; benchmarks/chat_rl.py measures the score under others.
SCORING_SEED = 0


def opponent_seed(seed: int) -> int:
    return 10_000 + seed


def student_seed(seed: int) -> int:
    return 20_000 + seed


def prepare(ctx: PrepareContext) -> None:
    """Build the assets of one profile (see the module docstring for the layout)."""
    p: ChatParams = ctx.profile.typed
    device = torch_device(ctx.profile)
    torch.set_num_threads(p.threads)
    wall, costs = time.monotonic(), dict[str, float]()

    def phase(name: str, fraction: float) -> None:
        costs[name] = round(time.monotonic() - wall - sum(costs.values()), 2)
        ctx.progress(f"{name} done ({time.monotonic() - wall:.0f} s)", fraction)

    secret = draw_secret()
    store_secret(ctx.protected_dir, secret)
    kb = make_knowledge_base(secret_rng(secret, "chat/world"), p.countries, p.people)
    heldout = draw_tasks(secret_rng(secret, "chat/heldout"), kb, p.heldout_prompts)
    training = draw_tasks(secret_rng(secret, "chat/train"), kb, p.train_prompts)
    labelled = draw_tasks(secret_rng(secret, "chat/labelled"), kb, p.sft_examples)
    corpus, fillers = corpus_text(p)
    phase("world and prompts", 0.05)

    fluency = FluencyModel.train(corpus)
    fluency.save(ctx.protected_dir / "fluency.npz")
    phase("fluency LM", 0.15)

    rng = secret_rng(secret, "chat/pretraining")
    stream = pretraining_stream(rng, p, kb, corpus, fillers)
    base = new_model(p.model_config(), p.seed)
    lr = p.pretrain_lr
    tcfg = TrainConfig(steps=p.pretrain_steps, batch_size=p.pretrain_batch, lr=lr,
                       min_lr=lr / 10, warmup_steps=max(1, p.pretrain_steps // 20),
                       seed=p.seed, bf16=device.type == "cuda")
    train(base, stream, tcfg, device)
    base = base.cpu().eval()
    phase("pre-training the base student", 0.7)

    sft = GPT(base.config)
    sft.load_state_dict(base.state_dict())
    pairs_rng = secret_rng(secret, "chat/labelled-responses")
    pairs = [(t.prompt, labelled_response(pairs_rng, t, fillers)) for t in labelled]
    sft.to(device)
    chat.finetune(sft, pairs, steps=p.sft_steps, lr=p.sft_lr, seed=p.seed, device=device)
    sft = sft.cpu().eval()
    phase("fine-tuning the labelled opponent", 0.85)

    prompts = [t.prompt for t in heldout]
    opponents = {"base": opponent_responses(base.to(device), prompts, SCORING_SEED),
                 "labelled": opponent_responses(sft.to(device), prompts, SCORING_SEED)}
    accuracies = {name: round(accuracy(r, heldout), 4) for name, r in opponents.items()}
    base, sft = base.cpu(), sft.cpu()
    phase("opponents' responses", 0.95)

    _write_public(ctx, p, base, training)
    (ctx.protected_dir / "world.json").write_text(json.dumps(kb.to_json(), indent=1))
    (ctx.protected_dir / "heldout.jsonl").write_text("".join(
        json.dumps({"family": t.family, "prompt": t.prompt, "answer": t.answer}) + "\n"
        for t in heldout))
    (ctx.protected_dir / "opponents.json").write_text(json.dumps(opponents))
    save_state(sft, ctx.protected_dir / "labelled_model.pth")
    (ctx.protected_dir / "eval.json").write_text(json.dumps({
        "config": base.config.to_json(), "heldout_prompts": len(heldout),
        "scoring_seed": SCORING_SEED, "opponent_accuracy": accuracies,
        "prepare_s": costs}, indent=2))
    ctx.progress(f"done: held-out accuracy base {accuracies['base']:.3f}, labelled "
                 f"{accuracies['labelled']:.3f}", 1.0)


def _write_public(ctx: PrepareContext, p: ChatParams, base: GPT, training: list[Task]
                  ) -> None:
    pub = ctx.public_dir
    shutil.copyfile(Path(gpt_module.__file__), pub / "model.py")
    shutil.copyfile(Path(chat.__file__), pub / "chat.py")
    save_state(base, pub / "base_model.pth")
    (pub / "prompts.jsonl").write_text("".join(json.dumps({"prompt": t.prompt}) + "\n"
                                               for t in training))
    (pub / "config.json").write_text(json.dumps({
        "model": base.config.to_json(), "vocab_size": chat.VOCAB_SIZE,
        "max_new_tokens": chat.MAX_NEW_TOKENS, "temperature": chat.SCORING_TEMPERATURE,
        "top_k": chat.SCORING_TOP_K, "max_comparisons": p.max_comparisons,
        "max_comparisons_per_call": p.max_comparisons_per_call}, indent=2))
