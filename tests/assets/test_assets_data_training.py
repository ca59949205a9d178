"""Token shards, the shared cache, user corpora, the training loop and weight import."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from rebench.assets.data import AssetError, user_token_splits, write_shard
from rebench.assets.gpt import GPT, GPTConfig
from rebench.assets.train import TrainConfig, eval_windows, evaluate, new_model, train
from rebench.assets.weights import load_base_model, save_state

TINY = GPTConfig(vocab_size=97, block_size=16, n_layer=2, n_head=2, n_embd=32)


def _data(n: int = 5000, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, TINY.vocab_size, n).astype(np.uint16)


def test_write_shard_layout(tmp_path: Path) -> None:
    n = write_shard([[1, 2], [3]], eot_id=0, path=tmp_path / "a.bin")
    assert n == 5
    assert np.fromfile(tmp_path / "a.bin", dtype="<u2").tolist() == [1, 2, 0, 3, 0]
    with pytest.raises(AssetError):
        write_shard([[70000]], eot_id=0, path=tmp_path / "b.bin")


def test_training_is_deterministic() -> None:
    torch.set_num_threads(1)  # bitwise equality needs one thread count for both runs
    cfg = TrainConfig(steps=6, batch_size=4, lr=1e-3, min_lr=1e-4, warmup_steps=2, seed=3)
    states = []
    for _ in range(2):
        model = new_model(TINY, seed=5)
        losses = train(model, _data(), cfg, torch.device("cpu"))
        states.append(model.state_dict())
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
    assert losses[-1] < losses[0] + 1.0  # trains without blowing up
    other = new_model(TINY, seed=6)
    assert not torch.equal(other.transformer.wte.weight, new_model(TINY, 5).transformer.wte.weight)


def test_evaluate_uses_fixed_windows() -> None:
    starts = eval_windows(1000, 16, 5)
    assert starts[0] == 0 and starts[-1] == 1000 - 17 and len(starts) == 5
    model = new_model(TINY, seed=1)
    data = _data()
    a = evaluate(model, data, 20, 8, torch.device("cpu"))
    assert a == evaluate(model, data, 20, 8, torch.device("cpu"))
    assert abs(a - np.log(TINY.vocab_size)) < 0.5  # an untrained model is near uniform


def test_tied_embedding_has_one_state_key() -> None:
    keys = set(GPT(TINY).state_dict())
    assert "transformer.wte.weight" in keys and not any("lm_head" in k for k in keys)


def test_user_corpus_folder(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rng.integers(0, 50257, 50_000).astype("<u2").tofile(tmp_path / "train.bin")
    rng.integers(0, 50257, 30_000).astype("<u2").tofile(tmp_path / "val.bin")
    splits = user_token_splits(tmp_path, max_train_tokens=40_000)
    assert splits.vocab_size == 50257 and splits.tokenizer == "gpt2"
    assert len(splits.tokens("train")) == 40_000
    assert len(splits.tokens("val")) == 15_000 and len(splits.tokens("test")) == 15_000
    # A second call reuses the cache (same files, same manifest).
    again = user_token_splits(tmp_path, max_train_tokens=40_000)
    assert again.root == splits.root


def test_user_corpus_rejects_missing_or_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(AssetError, match="does not exist"):
        user_token_splits(tmp_path / "nope", 1000)
    (tmp_path / "train.bin").write_bytes(b"")
    with pytest.raises(AssetError, match=r"train\.bin and val\.bin"):
        user_token_splits(tmp_path, 1000)


def test_base_model_from_our_format_and_from_hf_gpt2(tmp_path: Path) -> None:
    cfg = GPTConfig(vocab_size=97, block_size=16, n_layer=2, n_head=1, n_embd=64)
    model = new_model(cfg, seed=2)
    save_state(model, tmp_path / "ours.pth")
    x = torch.randint(0, 97, (2, 16))
    ours = load_base_model(tmp_path / "ours.pth")
    assert torch.allclose(ours(x)[0], model(x)[0])
    # The same weights as a Hugging Face GPT-2 checkpoint: no prefix, Conv1D transposes,
    # attention-mask buffers and an lm_head.
    hf: dict[str, torch.Tensor] = {}
    for key, value in model.state_dict().items():
        name = key.removeprefix("transformer.")
        transposed = name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))
        hf[name] = value.t().contiguous() if transposed else value
    hf["h.0.attn.bias"] = torch.ones(1, 1, 16, 16)
    hf["lm_head.weight"] = model.transformer.wte.weight.detach().clone()
    torch.save(hf, tmp_path / "pytorch_model.bin")
    theirs = load_base_model(tmp_path / "pytorch_model.bin")
    assert torch.allclose(theirs(x)[0], model(x)[0], atol=1e-6)


@pytest.mark.slow
def test_offline_shards_are_byte_identical_across_builds(tmp_path: Path) -> None:
    """The same key built twice from scratch gives identical bytes (the key alone decides);
    another key holds out other text (checked on the split itself: a third build of the
    shards would only tokenize that other split)."""
    from rebench.assets.corpus import offline_documents, split_documents
    from rebench.assets.data import offline_token_splits

    def build(name: str, key: bytes) -> dict[str, bytes]:
        splits = offline_token_splits("bpe512", key, tmp_path / name)
        assert splits.root == tmp_path / name
        return {p.name: p.read_bytes() for p in sorted(splits.root.iterdir())
                if p.suffix in (".bin", ".json") and p.name != "manifest.json"}

    first, again = build("a", b"k" * 32), build("b", b"k" * 32)
    assert first == again
    assert set(first) == {"train.bin", "val.bin", "test.bin", "tokenizer.json"}
    documents = offline_documents()

    def held_out(key: bytes) -> list[str]:
        return [d.text for d in split_documents(documents, key, 0.05, 0.05)["test"]]

    assert held_out(b"j" * 32) != held_out(b"k" * 32)
