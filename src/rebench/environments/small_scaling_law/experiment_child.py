"""One experiment's training, in a process of its own (the service's child).

    python -m rebench.environments.small_scaling_law.experiment_child < request.json

The request names the recipe (Recipe's fields), the protected files to read (the train
split and the validation windows: trusted paths chosen by the service, never by the agent)
and the configuration; the reply on stdout is {"curve": [[step, loss], ...], "final_loss"}.
The service starts it under the profile's memory, pids and time limits, so an experiment
is limited like untrusted work and never trains inside the harness process.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from rebench.environments.small_scaling_law.trainer import Recipe, train_config


def main() -> None:
    """Read the request from stdin, train, print the result as one JSON line."""
    request = json.loads(sys.stdin.read())
    recipe = Recipe(**request["recipe"])
    train = np.memmap(request["train_path"], dtype=np.uint16, mode="r")
    rows = np.load(request["rows_path"])
    lr = request.get("lr")
    result = train_config(recipe, train, rows, int(request["n_embd"]),
                          int(request["max_iters"]), None if lr is None else float(lr))
    sys.stdout.write(json.dumps({"curve": [list(p) for p in result.curve],
                                 "final_loss": result.final_loss}) + "\n")


if __name__ == "__main__":
    main()
