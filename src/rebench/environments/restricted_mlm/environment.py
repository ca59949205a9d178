"""Restricted Architecture MLM: a masked language model whose forward uses only allowed ops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rebench.core.feedback import Feedback
from rebench.core.spec import (
    Aggregation,
    Direction,
    EnvironmentSpec,
    ParamValue,
    Profile,
    SolutionRecipe,
)


@dataclass(frozen=True)
class MlmParams:
    """A profile's numbers: the task's shape and masking, the data, the limits of a scoring."""

    tokenizer: str  # "gpt2" or "bpe<size>" (rebench.assets.tokenizer); its end-of-text is the mask
    seq_len: int  # tokens per window
    batch_size: int  # windows per batch (the export's example batch too)
    mask_fraction: float  # share of the positions masked (Bernoulli per position)
    mask_seed: int  # the scorer's masks; knowing them does not reveal held-out tokens
    loss_floor: float  # c in ln(loss - c)
    chunk_tokens: int  # held-out documents are cut into chunks split val/test by a secret
    eval_batches: int  # held-out batches scored
    export_timeout_s: float  # the sandboxed export: get_trained_model() and one forward
    eval_time_limit_s: float  # the scorer's own run of the checked graph on the held-out batches
    max_node_elements: int  # elements of any op's output (bounds the scorer's memory)
    # Peak bytes of one forward in the scorer: the stored tensors it uses, the values alive
    # at once (views share storage) and one op's working copies, from shapes before it runs.
    max_live_bytes: int
    max_forward_macs: int  # multiply-adds (element touches for other ops) of one forward
    max_tensor_bytes: int  # size of the exported tensors file
    train_profile: Literal["cpu", "gpu"]  # the numbers block of starting/ and reference/ train.py
    max_user_tokens: int  # cap on the tokens read from a user corpus (--corpus)


# Shared by both profiles: the paper's task shape (8 x 128 batches, 15% masked) and limits.
_COMMON: dict[str, ParamValue] = {
    "seq_len": 128,
    "batch_size": 8,
    "mask_fraction": 0.15,
    "mask_seed": 20240601,  # the scorer's masks; knowing them does not reveal held-out tokens
    "loss_floor": 1.5,  # c in ln(loss - c), the paper's constant (both profiles' losses allow it)
    "chunk_tokens": 4096,  # held-out documents are cut into chunks split val/test by a secret
    "export_timeout_s": 180.0,
    "max_tensor_bytes": 1024**3,
}

CPU = Profile(
    name="cpu",
    description="2 CPU cores: 2048-token BPE (mask = its end-of-text id 0), 250 held-out "
    "batches of 8 x 128",
    # 1.2.0: `rebench calibrate restricted_mlm -p cpu -n 1 --isolation bwrap` on 2026-12-07,
    # this 2-core VM (AMD EPYC, shared, load 2.5-4.6), torch 2.13.0 CPU, Python 3.11: held-out
    # masked loss 6.271 (start) and 2.983 (the reference with its counted neighbour tables,
    # built in 195 s; decision 0018). The two bigram tables alone (the red team's
    # neighbor_count_table) scored 3.420 (raw 0.6521) on the same split; on a second fresh
    # prepare the reference 2.948 (0.3699), the tables 3.387 (0.6349). Until 1.1.1 the
    # reference was the conv net alone: 1.5688 / 1.1745 (losses 6.301 / 4.736, 2026-11-30,
    # Intel Xeon). Loss-based, so other CPUs differ only by float rounding and by the
    # secret split (about 0.01 raw).
    starting_raw=1.5624705395952612,
    reference_raw=0.39435520529509505,
    anchors_hardware="cpu:AMD EPYC x2",
    params={
        **_COMMON,
        "tokenizer": "bpe2048",
        "eval_batches": 250,  # 2000 windows (the paper: 2000 batches of 8)
        "eval_time_limit_s": 150.0,
        "max_node_elements": 1 << 26,  # 256 MB of fp32 per op output
        # The reference needs 302 MiB live (101 MiB of weights, 96 of them its six counted
        # tables) and 1.14e9 multiply-adds per batch (graph_rules from shapes, 1.2.0; the
        # conv net alone of 1.1.1: 16 MiB, 1.08e9). 1.1.1's 250 batches took 10-20 s here, a
        # whole official scoring of 1.2.0's (export included) 47 s at load 2.5.
        # 2 GiB (a third of the profile's 6 GB) and 8e9 (7x) leave room for larger models;
        # the time limit stops whatever the load makes slower.
        "max_live_bytes": 2 << 30,
        "max_forward_macs": 8_000_000_000,
        "train_profile": "cpu",  # picks the numbers block of starting/ and reference/ train.py
        "max_user_tokens": 20_000_000,
    },
    instruction_text={
        "mask_text": "0 (the BPE's end-of-text token, as GPT-2's 50256 is in the paper)",
        "vocab_text": "2048-token byte-level BPE trained on the corpus (tokenizer.json)",
    },
    gpus=0,
    memory_gb=6.0,
    default_budget_s=2 * 3600.0,
    scoring_timeout_s=420.0,
)

GPU = Profile(
    name="gpu",
    description="one GPU: GPT-2 BPE (mask id 50256 as in the paper), 2000 held-out batches "
    "of 8 x 128 as in the paper",
    # Measured 2026-12-01 on one NVIDIA H200 (16 cores, Python 3.12.3, torch 2.11.0+cu130),
    # bwrap isolation, `benchmarks/gpu_anchors.py --env restricted_mlm --profile gpu`, each
    # after a fresh prepare, one official scoring each: start held-out masked loss 6.682 (GPU
    # shared with another benchmark), reference 3.614 (idle GPU, built in 300 s)
    # (docs/benchmarks/restricted_mlm-h200.md). The two were measured on two prepares
    # (two secret splits); the start is the corpus's unigram level, which moves little.
    starting_raw=1.645143005789064,
    reference_raw=0.7487177421124138,
    anchors_hardware="gpu:NVIDIA H200",
    params={
        **_COMMON,
        "tokenizer": "gpt2",
        "eval_batches": 2000,
        "eval_time_limit_s": 500.0,
        "max_node_elements": 1 << 28,
        # The reference: 625 MiB live (325 MiB weights), 6.1e10 multiply-adds per batch;
        # 1e12 (16x) over 2000 batches is about 80 s of fp32 on an H200.
        "max_live_bytes": 24 << 30,
        "max_forward_macs": 1_000_000_000_000,
        "train_profile": "gpu",
        "max_user_tokens": 500_000_000,
    },
    instruction_text={
        "mask_text": "50256 (GPT-2's end-of-text token)",
        "vocab_text": "GPT-2 BPE, 50257 tokens",
    },
    gpus=1,
    memory_gb=32.0,
    default_budget_s=8 * 3600.0,
    scoring_timeout_s=900.0,
)

# What a score tells the agent (core/feedback.py). Every check before the held-out pass
# depends on the submitted code only (the export runs on a fixed random batch without the
# held-out data), so its reason code is a function of the agent's code; which op, node or
# line broke a rule is in the private details and printed by the agent's evaluate.py.
# The held-out pass itself can fail only as not_finite, below_floor or eval_timeout.
FEEDBACK = Feedback(
    reasons={
        "no_model": "model.py is missing from the submission",
        "export_failed": "model.py could not be imported or its forward could not be "
        "exported with torch.export (run evaluate.py to see why)",
        "bad_graph": "the exported graph is malformed or passes values an op does not take "
        "(run evaluate.py to see where)",
        "too_large": "the exported graph or tensors file is larger than the limit",
        "forbidden_op": "the forward uses an op outside the allow-list (run evaluate.py to "
        "see which op and line)",
        "forbidden_dtype": "a value of the forward is not float32 (weights and activations) "
        "or int64/int32 (indices): no float16, bfloat16, float64 or bool",
        "forbidden_cast": "the forward makes integers from floats (a cast, rounding, "
        "comparison or integer-dtype reduction of activations)",
        "bad_index": "an index is not an integer function of the input tokens and fixed "
        "tensors within its table's range, or integers are used by an op other than "
        "indexing, reshaping, add, mul, sum or relu",
        "stateful": "the forward must return exactly one tensor and change no state",
        "ignores_input": "the forward's output does not depend on its input tokens",
        "bad_output_shape": "the forward does not return float32 logits of shape "
        "[batch, seq_len, vocab]",
        "graph_error": "torch refused to run an op of the exported graph on the batch's "
        "shapes (run evaluate.py to see which)",
        "too_much_memory": "the forward needs more memory than the profile's limit "
        "(max_node_elements or max_live_bytes in config.json)",
        "too_much_compute": "the forward needs more multiply-adds per batch than the "
        "profile's limit (max_forward_macs in config.json)",
        "eval_timeout": "the scorer's pass over the held-out batches took longer than its "
        "time limit",
        "eval_failed": "an op of the forward failed on the held-out batches",
        "not_finite": "the forward's logits or tensors are not finite",
        "below_floor": "the held-out loss is at or below the floor c: ln(loss - c) is "
        "undefined",
    },
    numbers={"loss": 4, "score": 4},
)

SPEC = EnvironmentSpec(
    id="restricted_mlm",
    version="1.2.0",
    title="Restricted Architecture MLM",
    direction=Direction.LOWER,
    raw_score_meaning="ln(L - c): L is the held-out masked-token loss (nats) of the forward "
    "exported from model.py and run by the scorer, c the profile's loss_floor",
    profiles={"cpu": CPU, "gpu": GPU},
    solutions={
        # The workspace as given: prepare trained the MLP into public/model.pt with
        # starting/train.py, so a fresh workspace scores (t = 0) without training first.
        "starting": SolutionRecipe("starting"),
        "reference": SolutionRecipe("reference", run=("python", "train.py"),
                                    run_timeout_s=1800.0),
    },
    aggregation=Aggregation.BEST,
    # model.py and what it loads; data/ (train and validation tokens) is left out.
    solution_globs=("**/*.py", "**/*.pt", "**/*.pth", "**/*.safetensors", "**/*.npy",
                    "**/*.json"),
    snapshot_max_bytes=2 * 1024**3,
    child_modules=("export_child",),
    params_type=MlmParams,
    paper_starting_raw=1.8141730640649552,
    paper_reference_raw=1.1314021114911004,
    feedback=FEEDBACK,
)
