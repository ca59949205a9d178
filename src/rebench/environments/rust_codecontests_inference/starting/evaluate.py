"""Evaluate solution.py on the validation problems (validation.jsonl), locally and unofficially,
with the same child runner, model gateway and judge as the official scorer.

    python evaluate.py [--solution solution.py] [--limit N]
"""

import sys

from rebench.environments.rust_codecontests_inference.local_eval import main

if __name__ == "__main__":
    sys.exit(main())
