"""rebench: RE-Bench environments, harness and analysis on a CPU or one GPU."""

import os

__version__ = "0.1.0"

# Every process rebench starts (scorers, trusted trainings, sandboxed children, which get it
# through the sandbox's allowed variables) waits passively at OpenMP barriers unless the
# operator chose otherwise. With OpenMP's default spin-waiting, two torch processes of 2
# threads each on 2 cores ran 25x slower than one alone (94 s against 3.7 s per process),
# and with passive waiting 1.5x (docs/decisions/0016-passive-openmp-wait.md): a scorer
# on a shared machine, or beside the agent's own training, stays usable. The variable is
# read when OpenMP loads (with torch), so it is set on importing rebench, before torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
