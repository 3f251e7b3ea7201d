"""Who is calling: a fixed principal, or one derived from the run's context object."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signoff import Principal

PrincipalSource = Principal | Callable[[Any], Principal]
"""A :class:`~signoff.Principal`, or a function of ``RunContextWrapper.context`` returning one.

Identity comes from your authenticated session, never from the model's arguments.
"""


def principal_of(source: PrincipalSource, context: Any) -> Principal:
    principal = source if isinstance(source, Principal) else source(context)
    if not isinstance(principal, Principal):
        raise TypeError("the principal source must return a signoff.Principal")
    return principal
