"""What answers taken from public material score on a fresh small_scaling_law prepare
(issue 26, class 6; decision 0015): each answer is scored officially (bwrap where
available) and normalized with the prepare's own anchors.

    PYTHONPATH=src python benchmarks/ssl_public_answers.py [--profile cpu] [--fresh]
        [--out docs/benchmarks/data/ssl_public_answers.json]

Answers:
- start: the starting answer as given (the public sweep table's optimum, rescaled);
- table_rescaled: the table's optimum width, max_iters for the drawn budget, the table's
  loss (what 1.4.0 scored normalized about 1.4 with);
- noise_midpoint_guess: the table's answer with its loss raised for the midpoint of the
  noise range the instructions give, by the mixture a reader of the code would work out
  (clean tokens pay -ln(1 - r) more, a random one ln(V / r)): no experiment;
- table_width_start_loss_doubled: twice the table's width at the drawn budget, the
  table's loss (a public point other than the optimum).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

from rebench.core.calibration import resolve_anchors
from rebench.core.discovery import load_spec
from rebench.core.normalize import normalize
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score
from rebench.sandbox import default_isolation


def _answers(public: Path, vocab: int, noise_mid: float, loss: float, width: int
             ) -> dict[str, dict[str, object]]:
    start = json.loads((public / "answer.json").read_text())
    recipe = json.loads((public / "recipe.json").read_text())
    per_iter = (recipe["n_layer"] * 12 * 6 * recipe["block_size"] * recipe["batch_size"])

    def iters(n: int) -> int:
        return int(recipe["target_flops"] // (per_iter * n * n))

    r = noise_mid
    guess = (1 - r) * (loss - math.log(1 - r)) + r * math.log(vocab / r)
    return {
        "start": start,
        "table_rescaled": {"loss_prediction": round(loss, 4), "max_iters": iters(width),
                           "n_embd": width},
        "noise_midpoint_guess": {"loss_prediction": round(guess, 4),
                                 "max_iters": iters(width), "n_embd": width},
        "table_width_start_loss_doubled": {"loss_prediction": round(loss, 4),
                                           "max_iters": iters(2 * width),
                                           "n_embd": 2 * width},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--fresh", action="store_true", help="prepare again (a new draw)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from rebench.environments.small_scaling_law.sweep import table_optimum

    spec = load_spec("small_scaling_law")
    profile = spec.profile(args.profile)
    params = profile.typed
    t0 = time.monotonic()
    assets = prepare_environment(spec, profile, force=args.fresh)
    prepared_s = time.monotonic() - t0
    meta = json.loads((assets / "protected" / "meta.json").read_text())
    anchors = resolve_anchors(spec, profile)
    best = table_optimum(profile.name)
    answers = _answers(assets / "public", int(meta["vocab_size"]),
                       (params.noise_low + params.noise_high) / 2, best.loss, best.n_embd)
    iso = default_isolation()
    rows: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, answer in answers.items():
            snap = Path(tmp) / name
            snap.mkdir()
            (snap / "answer.json").write_text(json.dumps(answer))
            t1 = time.monotonic()
            result = official_score(spec, profile, snap, iso)
            norm = normalize(result.raw, anchors, spec.direction)
            rows[name] = {"answer": answer, "raw": result.raw, "normalized": norm,
                          "loss": result.details.get("loss"), "seconds":
                          round(time.monotonic() - t1, 1)}
            print(json.dumps({name: rows[name]}), flush=True)
    summary = {"version": spec.version, "profile": profile.name, "isolation": iso.value,
               "prepare_s": round(prepared_s, 1), "target_flops": meta["target_flops"],
               "noise_rate": meta["noise_rate"],
               "l_star": json.loads((assets / "protected" / "lstar.json").read_text()),
               "anchors": {"start": anchors.starting_raw,
                           "reference": anchors.reference_raw,
                           "source": anchors.source.value},
               "answers": rows}
    text = json.dumps(summary, indent=1, default=str)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
