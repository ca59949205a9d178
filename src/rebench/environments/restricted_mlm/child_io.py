"""Run the export child in the sandbox (the untrusted runner) and read what it sent back,
as data only.

The child writes graph.json and tensors.safetensors into a fresh folder it may write to;
once the runner has killed everything it started, the trusted side opens them relative to
that folder's descriptor with O_NOFOLLOW (a link planted by the child is refused), checks
they are regular files under a size limit, and parses them with json and safetensors (no
pickle anywhere).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from rebench.environments.restricted_mlm import export_child
from rebench.environments.restricted_mlm.graph_check import GraphError
from rebench.scoring.context import ScoringContext
from rebench.scoring.runner import ChildFailure, run_child

CHILD_SCRIPT = Path(export_child.__file__)
MAX_GRAPH_BYTES = 16 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
# The child's stdout and stderr are only a log (its data are files), kept in a file of the
# scorer's scratch dir; it may print this much.
LOG_FILE = "export_child.log"
MAX_LOG_BYTES = 64 * 1024 * 1024
_CHILD_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
_TENSOR_DTYPES = {torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                  torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool}


@dataclass(frozen=True)
class ExportRequest:
    """What the child exports: the example batch's shape and the vocabulary."""

    vocab_size: int
    seq_len: int
    batch_size: int
    mask_id: int
    timeout_s: float
    max_tensor_bytes: int


@dataclass(frozen=True)
class Export:
    """The child's graph text and its tensors (on the CPU), plus how long the child took."""

    graph_text: str
    tensors: dict[str, torch.Tensor]
    child_s: float
    log_tail: str


def run_export(ctx: ScoringContext, request: ExportRequest) -> Export:
    """Run the child on the snapshot (read-only; its own folder is the only writable one);
    raise GraphError with the agent-visible reason. The runner waits for the child's own
    process and kills whatever it left running before the files are read."""
    with tempfile.TemporaryDirectory(prefix="rebench-mlm-") as tmp:
        workdir = Path(tmp)
        shutil.copyfile(CHILD_SCRIPT, workdir / CHILD_SCRIPT.name)
        argv = [sys.executable, CHILD_SCRIPT.name, str(ctx.solution_dir), ".",
                str(request.vocab_size), str(request.seq_len), str(request.batch_size),
                str(request.mask_id)]
        outcome = run_child(ctx, argv, timeout_s=request.timeout_s, workdir=workdir,
                            writable=True, extra_ro=(ctx.solution_dir,), env=_CHILD_ENV,
                            max_output_bytes=MAX_LOG_BYTES,
                            output_file=ctx.scratch_dir / LOG_FILE)
        tail = outcome.stderr_tail[-2000:]
        # The runner's own codes (timeout, output_cap, memory): the child's exit status
        # and output stay private.
        if outcome.failure is ChildFailure.TIMEOUT:
            raise GraphError(outcome.reason, f"exporting the model took longer than "
                             f"{request.timeout_s:.0f} s (get_trained_model() and one "
                             "forward)", **outcome.private())
        if outcome.failure is ChildFailure.OUTPUT_CAP:
            raise GraphError(outcome.reason, f"exporting the model printed more than "
                             f"{MAX_LOG_BYTES >> 20} MB of output (get_trained_model() and "
                             "one forward)", **outcome.private())
        if outcome.failure is ChildFailure.MEMORY:
            raise GraphError(outcome.reason, "exporting the model ran out of memory",
                             **outcome.private())
        return _collect(workdir, request, outcome.seconds, tail)


def _collect(workdir: Path, request: ExportRequest, child_s: float, tail: str) -> Export:
    dfd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        error = _read(dfd, export_child.ERROR_FILE, MAX_ERROR_BYTES)
        if error is not None:
            raise GraphError("export_failed", "model.py could not be exported: "
                             + _error_text(error))
        graph = _read(dfd, export_child.GRAPH_FILE, MAX_GRAPH_BYTES)
        blob = _read(dfd, export_child.TENSORS_FILE, request.max_tensor_bytes)
    finally:
        os.close(dfd)
    if graph is None or blob is None:
        raise GraphError("crash", "the export child ended without a graph (it crashed or "
                         f"was killed); its output ended with: {tail[-600:]}")
    return Export(graph.decode(errors="replace"), load_tensors(blob), child_s, tail)


def _read(dfd: int, name: str, limit: int) -> bytes | None:
    """A regular file of the child's folder, or None when absent; GraphError otherwise."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GraphError("bad_output", f"{name} from the export child cannot be read "
                         f"({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GraphError("bad_output", f"{name} from the export child is not a regular "
                             "file")
        if info.st_size > limit:
            raise GraphError("too_large", f"{name} is {info.st_size / 1e6:.1f} MB, more than "
                             f"the limit {limit / 1e6:.1f} MB")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(limit + 1)[:limit]
    finally:
        os.close(fd)


def _error_text(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        return f"{data['error']}\n{data.get('traceback', '')}"[:3000]
    except (ValueError, KeyError, TypeError):
        return raw.decode(errors="replace")[:3000]


def load_tensors(blob: bytes) -> dict[str, torch.Tensor]:
    """safetensors bytes as dense tensors of plain dtypes with finite values."""
    from safetensors.torch import load

    try:
        tensors = load(blob)
    except Exception as exc:  # malformed file from the child
        raise GraphError("bad_output", "the tensors file is not valid safetensors: "
                         f"{str(exc)[:200]}") from None
    for name, value in tensors.items():
        if value.dtype not in _TENSOR_DTYPES:
            raise GraphError("forbidden_dtype", f"tensor {name[:60]} has dtype {value.dtype}, "
                             "not allowed")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise GraphError("not_finite", f"tensor {name[:60]} contains NaN or infinite "
                             "values")
    return tensors
