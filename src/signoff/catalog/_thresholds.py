"""The risk thresholds in effect while the gate asks a tool for its risk.

A tool declares its thresholds with their defaults (``WriteTool.thresholds``);
the deployment's policy file may set them per tool and tenant
(docs/POLICIES.md). The gate binds the effective values for the duration of
one propose call, so ``risk()`` reads them with ``self.threshold(name)``
without a change of its signature. Outside a call the declared defaults hold.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_IN_EFFECT: ContextVar[Mapping[str, Any] | None] = ContextVar("signoff_thresholds", default=None)


@contextmanager
def thresholds_in_effect(values: Mapping[str, Any]) -> Iterator[None]:
    """Bind ``values`` (name → value) for the code run inside, on this thread or task."""
    token = _IN_EFFECT.set(dict(values))
    try:
        yield
    finally:
        _IN_EFFECT.reset(token)


def threshold_in_effect(name: str, declared: Mapping[str, Any]) -> Any:
    """The bound value of ``name``, else its declared default; a KeyError for an undeclared
    name (a tool may read only what it declared, so the policy file can be checked)."""
    if name not in declared:
        raise KeyError(f"threshold {name!r} is not declared in the tool's `thresholds`")
    bound = _IN_EFFECT.get()
    if bound is not None and name in bound:
        return bound[name]
    return declared[name]
