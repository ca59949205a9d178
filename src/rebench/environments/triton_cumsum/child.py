"""Untrusted side: `python -m rebench.environments.triton_cumsum.child ...`, run sandboxed.

Imports the solution from the snapshot, maps the scorer's input and output buffers, reports
ready, then for each `go` (cpu: a pipe message; gpu: a number in the shared flag page,
busy-waited on) calls `prefix_sum` on the input view, puts the result into the output
buffer and reports `done` (gpu: after synchronizing, in the flag page). It returns bytes
in a buffer, never a verdict: everything this process says is checked by the scorer. The
checks below only turn common mistakes into clear messages.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import mmap
import os
import pickle
import sys
import tempfile
import time
import traceback
from typing import Any

from rebench.environments.triton_cumsum.protocol import (
    DONE,
    FLAG_BYTES,
    GO,
    RETURNED,
    SEEN,
    SLOT,
    SYNCED,
    ChildGone,
    Tag,
    pending,
    receive,
    send,
)

MAX_ERROR_CHARS = 4000


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solution-dir", required=True)
    parser.add_argument("--go-fd", type=int, required=True)
    parser.add_argument("--done-fd", type=int, required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--in-fd", type=int, default=-1)
    parser.add_argument("--out-fd", type=int, default=-1)
    parser.add_argument("--flag-fd", type=int, default=-1)
    return parser.parse_args(argv)


def _writable_caches() -> None:
    """Compilers cache to $HOME by default, which is the read-only snapshot here."""
    scratch = tempfile.mkdtemp(prefix="rebench-child-")
    for key in ("TRITON_CACHE_DIR", "NUMBA_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
        os.environ.setdefault(key, os.path.join(scratch, key.lower()))


def _cpu_buffers(args: argparse.Namespace) -> tuple[Any, Any]:
    import torch

    views = []
    for fd in (args.in_fd, args.out_fd):
        mapped = mmap.mmap(fd, args.n * 4, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        views.append(torch.frombuffer(mapped, dtype=torch.int32, count=args.n))
    return views[0], views[1]


def _cuda_buffers(args: argparse.Namespace) -> tuple[Any, Any]:
    import torch
    import torch.multiprocessing

    message = receive(args.go_fd, deadline=time.monotonic() + 120.0, max_payload=1 << 20)
    if message.tag is not Tag.HANDLES:
        raise RuntimeError(f"expected the buffer handles, got {message.tag.name}")
    xs, outs = pickle.loads(message.payload)  # sent by the trusted scorer: lists of slots
    torch.cuda.set_device(xs[0].device)
    return xs, outs


def _load_solution(solution_dir: str) -> tuple[Any, bool]:
    sys.path.insert(0, solution_dir)
    module = importlib.import_module("solution")
    fn = getattr(module, "prefix_sum", None)
    if not callable(fn):
        raise TypeError("solution.py must define a function prefix_sum(x)")
    try:
        accepts_out = "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        accepts_out = False
    return fn, accepts_out


def _check_result(y: Any, out: Any, n: int) -> str | None:
    """Why `y` cannot be the answer (a reason code, a newline, the details), or None.
    Only a courtesy: the scorer verifies."""
    import torch

    if type(y) is not torch.Tensor:
        return (f"not_plain_tensor\nprefix_sum must return a plain torch.Tensor, got "
                f"{type(y).__module__}.{type(y).__qualname__}")
    if y.dtype != torch.int32:
        return f"wrong_dtype\nprefix_sum must return int32, got {y.dtype}"
    if y.device != out.device:
        return f"wrong_device\nprefix_sum must return a tensor on {out.device}, got {y.device}"
    if tuple(y.shape) != (n,):
        return f"wrong_shape\nprefix_sum must return shape ({n},), got {tuple(y.shape)}"
    return None


def _one_call(fn: Any, accepts_out: bool, x: Any, out: Any, n: int) -> str | None:
    """Call the solution once and leave its answer in `out`; a problem text or None."""
    y = fn(x, out=out) if accepts_out else fn(x)
    if y is None and accepts_out:
        y = out
    problem = _check_result(y, out, n)
    if problem is None and (y.data_ptr() != out.data_ptr() or not y.is_contiguous()):
        out.copy_(y)
    return problem


def _serve_cpu(fn: Any, accepts_out: bool, x: Any, out: Any, args: argparse.Namespace) -> None:
    """Answer `go` messages until `quit` or the scorer closes the pipe."""
    while True:
        try:
            message = receive(args.go_fd, deadline=float("inf"))
        except ChildGone:
            return
        if message.tag is not Tag.GO:
            return
        problem = _one_call(fn, accepts_out, x, out, args.n)
        if problem is not None:
            send(args.done_fd, Tag.ERROR, problem.encode())
            return
        send(args.done_fd, Tag.DONE)


def _serve_gpu(fn: Any, accepts_out: bool, x: Any, out: Any, args: argparse.Namespace) -> None:
    """`x`, `out`: the scorer's buffer slots. Busy-wait on the go slot of the flag page;
    after each call synchronize and write the done slot. The scorer trusts none of it: it
    ends its clock with its own GPU read."""
    import torch

    page = mmap.mmap(args.flag_fd, FLAG_BYTES, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    flags = memoryview(page).cast("q")
    number = flags[DONE]
    while True:
        number += 1
        spins = 0
        while flags[GO] != number:
            spins += 1
            if spins & 0x3FFF == 0 and pending(args.go_fd):  # quit, or the scorer is gone
                return
        flags[SEEN] = time.perf_counter_ns()
        slot = flags[SLOT]
        problem = _one_call(fn, accepts_out, x[slot], out[slot], args.n)
        if problem is not None:
            send(args.done_fd, Tag.ERROR, problem.encode())
            return
        flags[RETURNED] = time.perf_counter_ns()
        torch.cuda.synchronize()
        flags[SYNCED] = time.perf_counter_ns()
        flags[DONE] = number


def main(argv: list[str]) -> int:
    args = _args(argv)
    _writable_caches()
    try:
        x, out = _cuda_buffers(args) if args.device == "cuda" else _cpu_buffers(args)
        fn, accepts_out = _load_solution(args.solution_dir)
    except BaseException as exc:
        _report(args.done_fd, exc, "load_failed", "could not load solution.py")
        return 1
    send(args.done_fd, Tag.READY)
    try:
        serve = _serve_gpu if args.device == "cuda" else _serve_cpu
        serve(fn, accepts_out, x, out, args)
    except BaseException as exc:
        _report(args.done_fd, exc, "call_raised", "prefix_sum raised")
        return 1
    return 0


def _report(done_fd: int, exc: BaseException, code: str, what: str) -> None:
    """Send the reason code and the exception's last line to the scorer (which keeps the
    line private); the traceback goes to stderr (the child's log, private too)."""
    lines = traceback.format_exception_only(type(exc), exc)
    text = f"{code}\n{what}: {''.join(lines).strip()}"
    trace = traceback.format_exc()
    print(trace, file=sys.stderr, flush=True)
    with contextlib.suppress(OSError):
        send(done_fd, Tag.ERROR, text[:MAX_ERROR_CHARS].encode())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
