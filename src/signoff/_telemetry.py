"""OpenTelemetry traces: a span per gate step, off unless configured (docs/OPERATIONS.md).

Until :func:`enable_tracing` is called every helper here answers at once from one
module-level read: no span object, no context change, not even an import of
OpenTelemetry. Once enabled, spans come from the tracer of the provider it was given
(``signoff serve`` builds one with the SDK and the OTLP/HTTP exporter, and makes it the
global provider, whose tracer the MCP SDK's own spans use).

Attributes name the tool, the proposal, the execution, the outcome and a refusal's code —
never an argument value, a token or an exception's message (which may quote input).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "SpanHandle",
    "check_tracing",
    "configure_tracing",
    "context_from_headers",
    "current_ids",
    "disable_tracing",
    "enable_tracing",
    "from_event",
    "span",
    "tracing_enabled",
    "wanted",
]

PREFIX = "signoff."


class _Tracing:
    """What this process traces with; ``tracer`` None: tracing is off."""

    __slots__ = ("tracer",)

    def __init__(self) -> None:
        self.tracer: Tracer | None = None


_TRACING = _Tracing()


def enable_tracing(provider: TracerProvider | None = None) -> None:
    """Start emitting signoff's spans through ``provider`` (default: the global one)."""
    from opentelemetry import trace

    from signoff import __version__

    chosen = provider if provider is not None else trace.get_tracer_provider()
    _TRACING.tracer = chosen.get_tracer("signoff", __version__)


def disable_tracing() -> None:
    """Stop emitting spans (the provider itself is left as it is)."""
    _TRACING.tracer = None


def tracing_enabled() -> bool:
    return _TRACING.tracer is not None


class SpanHandle:
    """A step's span: attributes may be added as the step learns them (ids, the outcome)."""

    __slots__ = ("_span",)

    def __init__(self, span: Span | None) -> None:
        self._span = span

    def set(self, **attributes: str | int | bool | None) -> None:
        """Set ``signoff.<name>`` attributes (a dotted name as it is); None values are left out."""
        if self._span is not None:
            self._span.set_attributes(_attributes(attributes))

    def rename(self, name: str) -> None:
        """A server span learns its route only once the request was routed."""
        if self._span is not None:
            self._span.update_name(name)


_OFF = SpanHandle(None)


class _NoSpan:
    """The context manager :func:`span` returns while tracing is off: nothing at all."""

    __slots__ = ()

    def __enter__(self) -> SpanHandle:
        return _OFF

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()


def span(
    name: str,
    *,
    server: bool = False,
    parent: Context | None = None,
    **attributes: str | int | bool | None,
) -> Any:
    """A span named ``name`` around the block, child of the current one (or of ``parent``).

    A refusal (anything with a string ``code``) marks the span refused with that code;
    any other exception by its type's name only.
    """
    tracer = _TRACING.tracer
    if tracer is None:
        return _NO_SPAN
    return _traced(tracer, name, server, parent, _attributes(attributes))


@contextmanager
def _traced(
    tracer: Tracer,
    name: str,
    server: bool,
    parent: Context | None,
    attributes: dict[str, str | int | bool],
) -> Iterator[SpanHandle]:
    from opentelemetry.trace import SpanKind, StatusCode

    kind = SpanKind.SERVER if server else SpanKind.INTERNAL
    with tracer.start_as_current_span(
        name,
        context=parent,
        kind=kind,
        attributes=attributes,
        # Never the exception's message or traceback: either may quote the arguments.
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield SpanHandle(current)
        except BaseException as exc:
            code = getattr(exc, "code", None)
            if isinstance(code, str):
                current.set_attributes({"signoff.outcome": "refused", "signoff.refusal_code": code})
                current.set_status(StatusCode.ERROR, code)
            else:
                current.set_attribute("error.type", type(exc).__qualname__)
                current.set_status(StatusCode.ERROR)
            raise


def _attributes(values: Mapping[str, str | int | bool | None]) -> dict[str, str | int | bool]:
    return {
        name if "." in name else PREFIX + name: value
        for name, value in values.items()
        if value is not None
    }


def context_from_headers(headers: Mapping[str, str]) -> Context | None:
    """The caller's trace context from W3C ``traceparent``/``tracestate`` (None: off)."""
    if _TRACING.tracer is None:
        return None
    from opentelemetry import propagate

    return propagate.extract(headers)


def current_ids() -> tuple[str, str] | None:
    """(trace id, span id) of the current span, in hex, while tracing is on."""
    if _TRACING.tracer is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def from_event(data: Mapping[str, Any]) -> Context | None:
    """The trace context an audit event was appended in (its ``trace_id``/``span_id``).

    A notification is delivered later, by another process perhaps: its span joins the trace
    of the step that appended the event.
    """
    if _TRACING.tracer is None:
        return None
    trace_id, span_id = data.get("trace_id"), data.get("span_id")
    if not isinstance(trace_id, str) or not isinstance(span_id, str):
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    # The W3C propagator parses and checks the ids (the same text a traceparent carries).
    return TraceContextTextMapPropagator().extract({"traceparent": f"00-{trace_id}-{span_id}-01"})


OTLP_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def wanted(setting: bool | None, env: Mapping[str, str]) -> bool:
    """``SIGNOFF_TRACING`` when set, else whether an OTLP endpoint is configured."""
    if setting is not None:
        return setting
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(env.get(name, "").strip() for name in OTLP_ENDPOINTS)


def check_tracing(setting: bool | None, env: Mapping[str, str]) -> None:
    """Refuse to start when traces are wanted but the ``otel`` extra is not installed."""
    import importlib.util

    if wanted(setting, env) and (
        importlib.util.find_spec("opentelemetry.sdk") is None
        or importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is None
    ):
        from signoff.exceptions import ConfigurationError

        raise ConfigurationError(_NOT_INSTALLED)


_NOT_INSTALLED = (
    "tracing is on (SIGNOFF_TRACING or OTEL_EXPORTER_OTLP_ENDPOINT) but OpenTelemetry's SDK "
    "is not installed — pip install 'signoff[otel]', or unset them"
)


def configure_tracing(setting: bool | None, env: Mapping[str, str]) -> bool:
    """Export spans over OTLP/HTTP when :func:`wanted`; True when tracing is now on.

    The SDK reads its own ``OTEL_*`` variables (endpoint, headers, service name, sampler);
    its provider becomes the global one, so the MCP SDK's spans go the same way. Without
    the ``otel`` extra installed, asking for traces is a configuration error.
    """
    if not wanted(setting, env):
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        from signoff.exceptions import ConfigurationError

        raise ConfigurationError(_NOT_INSTALLED) from exc
    provider = SdkTracerProvider(
        resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "signoff"})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    enable_tracing(provider)
    return True
