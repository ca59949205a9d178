"""Reference solution: a fused blocked parallel scan.

gpu: three Triton kernels (block positive counts; conditional block scan with cross-block
offsets; block-sum fix-up), as in RE-Bench's reference. cpu: the same blocked idea with
Numba kernels run on all cores (a reduce phase, a tiny serial carry, a scan phase).
Writes straight into the scorer's output buffer through the optional `out` argument.
"""

import os

import torch

if os.environ.get("REBENCH_PROFILE") == "gpu":
    import scan_gpu  # noqa: F401  (Triton kernels compile at the first call)
else:
    import scan_cpu  # noqa: F401  (Numba kernels compile here, at import)


def prefix_sum(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    if out is None:
        out = torch.empty_like(x)
    if x.is_cuda:
        import scan_gpu

        return scan_gpu.prefix_sum_into(x, out)
    import scan_cpu

    return scan_cpu.prefix_sum_into(x, out)
