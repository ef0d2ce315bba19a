"""Helpers of the command line: the benchmark cases and the timing loop."""
