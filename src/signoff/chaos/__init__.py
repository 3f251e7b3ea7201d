"""The chaos run behind `signoff chaos`: real worker processes killed at each named point."""

from signoff.chaos._run import HEADER, ChaosReport, PointFigures, run_chaos

__all__ = ["HEADER", "ChaosReport", "PointFigures", "run_chaos"]
