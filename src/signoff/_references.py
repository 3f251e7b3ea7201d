"""``package.module:attr`` references to user code: the catalog and the role directory.

The current directory is importable (as ``python -m`` would make it), so a
``mytools.py`` next to where ``signoff serve`` starts is found without
``PYTHONPATH``. Every failure is an :class:`InvalidReference` naming the
setting and what to do, never a traceback.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

from signoff.exceptions import InvalidReference

FACTORY_HINT = "name a function that takes no arguments and returns it"


def import_reference(
    reference: str, setting: str, *, broken: type[InvalidReference] = InvalidReference
) -> Any:
    """The object ``module:attr`` names (``attr`` may be dotted).

    A module that is not there is an :class:`InvalidReference`; one that is there but
    fails while importing (a syntax error, a missing dependency, an exception at module
    level) is ``broken``: the user's own code needs fixing, not the setting.
    """
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise InvalidReference(
            f"{setting} must be MODULE:ATTR, got {reference!r} — e.g. mytools:build_catalog"
        )
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        value: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if not _names_the_module(exc, module_name):
            raise broken(
                f"{setting}: importing {module_name!r} failed: {exc} — install what it imports"
            ) from exc
        raise InvalidReference(
            f"{setting}: cannot import {module_name!r} ({exc}) — run from the directory that "
            "holds it, install it, or add its directory to PYTHONPATH"
        ) from exc
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else module_name
        raise broken(
            f"{setting}: {module_name!r} has a syntax error at {where}: {exc.msg} — fix the "
            "module (rerun with --debug for the traceback)"
        ) from exc
    except Exception as exc:  # the module's own code raised while it was imported
        raise broken(
            f"{setting}: importing {module_name!r} raised {type(exc).__name__}: {exc} — fix the "
            "module (rerun with --debug for the traceback)"
        ) from exc
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise InvalidReference(
                f"{setting}: module {module_name!r} has no {attr!r} — check the name after ':'"
            ) from None
    return value


def build_from_reference(
    reference: str,
    setting: str,
    kind: type[Any],
    what: str,
    *,
    broken: type[InvalidReference] = InvalidReference,
) -> Any:
    """An instance of ``kind`` named directly, or returned by a no-argument factory."""
    value = import_reference(reference, setting, broken=broken)
    if isinstance(value, kind):
        return value
    result = call_factory(value, reference, setting, what)
    if not isinstance(result, kind):
        raise InvalidReference(
            f"{setting}: {reference}() returned {type(result).__name__}, not {what} — "
            f"return a {kind.__name__}"
        )
    return result


def _names_the_module(exc: ModuleNotFoundError, module_name: str) -> bool:
    """Whether the missing module is the one named (or a package on its way), not one it imports."""
    missing = exc.name or ""
    return module_name == missing or module_name.startswith(missing + ".")


def call_factory(value: Any, reference: str, setting: str, what: str) -> Any:
    """Call a no-argument factory; a class, a non-callable or a wrong signature is refused."""
    if inspect.isclass(value):
        raise InvalidReference(
            f"{setting}: {reference} is a class, not {what} or a factory — {FACTORY_HINT}"
        )
    if not callable(value):
        raise InvalidReference(
            f"{setting}: {reference} is a {type(value).__name__}, not {what} — {FACTORY_HINT}"
        )
    try:
        inspect.signature(value).bind()
    except TypeError as exc:
        raise InvalidReference(
            f"{setting}: {reference} cannot be called without arguments ({exc}) — {FACTORY_HINT}"
        ) from None
    except ValueError:
        pass  # no introspectable signature (a builtin): call it and see
    try:
        return value()
    except Exception as exc:  # the user's factory failed: say so in one line
        raise InvalidReference(
            f"{setting}: {reference}() raised {type(exc).__name__}: {exc} — fix the factory "
            "(rerun with --debug for its traceback)"
        ) from exc
