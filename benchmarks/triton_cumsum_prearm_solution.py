"""triton_cumsum gpu submission with pre-armed work (issue 26, class 8), for
benchmarks/triton_cumsum_prearm.py: the reference's three Triton kernels (scan_gpu.py,
copied beside this file as solution.py) plus work armed on the GPU for the next batch.

After the call on slot j has computed its answer, the call writes a sentinel into the last
word of its own (consumed) input and enqueues on a side stream: "wait until that word is
no longer the sentinel" (cuStreamWaitValue32: the GPU's front end waits, no kernel runs,
nothing keeps the GPU busy), then the kernels for slot j - 1 straight into its output.
When the scorer next draws slot j's input, slot j - 1's input is complete (the scorer
draws the slots in order on one stream), and the armed kernels compute its answer. In
1.2.0 the scorer drew every input while the child was frozen, before the clock: the answer
of the first ARMED_SLOTS slots was then computed outside the clock, and their calls only
had to wait for it. Since 1.3.0 the inputs are drawn inside the clock, and the same work
is timed.

With no slot armed it is the same code doing the honest work: the honest twin. The
child's `torch.cuda.synchronize()` (a device-wide wait, which would wait for the armed
stream and deadlock) is replaced by a wait for the current stream in both twins, so the
twins differ only in the arming. The submission prints one `prearm:` line per 40 calls
to stderr (the scorer keeps it in its private details) so the benchmark can check that
armed work was actually used.
"""

import ctypes
import sys

import scan_gpu
import torch

ARMED_SLOTS = 6  # the benchmark rewrites this line (--slots); 0: the honest twin
SENTINEL = 0x7FFFFFF0  # never an input value (inputs are in [-10, 10))
# cuStreamWaitValue32 GEQ waits until (int32)(*addr - THRESHOLD) >= 0: true for every input
# value in [-10, 10), false for SENTINEL.
THRESHOLD = 0xF0000000
WAIT_GEQ = 0x0

_slots: dict[int, int] = {}  # input data_ptr -> slot index, in the order first seen
_buffers: list[tuple[torch.Tensor, torch.Tensor]] = []
_events: dict[int, torch.cuda.Event] = {}  # slot -> event after its armed kernels
_stats = {"calls": 0, "armed_calls": 0, "ready_at_entry": 0, "arm_errors": 0}
_side: list[torch.cuda.Stream] = []


def _stream_sync(device: object = None) -> None:
    del device
    torch.cuda.current_stream().synchronize()


torch.cuda.synchronize = _stream_sync  # the child's device-wide wait would wait for armed work


def _wait_value_fn() -> object | None:
    lib = ctypes.CDLL("libcuda.so.1")
    for name in ("cuStreamWaitValue32_v2", "cuStreamWaitValue32"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
            return fn
    return None


_WAIT = _wait_value_fn() if ARMED_SLOTS else None


def _arm(slot: int, watched: torch.Tensor) -> None:
    """Enqueue slot `slot`'s next answer behind a wait on the last word of `watched`."""
    if _WAIT is None:
        _stats["arm_errors"] += 1
        return
    main = torch.cuda.current_stream()
    watched[-1:].fill_(SENTINEL)  # after this call's kernels, on the same stream
    if not _side:
        _side.append(torch.cuda.Stream())
    side = _side[0]
    side.wait_stream(main)
    addr = watched.data_ptr() + (watched.numel() - 1) * 4
    status = _WAIT(ctypes.c_void_p(side.cuda_stream), addr, THRESHOLD, WAIT_GEQ)
    if status != 0:
        _stats["arm_errors"] += 1
        return
    x, out = _buffers[slot]
    with torch.cuda.stream(side):
        scan_gpu.prefix_sum_into(x, out)
        event = torch.cuda.Event()
        event.record(side)
    _events[slot] = event


def prefix_sum(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    if out is None:
        out = torch.empty_like(x)
    slot = _slots.setdefault(x.data_ptr(), len(_slots))
    if slot == len(_buffers):
        _buffers.append((x, out))
    _stats["calls"] += 1
    event = _events.pop(slot, None)
    if event is not None:  # armed in the previous batch: its kernels wrote `out`
        _stats["armed_calls"] += 1
        _stats["ready_at_entry"] += int(event.query())
        torch.cuda.current_stream().wait_event(event)
    else:
        scan_gpu.prefix_sum_into(x, out)
    if 1 <= slot <= ARMED_SLOTS:
        _arm(slot - 1, x)
    if _stats["calls"] % 40 == 0:
        print("prearm: " + " ".join(f"{k}={v}" for k, v in _stats.items()),
              file=sys.stderr, flush=True)
    return out
