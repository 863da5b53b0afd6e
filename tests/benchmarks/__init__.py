"""The benchmarks' own code: the figures they compute and the command that prints them all."""
