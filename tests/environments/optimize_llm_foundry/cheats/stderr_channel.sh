#!/usr/bin/env bash
# Channel probe: the held-out rows in the output and in an exception's text (a Python
# traceback whose message is the first row), then a failure. The agent must see only the
# fixed reason `pipeline_failed`, none of the text.
cd "$(dirname "$0")"
head -c 300 train_data.jsonl >&2
python -c "raise RuntimeError(open('train_data.jsonl').readline())"
