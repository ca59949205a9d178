"""rebench: RE-Bench environments, harness and analysis on a CPU or one GPU."""

__version__ = "0.1.0"
