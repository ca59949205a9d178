"""A short, stable description of the hardware that timing-based anchors depend on."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


# Trusted deadlines stretch with the load average over the cores, up to this factor.
MAX_LOAD_STRETCH = 4.0


def load_stretch(cores: int | None = None) -> float:
    """How much longer work may take now than on an idle machine: the 1-minute load
    average over the cores, at least 1, at most MAX_LOAD_STRETCH. Deadlines multiplied by
    it do not take a busy machine for a slow solution (or a slow trusted step)."""
    cores = cores or usable_cores()
    return min(MAX_LOAD_STRETCH, max(1.0, os.getloadavg()[0] / cores))


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@lru_cache(maxsize=1)
def gpu_names() -> tuple[str, ...]:
    """Names of the visible NVIDIA GPUs, without importing torch (nvidia-smi), else ()."""
    if shutil.which("nvidia-smi") is None:
        return ()
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    names = tuple(line.strip() for line in out.splitlines() if line.strip())
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() != "":
        idx = [int(i) for i in visible.split(",") if i.strip().isdigit()]
        names = tuple(names[i] for i in idx if i < len(names))
    return names


def fingerprint(gpus: int) -> str:
    """`cpu:<model> x<cores>` for CPU profiles, `gpu:<name>` for GPU profiles."""
    if gpus > 0:
        names = gpu_names()
        return f"gpu:{names[0]}" if names else "gpu:none"
    return f"cpu:{cpu_model()} x{usable_cores()}"
