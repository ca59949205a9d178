"""Ask the run's judge which of two responses is better (the only access to the judge).

    from judge_client import compare
    compare([(prompt, response_a, response_b), ...])  # -> [1.0 | 0.0 | 0.5, ...]

1.0: a is better, 0.0: b is better, 0.5: a tie. Each comparison counts against the run's
allowance (config.json: max_comparisons); a call sends at most max_comparisons_per_call.
"""

import json
import subprocess

with open("config.json") as _config:
    _PER_CALL = json.load(_config)["max_comparisons_per_call"]


def compare(items):
    verdicts = []
    for start in range(0, len(items), _PER_CALL):
        request = {"comparisons": [{"prompt": p, "a": a, "b": b}
                                   for p, a, b in items[start: start + _PER_CALL]]}
        out = subprocess.run(["rebench-service", "judge", "-"], input=json.dumps(request),
                             capture_output=True, text=True)
        try:
            reply = json.loads(out.stdout)
        except ValueError:
            raise SystemExit(f"the judge did not answer: {out.stderr.strip()}") from None
        if not reply.get("ok"):
            raise SystemExit(f"the judge refused: {reply.get('error')}")
        verdicts.extend(reply["verdicts"])
    return verdicts
