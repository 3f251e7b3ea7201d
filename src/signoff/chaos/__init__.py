"""The chaos run behind `signoff chaos`: real worker processes killed at each named point."""

from signoff.chaos._figures import HEADER, ChaosReport, PointFigures, figures_line
from signoff.chaos._processes import ANYWHERE
from signoff.chaos._run import POINTS, run_chaos

__all__ = [
    "ANYWHERE",
    "HEADER",
    "POINTS",
    "ChaosReport",
    "PointFigures",
    "figures_line",
    "run_chaos",
]
