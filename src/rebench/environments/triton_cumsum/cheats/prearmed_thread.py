"""Work armed before the clock (issue 26, class 8): at its first call the solution starts a
thread that waits for the scorer to put the next input into the shared buffer and computes
the answer at once into a private buffer, so that a call whose answer is already there
only copies it. If the thread could run while the scorer prepares the next call (between
drawing the input and starting the clock), the calls would be valid and fast. On the cpu
the child's whole tree is frozen until the clock starts, so the answer is never ready when
the call begins: the call then leaves the output as it found it (poisoned) and the score
is NaN ("wrong_result"). The gpu counterpart (kernels armed on a stream that waits for the
input to change) is benchmarks/triton_cumsum_prearm_solution.py."""

import threading
import time

import torch

PROBE = 1024  # leading elements that identify an input (random in [-10, 10))
_lock = threading.Lock()
_ready: dict[str, torch.Tensor] = {}  # "key": the input's first PROBE values; "y": answer
_started = threading.Event()


def _answer(x: torch.Tensor) -> torch.Tensor:
    positive = (x > 0).to(torch.int64)
    odd = ((positive.cumsum(0) - positive) % 2).bool()
    return torch.where(odd, x.to(torch.int64), 0).cumsum(0).to(torch.int32)


def _watch(x: torch.Tensor) -> None:
    seen = x[:PROBE].clone()
    while True:
        if torch.equal(x[:PROBE], seen):
            time.sleep(0.0002)
            continue
        seen = x[:PROBE].clone()
        y = _answer(x)
        with _lock:
            _ready["key"], _ready["y"] = seen, y


def prefix_sum(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    if not _started.is_set():
        _started.set()
        threading.Thread(target=_watch, args=(x,), daemon=True).start()
    with _lock:
        key, y = _ready.get("key"), _ready.get("y")
    if key is not None and y is not None and torch.equal(key, x[:PROBE]):
        out.copy_(y)  # computed before the call began
    return out
