"""Run one experiment through the trusted `experiments` service and print its result.

    python run_experiment.py N_EMBD MAX_ITERS [LR]

Equivalent to: rebench-service experiments '{"n_embd": N, "max_iters": T, "lr": LR}'.
"""

import json
import subprocess
import sys

request = {"n_embd": int(sys.argv[1]), "max_iters": int(sys.argv[2])}
if len(sys.argv) > 3:
    request["lr"] = float(sys.argv[3])
out = subprocess.run(["rebench-service", "experiments", json.dumps(request)],
                     capture_output=True, text=True, check=False)
sys.stdout.write(out.stdout or out.stderr)
