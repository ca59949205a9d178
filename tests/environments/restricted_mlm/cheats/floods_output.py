"""A model that prints without end while it loads: the export child's log is capped, so
the scorer's disk and memory stay bounded and the submission is invalid."""
import os


def get_trained_model():
    line = b"x" * 65536
    while True:
        os.write(1, line)
