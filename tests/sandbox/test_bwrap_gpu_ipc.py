"""CUDA IPC from a trusted parent into a bubblewrap-sandboxed child (what GPU scorers do)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from rebench.sandbox import SandboxConfig
from rebench.sandbox.bwrap import BwrapSandbox, bwrap_available

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not bwrap_available(), reason="bubblewrap (bwrap) is not usable here"),
]

CHILD = """
import pickle, sys, torch
import torch.multiprocessing.reductions
x, y = pickle.loads(sys.stdin.buffer.read())
y.copy_(x * 2)
torch.cuda.synchronize()
"""


def test_child_writes_into_parent_cuda_buffer(tmp_path: Path) -> None:
    from multiprocessing.reduction import ForkingPickler

    import torch
    import torch.multiprocessing.reductions

    x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    y = torch.zeros_like(x)
    payload = io.BytesIO()
    ForkingPickler(payload).dump((x, y))
    box = BwrapSandbox(SandboxConfig(workdir=tmp_path, gpu=True, writable=False))
    box.create()
    done = subprocess.run(box.wrap([sys.executable, "-c", CHILD]), input=payload.getvalue(),
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert torch.equal(y, x * 2)


def test_exec_in_gpu_sandbox_sees_the_gpu(tmp_path: Path) -> None:
    box = BwrapSandbox(SandboxConfig(workdir=tmp_path, gpu=True))
    box.create()
    try:
        code = "import torch; x = torch.ones(8, device='cuda'); print(int(x.sum()))"
        result = box.exec(f'{sys.executable} -c "{code}"', 300)
    finally:
        box.destroy()
    assert result.stdout.strip() == "8", result.stderr[-2000:]
