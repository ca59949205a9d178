"""nanogpt_chat_rl's degenerate policies on one profile: every policy declared in
degenerate.py for the profile, made from a fresh copy of the starting files and scored
through official scoring (as tests/environments/test_degenerate_policies.py does on cpu),
and the prompt-independent response policies of the tests scored at the level of responses
against the stored opponents. Each must be invalid or at most the start (normalized with
the profile's anchors, so measure those first with benchmarks/chat_rl.py).

    PYTHONPATH=src python benchmarks/chat_rl_degenerate.py --profile gpu --out degen-gpu.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from rebench.core.calibration import resolve_anchors
from rebench.core.discovery import environment_dir, load_spec
from rebench.core.normalize import normalize
from rebench.environments.nanogpt_chat_rl import degenerate
from rebench.environments.nanogpt_chat_rl.scoring import heldout_tasks, judge_responses
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.sandbox import default_isolation
from rebench.scoring.declarations import PolicyContext

RESPONSES = {
    "function_words": "and the",
    "fluent_sentence": "The river ran past the old mill and the green field.",
    "answer_template": "The answer is 12.",
    "opponent_style": "42. The king rode to the town with his men.",
    "bare_number": "5.",
    "empty": "",
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--out", default="chat-degenerate.json")
    args = parser.parse_args()
    spec = load_spec("nanogpt_chat_rl")
    profile = spec.profile(args.profile)
    anchors = resolve_anchors(spec, profile)
    assets = prepare_environment(spec, profile)
    results: dict[str, object] = {"profile": profile.name, "version": spec.version,
                                  "anchors": [anchors.starting_raw, anchors.reference_raw]}
    tasks = heldout_tasks(assets)
    opponents = json.loads((assets / "protected" / "opponents.json").read_text())
    for name, text in [*RESPONSES.items(), ("echo", None)]:
        responses = [t.prompt for t in tasks] if text is None else [text] * len(tasks)
        rates, dependence = judge_responses(assets, tasks, responses, opponents)
        raw = float(np.mean(list(rates.values())))
        results[f"responses/{name}"] = {
            "raw": raw, "normalized": normalize(raw, anchors, spec.direction),
            "dependence": dependence.to_json()}
        print(name, results[f"responses/{name}"], flush=True)
    for policy in degenerate.POLICIES:
        if profile.name not in policy.profiles:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            workspace, scratch = Path(tmp) / "workspace", Path(tmp) / "scratch"
            scratch.mkdir()
            shutil.copytree(environment_dir(spec.id) / "starting", workspace)
            policy.make(PolicyContext(spec, profile, assets / "public", workspace, scratch))
            snapshot = Path(tmp) / "snapshot"
            snapshot_solution(spec, workspace, snapshot)
            result = official_score(spec, profile, snapshot, default_isolation())
        results[f"model/{policy.name}"] = {
            "expect": policy.expect.value, "valid": result.valid, "raw": result.raw,
            "normalized": normalize(result.raw, anchors, spec.direction)
            if result.valid else None, "message": result.message}
        print(policy.name, results[f"model/{policy.name}"], flush=True)
        Path(args.out).write_text(json.dumps(results, indent=2, default=str))
    Path(args.out).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
