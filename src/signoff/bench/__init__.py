"""`signoff bench`: what the protocol costs, next to the bare write it protects."""

from signoff.bench._run import BenchReport, run_bench

__all__ = ["BenchReport", "run_bench"]
