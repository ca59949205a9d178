"""The prepared assets are split as documented. The golden bands (the start about 0, the
reference about 1, each with the ops the scorer saw) are declared in degenerate.py (GOLDEN)
and checked by the generic test, tests/environments/test_golden_all_environments.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def test_prepared_assets(mlm_assets: Path) -> None:
    public = {p.relative_to(mlm_assets / "public").as_posix()
              for p in (mlm_assets / "public").rglob("*") if p.is_file()}
    assert public == {"data/train.bin", "data/val.bin", "tokenizer.json", "config.json",
                      "export_child.py", "graph_check.py", "graph_rules.py", "model.pt"}
    protected = mlm_assets / "protected"
    assert len((protected / "secret.bin").read_bytes()) == 32
    record = json.loads((protected / "eval.json").read_text())
    config = json.loads((mlm_assets / "public" / "config.json").read_text())
    assert record["mask_id"] == config["mask_id"] == 0  # the BPE's end-of-text id
    assert record["vocab_size"] == config["vocab_size"] == 2048
    # Enough held-out tokens for the evaluation windows, and no chunk shared with val.
    test = np.fromfile(protected / "test.bin", dtype=np.uint16)
    val = np.fromfile(mlm_assets / "public" / "data" / "val.bin", dtype=np.uint16)
    assert len(test) >= record["eval_batches"] * record["batch_size"] * record["seq_len"]
    chunk = 4096
    val_chunks = {val[i:i + chunk].tobytes() for i in range(0, len(val), chunk)}
    assert not any(test[i:i + chunk].tobytes() in val_chunks
                   for i in range(0, len(test), chunk))
