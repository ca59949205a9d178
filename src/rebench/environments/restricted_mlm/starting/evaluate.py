"""Local check: export model.py's forward the way the scorer does, apply the same op
allow-list and value rules (dtypes, index sources and ranges, memory and multiply-add
limits), run the checked graph (not your module) on the validation split with the
scorer's masking, and print the masked-token loss and the score ln(loss - c). When a
check fails it prints which op, node and source line (an official score shows only the
reason code).

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
from graph_check import GraphError, Limits, Masking, eval_windows, masked_loss, parse_graph, plan

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
    limits = Limits(config["max_node_elements"], config["max_live_bytes"],
                    config["max_forward_macs"])
    cost = plan(program, tensors, masking.batch_size, masking.seq_len, masking.vocab_size,
                limits)
except GraphError as exc:
    raise SystemExit(f"INVALID ({exc.code}): {exc}") from None
print(f"export and checks passed in {time.time() - t0:.1f} s; ops: {program.op_counts}; "
      f"peak {cost.peak_bytes / 2**20:.0f} MiB of {limits.max_live_bytes / 2**20:.0f}, "
      f"{cost.macs:.3g} multiply-adds per batch of {limits.max_forward_macs:.3g}")
data = np.memmap(config["data"]["val"], dtype=np.uint16, mode="r")
windows = eval_windows(data, masking.seq_len, batches * masking.batch_size)
try:
    loss = masked_loss(program, tensors, windows, masking, torch.device("cpu"), math.inf)
except GraphError as exc:
    raise SystemExit(f"INVALID ({exc.code}): {exc}") from None
floor = config["loss_floor"]
score = math.log(loss - floor) if loss > floor else float("nan")
print(f"validation masked loss {loss:.4f} over {len(windows)} windows; "
      f"score ln(loss - {floor}) = {score:.4f}")
