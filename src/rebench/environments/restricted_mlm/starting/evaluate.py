"""Local check: export model.py's forward the way the scorer does, apply the same op
allow-list, run the checked graph (not your module) on the validation split with the
scorer's masking, and print the masked-token loss and the score ln(loss - c).

Run: python evaluate.py [--batches N]
The official score uses held-out data you never see; everything else is the same.
"""

import argparse
import json
import math
import time

import numpy as np
import torch
from export_child import example_batch, export_model, graph_data, load_solution
from graph_check import (
    GraphError,
    Masking,
    check_output_shape,
    eval_windows,
    masked_loss,
    parse_graph,
    run,
)

parser = argparse.ArgumentParser()
parser.add_argument("--batches", type=int, default=None, help="validation batches of 8")
args = parser.parse_args()
with open("config.json") as f:
    config = json.load(f)
masking = Masking(config["batch_size"], config["seq_len"], config["vocab_size"],
                  config["mask_id"], config["mask_fraction"], config["mask_seed"])
batches = args.batches or config["val_batches"]

t0 = time.time()
model = load_solution(".")
example = example_batch(masking.vocab_size, masking.seq_len, masking.batch_size,
                        masking.mask_id)
try:
    graph, tensors = graph_data(export_model(model, example))
    tensors = {k: v.clone() for k, v in tensors.items()}
    program = parse_graph(json.dumps(graph), tensors)
    meta = {k: torch.empty_like(v, device="meta") for k, v in tensors.items()}
    shape = (masking.batch_size, masking.seq_len)
    out = run(program, torch.zeros(shape, dtype=torch.long, device="meta"), meta,
              config["max_node_elements"])
    check_output_shape(out, masking.batch_size, masking.seq_len, masking.vocab_size)
except GraphError as exc:
    raise SystemExit(f"INVALID: {exc}") from None
print(f"export and op check passed in {time.time() - t0:.1f} s; ops: {program.op_counts}")
data = np.memmap(config["data"]["val"], dtype=np.uint16, mode="r")
windows = eval_windows(data, masking.seq_len, batches * masking.batch_size)
try:
    loss = masked_loss(program, tensors, windows, masking, torch.device("cpu"), math.inf)
except GraphError as exc:
    raise SystemExit(f"INVALID: {exc}") from None
floor = config["loss_floor"]
score = math.log(loss - floor) if loss > floor else float("nan")
print(f"validation masked loss {loss:.4f} over {len(windows)} windows; "
      f"score ln(loss - {floor}) = {score:.4f}")
