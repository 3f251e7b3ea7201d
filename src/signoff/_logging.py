"""Logging for `signoff serve` and the workers: structlog over the standard library.

``text`` is a readable line per event, ``json`` one JSON object per line with
``timestamp``, ``level``, ``logger``, ``event`` and the request id of the
request being served (and, while tracing is on, the current ``trace_id`` and
``span_id``). uvicorn's and signoff's standard-library loggers go
through the same formatter, so every line of a worker has one shape. Values
whose key names a secret are replaced before rendering.
"""

from __future__ import annotations

import logging
import logging.config
from collections.abc import MutableMapping
from typing import Any

import structlog

from signoff._request_context import current_request_id
from signoff._telemetry import current_ids
from signoff._text import escaped

LOG_FORMATS = ("text", "json")
SECRET_KEYS = ("authorization", "token", "secret", "password", "cookie")
REDACTED = "[redacted]"


def _add_request_id(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    request_id = current_request_id()
    if request_id is not None:
        event.setdefault("request_id", request_id)
    ids = current_ids()
    if ids is not None:
        event.setdefault("trace_id", ids[0])
        event.setdefault("span_id", ids[1])
    return event


def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event):
        if key != "event" and any(word in key.lower() for word in SECRET_KEYS):
            event[key] = REDACTED
    return event


def _escape_controls(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Every string value on one line: request data cannot forge a line or colour one."""
    for key, value in event.items():
        if isinstance(value, str):
            event[key] = escaped(value)
    return event


def _shared_processors() -> list[Any]:
    return [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _add_request_id,
        _redact,
        _escape_controls,
    ]


def logging_config(level: str = "info", log_format: str = "text") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` document (uvicorn's ``log_config`` takes it too)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}")
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    formatter = {
        "()": structlog.stdlib.ProcessorFormatter,
        "foreign_pre_chain": _shared_processors(),
        "processors": [
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    }
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "signoff",
        "stream": "ext://sys.stderr",
    }
    loggers = {
        name: {"handlers": ["stderr"], "level": level.upper(), "propagate": False}
        for name in ("signoff", "uvicorn", "uvicorn.error", "uvicorn.access", "psycopg")
    }
    # The pool logs every connection it hands out at INFO (half of a PostgreSQL server's
    # lines); its warnings (a connection lost, the pool exhausted) still show.
    quiet = max(logging.getLevelNamesMapping()[level.upper()], logging.WARNING)
    if level.upper() == "DEBUG":
        quiet = logging.DEBUG
    loggers["psycopg.pool"] = {
        "handlers": ["stderr"],
        "level": logging.getLevelName(quiet),
        "propagate": False,
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"signoff": formatter},
        "handlers": {"stderr": handler},
        "loggers": loggers,
    }


def configure_logging(level: str = "info", log_format: str = "text") -> None:
    """Route the standard library and structlog through one renderer (call once per process)."""
    logging.config.dictConfig(logging_config(level, log_format))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
