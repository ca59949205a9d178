"""chat.py: the tokenizer, and sampling with a key/value cache over left-padded batches,
which must give what a plain forward pass gives (greedy), whatever the batch."""

from __future__ import annotations

import torch

from rebench.assets.gpt import GPTConfig
from rebench.assets.train import new_model
from rebench.environments.nanogpt_chat_rl import chat


def tiny() -> torch.nn.Module:
    return new_model(GPTConfig(vocab_size=chat.VOCAB_SIZE, block_size=128, n_layer=2,
                               n_head=2, n_embd=32), seed=3).eval()


def greedy_reference(model: torch.nn.Module, prompt: str, steps: int) -> str:
    ids = chat.encode(chat.format_prompt(prompt))
    out: list[int] = []
    with torch.no_grad():
        for _ in range(steps):
            logits, _ = model(torch.tensor([ids + out]))
            token = int(logits[0, -1].argmax())
            out.append(token)
            if token == chat.EOT:
                break
    return chat.decode(out)


def test_encode_decode() -> None:
    assert chat.decode(chat.encode("Hi there!\n")) == "Hi there!\n"
    assert chat.decode(chat.encode("é")) == "?"
    assert chat.decode([*chat.encode("ab"), chat.EOT, *chat.encode("cd")]) == "ab"
    assert chat.VOCAB_SIZE == 97


def test_cached_batched_greedy_matches_the_plain_forward_pass() -> None:
    model = tiny()
    prompts = ["What is 2 plus 3?", "Hi", "Reverse the word 'stone'."]
    gen = torch.Generator().manual_seed(0)
    batched = chat.sample(model, prompts, generator=gen, temperature=0, max_new_tokens=20)
    alone = [chat.sample(model, [p], generator=gen, temperature=0, max_new_tokens=20)[0]
             for p in prompts]
    assert batched == alone == [greedy_reference(model, p, 20) for p in prompts]


def test_sampling_is_reproducible_for_a_seed() -> None:
    model = tiny()
    prompts = ["What is 2 plus 3?"] * 4

    def run(seed: int) -> list[str]:
        return chat.sample(model, prompts, generator=torch.Generator().manual_seed(seed),
                           max_new_tokens=12)

    assert run(1) == run(1)
    assert run(1) != run(2)
    assert all(len(r) <= 12 for r in run(1))


def test_finetune_lowers_the_loss_on_its_pairs() -> None:
    model = tiny()
    losses = chat.finetune(model, [("What is 2 plus 3?", "5.")] * 8, steps=40, lr=3e-3)
    assert losses[-1] < losses[0] / 2
    out = chat.sample(model, ["What is 2 plus 3?"], generator=torch.Generator(),
                      temperature=0)
    assert out == ["5."]


def test_any_prompt_fits_the_context_with_a_full_response() -> None:
    long_prompt = "word " * 60  # cut to MAX_PROMPT_CHARS by the format
    out = chat.sample(tiny(), [long_prompt], generator=torch.Generator(), temperature=0)
    assert len(out) == 1 and len(out[0]) <= chat.MAX_NEW_TOKENS
