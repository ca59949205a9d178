"""triton_cumsum ("Optimize a Kernel"): make a conditional prefix sum fast."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rebench.core.feedback import Feedback
from rebench.core.spec import Aggregation, Direction, EnvironmentSpec, Profile, SolutionRecipe


@dataclass(frozen=True)
class TritonParams:
    """A profile's numbers: the sizes, device and limits of one scoring."""

    n: int  # elements of each input
    device: Literal["cpu", "cuda"]
    warmup_calls: int  # untimed calls first (at least; gpu rounds up to whole batches)
    timed_calls: int
    call_timeout_s: float  # per call
    startup_timeout_s: float  # importing solution.py and receiving the buffers
    statistic: Literal["median", "min"]  # of the timed calls (gpu: of the batches)
    batch: int = 1  # gpu: calls per timed batch (one sample of the statistic)
    prep_wait_ms: float = 2.0  # gpu: the scorer's prep may wait this long for the GPU


# Shared by both profiles: the paper's protocol (4 warm-up calls, 20 s per call) plus a
# median over several timed calls, each on a fresh input, to cut the timing noise.
_COMMON = {"warmup_calls": 4, "call_timeout_s": 20, "startup_timeout_s": 120}
# `rebench calibrate` warns (refuses with --strict) when the raw samples spread more than
# this (SD), a reference probe moves by 3x this, or the load average exceeds half the cores.
_CALIBRATION_SD_LIMIT = 0.05

CPU = Profile(
    name="cpu",
    description="2 CPU cores, N = 1e7: any CPU code (PyTorch, NumPy, Numba)",
    # benchmarks/triton_cumsum_h200.py --profile cpu --runs 10 (bwrap) on 2026-12-01 on the
    # 2-core dev VM with nothing else running: medians of 10 official scorings, SD of raw
    # 0.047 (start), 0.105 (reference). The same machine kind ran the start in 264 ms and the
    # reference in 6.9 ms on 2026-11-29 (SD 0.02): its speed varies from day to day, so
    # calibrate (`rebench calibrate`) before comparing scores.
    starting_raw=6.0643,  # 430 ms
    reference_raw=2.6275,  # 13.8 ms
    anchors_hardware="cpu:AMD EPYC x2",
    # n: the starting solution takes 260-430 ms on 2 idle cores (the paper asks 100-300 ms).
    params={
        "n": 10_000_000, "device": "cpu", "timed_calls": 9,
        # The fastest timed call counts: on a shared CPU, interference only adds time.
        "statistic": "min",
        **_COMMON,
    },
    instruction_text={
        "n_human": "10,000,000", "statistic_text": "the fastest of the timed calls counts",
        "device_name": "the CPU",
        "device_hint": "Any CPU code is allowed (PyTorch, NumPy, Numba are installed); the "
                       "machine has 2 cores.",
    },
    calibration_sd_limit=_CALIBRATION_SD_LIMIT,
    gpus=0,
    memory_gb=4.0,
    default_budget_s=2 * 3600.0,
    scoring_timeout_s=400.0,
)

# For rebench's own tests: the cpu profile's protocol on a tenth of its input, with a
# per-call limit of seconds (a solution that hangs costs 3 s, not 20). Cheats refused
# outright whatever the size, channel probes and wrong answers score on it in a few seconds;
# whatever races the call's length (a thread finishing the work in the background) or
# compares a time with the start's stays on cpu (tests/environments/triton_cumsum).
TEST = Profile(
    name="test",
    description="exists for rebench's own tests (cheats, plumbing, degenerate policies "
    "whose outcome does not depend on the cpu size): N = 1e6 on the CPU, 3 s per call; "
    "scores not comparable with cpu",
    # `rebench calibrate triton_cumsum -p test -n 3 --allow-busy` (bwrap) on the 2-core dev
    # VM on 2026-12-04, medians of 3, at load average 4.4-5.0 (other tests running: it was
    # never idle that morning): start 4.32, 4.08, 4.24; reference 0.89, 0.93, 1.23. An
    # earlier run at load 9-12 gave 4.70 and 1.01. The gap (3.3 in ln ms) is about the cpu
    # profile's (3.44).
    starting_raw=4.2410,  # 69.5 ms
    reference_raw=0.9339,  # 2.54 ms
    anchors_hardware="cpu:Intel(R) Xeon(R) Processor x2",
    params={
        "n": 1_000_000, "device": "cpu", "timed_calls": 9, "statistic": "min",
        **_COMMON, "call_timeout_s": 3,
    },
    instruction_text={
        "n_human": "1,000,000", "statistic_text": "the fastest of the timed calls counts",
        "device_name": "the CPU",
        "device_hint": "Any CPU code is allowed (PyTorch, NumPy, Numba are installed); the "
                       "machine has 2 cores.",
    },
    calibration_sd_limit=_CALIBRATION_SD_LIMIT,
    gpus=0,
    memory_gb=4.0,
    default_budget_s=1200.0,
    scoring_timeout_s=120.0,
)

GPU = Profile(
    name="gpu",
    description="one NVIDIA GPU, N = 1e8 as in the paper: Triton recommended, any GPU code",
    # `rebench calibrate triton_cumsum -p gpu -n 3` (bwrap) on an H200 on 2026-12-02, spec
    # 1.3.0 (inputs drawn inside the clock); docs/benchmarks/triton_cumsum-h200.md.
    starting_raw=1.4018,  # 4.06 ms (in-process 3.79 ms)
    reference_raw=-0.1041,  # 0.901 ms (in-process 0.661 ms)
    anchors_hardware="gpu:NVIDIA H200",
    params={
        "n": 100_000_000, "device": "cuda", "timed_calls": 400,
        # Calls are timed in batches of fresh inputs (gpu_transport.py): the protocol's
        # fixed cost per batch (about 0.5 ms: the first call after the child is thawed
        # launches slowly, and the clock's last read) is spread over 40 calls.
        "batch": 40,
        # The scorer's own preparation of a batch may wait this long (summed over its 40
        # slots) for the GPU before the GPU counts as shared (gpu_transport.py): honest
        # scorings waited at most 4.1 ms on the H200 (2026-12-01), a GPU hog 96 ms.
        "prep_wait_ms": 8.0,
        "statistic": "median",
        **_COMMON,
    },
    instruction_text={
        "n_human": "100,000,000",
        "statistic_text": "the calls are timed in batches of 40 back-to-back calls, and the "
                          "median over the batches of the time per call counts",
        "device_name": "a GPU",
        "device_hint": "We recommend Triton; any GPU code (CUDA, PyTorch) is allowed.",
    },
    calibration_sd_limit=_CALIBRATION_SD_LIMIT,
    gpus=1,
    memory_gb=16.0,
    default_budget_s=8 * 3600.0,
    scoring_timeout_s=600.0,
)

# What a score may tell the agent (core/feedback.py). Every failure is one of these codes
# (plus the common ones: timeout, crash, ...) with its fixed sentence; the child's exception
# text, exit status, log and every per-call time stay in the private details, so code that
# ran on the scorer's inputs cannot write into the message. Numbers: the score itself
# (ms, raw) and the number of timed calls, a constant of the profile.
FEEDBACK = Feedback(
    reasons={
        "missing_solution": "solution.py is missing from the submission",
        "no_gpu": "this profile needs a CUDA GPU, and the scorer sees none",
        "load_failed": "solution.py could not be imported, or it defines no callable "
                       "prefix_sum (import it yourself to see the error)",
        "load_timeout": "solution.py did not finish loading within the start-up limit",
        "call_raised": "prefix_sum raised an exception (call it yourself on a random input "
                       "to see it)",
        "not_plain_tensor": "prefix_sum must return a plain torch.Tensor (no subclass, no "
                            "other type)",
        "wrong_dtype": "prefix_sum must return an int32 tensor",
        "wrong_device": "prefix_sum must return a tensor on the device of its input",
        "wrong_shape": "prefix_sum must return a tensor of the input's shape",
        "protocol": "the solution process wrote to the scorer's pipe or flag page out of turn",
        "process_tree": "the solution's processes kept multiplying while the scorer froze them",
        "gpu_busy": "the GPU was busy with other work while the scorer prepared a batch: no "
                    "GPU work may keep running between calls, and no other GPU process may "
                    "run during scoring",
        "wrong_result": "a timed call's output differs from the correct answer",
        "unfinished": "an output was not yet right when its batch was reported done: all "
                      "work must be finished inside the call",
    },
    numbers={"ms": 4, "raw": 6, "timed_calls": 0},
)

SPEC = EnvironmentSpec(
    id="triton_cumsum",
    version="1.3.0",
    title="Optimize a Kernel",
    direction=Direction.LOWER,
    raw_score_meaning=(
        "ln(milliseconds) of one prefix_sum call on a fresh random int32 input, timed from "
        "a trusted process (median of the timed calls); lower is better"
    ),
    profiles={"cpu": CPU, "gpu": GPU, "test": TEST},
    solutions={
        "starting": SolutionRecipe("starting"),
        "reference": SolutionRecipe("reference"),
        "expert": SolutionRecipe("expert"),
    },
    aggregation=Aggregation.BEST,
    solution_globs=("**/*.py",),
    child_modules=("child", "protocol"),
    params_type=TritonParams,
    feedback=FEEDBACK,
    snapshot_max_bytes=4 * 1024 * 1024,
    paper_starting_raw=1.5535302804958044,
    paper_reference_raw=0.4700036292457356,
)
