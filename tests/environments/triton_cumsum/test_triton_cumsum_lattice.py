"""The gpu clock's last read samples each output on a secret lattice (strided_read.py).
What the protocol relies on, checked on the CPU: the lattice stays inside the buffer, its
offset is drawn per seed, and no unwritten stretch longer than its pitch can hide from it
(the strided copy itself needs a GPU: test_triton_cumsum_gpu.py)."""

from __future__ import annotations

import pytest
import torch

from rebench.environments.triton_cumsum.gpu_transport import LATTICE_SAMPLES, LATTICE_WIDTH
from rebench.environments.triton_cumsum.strided_read import draw_lattice, read_async

N = 100_000_000


@pytest.mark.parametrize("seed", range(5))
def test_lattice_fits_the_buffer_and_has_the_samples(seed: int) -> None:
    lattice = draw_lattice(N, LATTICE_SAMPLES, LATTICE_WIDTH, seed)
    where = lattice.positions("cpu")
    assert where.numel() == LATTICE_SAMPLES
    assert int(where.min()) >= 0 and int(where.max()) < N
    assert torch.equal(where, torch.unique(where))  # sorted, no position twice


def test_offsets_differ_between_seeds() -> None:
    offsets = {draw_lattice(N, LATTICE_SAMPLES, LATTICE_WIDTH, s).offset for s in range(20)}
    assert len(offsets) > 15


@pytest.mark.parametrize("seed", range(3))
def test_every_stretch_longer_than_the_pitch_is_sampled(seed: int) -> None:
    """A solution that leaves any run of `pitch` consecutive outputs unwritten (e.g. the
    tail of a kernel still running when it reports done) is always caught."""
    lattice = draw_lattice(N, LATTICE_SAMPLES, LATTICE_WIDTH, seed)
    where = lattice.positions("cpu")
    gaps = torch.diff(torch.cat([torch.tensor([-1]), where, torch.tensor([N])]))
    assert int(gaps.max()) <= lattice.pitch


def test_read_refuses_what_is_not_int32_into_pinned_memory() -> None:
    lattice = draw_lattice(1000, 64, 4, 0)
    with pytest.raises(TypeError):
        read_async(torch.zeros(1000, dtype=torch.int64), lattice,
                   torch.zeros(64, dtype=torch.int32), None)  # type: ignore[arg-type]
