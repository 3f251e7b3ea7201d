"""The `signoff` command line."""

from signoff.cli._main import main

__all__ = ["main"]
