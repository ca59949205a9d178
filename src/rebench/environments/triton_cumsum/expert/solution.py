"""Expert solution: as close to the memory floor as we could get.

gpu: reduce-then-scan in three Triton kernels (x read twice, y written once, a one-program
carry between blocks). cpu: Numba kernels on two threads where one of them scans its first third
in a single pass while the other reduces the second third.
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
