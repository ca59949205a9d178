"""Evaluate solution.py on the validation problems (validation.jsonl), locally and unofficially,
with the same child runner, model gateway and judge as the official scorer.

    python evaluate.py [--solution solution.py] [--limit N]

Self-contained: the tool's modules are in the folder `rust_eval/` next to this file.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rust_eval.local_eval import main

if __name__ == "__main__":
    sys.exit(main())
