"""triton_cumsum ("Optimize a Kernel"): a conditional prefix sum, timed from a trusted process."""
