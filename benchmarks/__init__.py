"""tacopt.benchmarks: zoos, the study harness, reports and plots."""
