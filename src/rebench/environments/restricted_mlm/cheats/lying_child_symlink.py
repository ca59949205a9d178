"""A lying child that plants links instead of files: graph.json pointing at the scorer's
held-out data (hoping the error message quotes it) and a tensors file pointing at a
device that never ends."""
import glob
import os
import sys

_out = sys.argv[2] if len(sys.argv) > 2 else "."
_pattern = "/tmp/pytest-of-*/pytest-*/rebench-home*/cache/restricted_mlm/*/protected/eval.json"
_targets = glob.glob(_pattern)
os.symlink(_targets[0] if _targets else "/etc/passwd", os.path.join(_out, "graph.json"))
os.symlink("/dev/zero", os.path.join(_out, "tensors.safetensors"))
os._exit(0)


def get_trained_model():
    raise RuntimeError("never reached")
