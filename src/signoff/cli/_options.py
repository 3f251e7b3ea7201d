"""Option types shared by the commands."""

from __future__ import annotations

from typing import Any

import click


class DatabaseOption(click.ParamType):  # type: ignore[type-arg]  # generic in newer click only
    """``--db``: a SQLite path or a ``postgresql://`` URL; an empty value is refused.

    ``--db ""`` (an unset shell variable) used to fall back to the default store without a
    word, so a run meant for one database silently wrote into another.
    """

    name = "URL|PATH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail(
                "is empty — give a SQLite path or a postgresql:// URL, or leave --db out "
                "for the default",
                param,
                ctx,
            )
        return value


DATABASE = DatabaseOption()
