"""Small Scaling Law: choose n_embd and max_iters of a fixed 4-layer GPT for a FLOP budget
and predict its loss, using experiments (at most 1/50 of the budget each) that a trusted
service runs; the final scoring trains the answer at the full budget. The score is hidden
from the agent and the last answer counts."""

from __future__ import annotations

from rebench.core.feedback import Feedback
from rebench.core.spec import (
    Aggregation,
    Direction,
    EnvironmentSpec,
    ParamValue,
    Profile,
    ServiceSpec,
    SolutionRecipe,
)
from rebench.environments.small_scaling_law.service import start_experiments
from rebench.environments.small_scaling_law.trainer import ScalingParams

# What a score shows the agent (core/feedback.py). The score is hidden: a requested score
# shows only validity (`is_valid`, rendered as `valid`) and the fraction of the target
# FLOPs the answer uses, a function of the answer alone; an invalid one a reason code.
FEEDBACK = Feedback(
    reasons={
        "no_answer": "answer.json is missing, not a regular file, unreadable or too large",
        "malformed_answer": "answer.json must be a JSON object with a finite positive "
                            "loss_prediction and positive integers max_iters and n_embd",
        "bad_width": "n_embd must be a multiple of the head size within the range of "
                     "recipe.json, and max_iters at least 1",
        "over_budget": "the answer uses more than the allowed multiple of the target FLOPs",
        "diverged": "the answer's training at the target budget diverged",
    },
    numbers={"frac_flops_used": 4},
)

# Calls of the experiments service per run (its max_calls, quoted in the instructions).
MAX_EXPERIMENTS = 100

# The fraction of the run's tokens replaced by random ones, drawn at prepare (secret). On
# cpu (n_embd 24 at 4e11 FLOPs, 2048 held-out windows) it raised the loss from 4.658 (clean)
# to 5.401 at 0.1; a prepare that drew 0.177 measured L* 5.8255: the public table's loss
# misses this run's by 0.7 nats and more, so the table's answer (the starting answer) is far
# from the reference, which measures the run's data (decision 0015).
NOISE_LOW = 0.1
NOISE_HIGH = 0.2

_COMMON: dict[str, ParamValue] = {
    "n_layer": 4,
    "seed": 0,  # model init and batch order of every training run (experiments and scoring)
    "experiment_fraction": 0.02,  # one experiment may use 1/50 of the target budget
    "max_budget_ratio": 1.1,  # answers above 1.1 x the target budget are invalid
    "eval_batch_size": 64,
}

CPU = Profile(
    name="cpu",
    description="2 CPU cores: 4-layer GPT, 2048-token BPE, block 64, batch 8, "
    "target 5e11 FLOPs (a target run near the optimum takes 1-2 minutes)",
    # Since 1.3.0 the prepare measures the start's and the reference's raw on the setting
    # it drew (PrepareContext.record_anchors) and scores are normalized with those; these
    # profile anchors only stand in where nothing is prepared. 1.5.0, one fresh prepare on
    # the 2-core VM (2026-12-03, load 3-4, 8 min 55 s): drawn budget 4.29e11 and noise rate
    # 0.177; L* 5.8255 at n_embd 24 (16: 5.8489, 32: 5.8760); the start (the public
    # table's 24 x 5050 predicting 4.6112) raw -0.2143; the reference (16 x 11364
    # predicting 5.7008, trained to 5.8489) raw 0.8285. Official scoring (bwrap) gave the
    # start the same raw to the last digit (docs/benchmarks/data/ssl_public_answers_cpu.json).
    starting_raw=-0.2143,
    reference_raw=0.8285,
    anchors_hardware="cpu:AMD EPYC x2",
    params={
        **_COMMON,
        "tokenizer": "bpe2048",
        "device": "cpu",
        # One torch thread (1.6.0; was 2): a step of this model is no faster with two
        # (n_embd 16: 21.8 ms with one thread, 24.2 ms with two, two pinned cores of a Xeon
        # host, benchmarks/train_step_threads.py), and the service's experiments and a
        # second process each keep a core of a 2-core machine.
        "threads": 1,
        "block_size": 64,
        "batch_size": 8,
        "head_size": 8,
        # At 5e11 the sweep's optimum (n_embd 24) lies inside the range; at the earlier 2e10
        # it sat at the smallest width (8), so "as narrow as allowed" was the answer. Widths
        # below 16 would need tens of thousands of steps at this budget.
        "min_n_embd": 16,
        "max_n_embd": 256,
        "lr": 2e-3,
        "target_flops": 5e11,  # the public sweep's budget (documentation of the recipe)
        # The scored budget, drawn at prepare: 1.1 x 4.5e11 < 5e11, so the sweep's optimum
        # copied as is is over budget; L* is measured at prepare at 16, 24 and 32 (the
        # sweep's optimum and its neighbours).
        "target_low": 3.5e11,
        "target_high": 4.5e11,
        "lstar_widths": "16,24,32",
        "val_windows": 256,  # the service's validation loss: 256 windows of the val split
        "heldout_windows": 2048,  # the scorer's: a secret 2048 of the test split's ~4600
        "sweep_windows": 1536,  # the sweep's (L*): 1536 windows spread over the test split
        "noise_low": NOISE_LOW,
        "noise_high": NOISE_HIGH,
        # An experiment at the cap takes 1-15 s on 2 idle cores (plus a few seconds to
        # start its process); 300 s leaves a margin for a loaded machine.
        "experiment_timeout_s": 300.0,
    },
    instruction_text={"max_experiments": str(MAX_EXPERIMENTS)},
    gpus=0,
    memory_gb=4.0,
    pids_max=256,
    default_budget_s=2 * 3600.0,
    scoring_timeout_s=600.0,
)

GPU = Profile(
    name="gpu",
    description="one GPU: the cpu profile's 4-layer GPT (2048-token BPE, block 64, batch 8) "
    "at twice its budget, 1e12 FLOPs (a target run near the optimum: about a minute on an "
    "H200); the offline corpus cannot feed the paper's block 1024 x batch 64",
    # Each prepare measures its own anchors on the setting it draws; these stand in where
    # nothing is prepared. 1.5.0, one gpu prepare on an H200 (bwrap, 2026-12-03, 245 s):
    # drawn budget 8.85e11 and noise rate 0.14; L* 5.5057 at n_embd 32 (24: 5.5117, 40:
    # 5.5575); the start (the gpu table's 32 x 5861 predicting 4.451) raw -0.0547; the
    # reference (24 x 10419 predicting 5.7021, trained to 5.5117) raw 0.8036. Another
    # prepare (budget 8.52e11, L* 5.7307) scored both officially on the H200 (bwrap; the
    # reference built through the sandboxed service): start raw -0.2797 normalized 0,
    # reference raw 0.8528 normalized 1.00 (docs/benchmarks/small_scaling_law-h200.md).
    starting_raw=-0.0547,
    reference_raw=0.8036,
    anchors_hardware="gpu:NVIDIA H200",
    params={
        # 1.4.0: the paper's shape (GPT-2 BPE, block 1024, batch 64) at 2e16 FLOPs repeated
        # the 3.78 M-token train split of the offline corpus 17-31 times, so the sweep
        # measured memorisation (n_embd 768, 31 epochs: 6.74; 1024, 17 epochs: 5.17) and no
        # budget an H200 runs in minutes stays near one epoch at that shape
        # (docs/decisions/0014-small-scaling-law-gpu-recipe.md). The cpu recipe (its params,
        # on cuda) at 1e12 sees 0.08-3 epochs across the swept widths, optimum inside.
        **CPU.params,
        "device": "cuda",
        "threads": 4,
        "target_flops": 1e12,  # the public sweep's budget (documentation of the recipe)
        # Drawn at prepare like cpu's: 1.1 x 9e11 < 1e12, so the sweep's optimum copied as
        # is is over budget.
        "target_low": 7e11,
        "target_high": 9e11,
        "lstar_widths": "24,32,40",
    },
    instruction_text={"max_experiments": str(MAX_EXPERIMENTS)},
    gpus=1,
    memory_gb=16.0,
    default_budget_s=8 * 3600.0,
    scoring_timeout_s=900.0,
)

SPEC = EnvironmentSpec(
    id="small_scaling_law",
    version="1.6.0",
    title="Scaling Law Experiment",
    direction=Direction.HIGHER,
    raw_score_meaning="1 - [(L(answer) - L*) + |loss_prediction - L(answer)|]: L(answer) is "
    "the held-out loss of the answer trained at the target budget, L* the best of our sweep",
    profiles={"cpu": CPU, "gpu": GPU},
    solutions={
        "starting": SolutionRecipe("starting"),
        "reference": SolutionRecipe("reference", run=("python", "fit.py"),
                                    run_timeout_s=1800.0),
    },
    aggregation=Aggregation.LAST,
    score_visible_to_agent=False,
    solution_globs=("answer.json",),
    snapshot_max_bytes=1 << 20,
    services=(ServiceSpec(
        "experiments",
        "train the fixed GPT at {n_embd, max_iters, lr?} (at most 1/50 of the target "
        "FLOPs); returns the loss curve and the validation loss",
        start_experiments, max_calls=MAX_EXPERIMENTS),),
    params_type=ScalingParams,
    feedback=FEEDBACK,
    paper_starting_raw=0.2356,
    paper_reference_raw=0.84,
)
