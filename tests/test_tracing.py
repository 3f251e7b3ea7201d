"""Traces: a span per gate step, the caller's traceparent continued over HTTP and MCP, the
trace id in the logs and the audit events, and never an argument value or a token."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import anyio
import pytest
import structlog
from fastapi.testclient import TestClient
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import ProxyTracerProvider, SpanKind

from signoff import _telemetry
from signoff._logging import _shared_processors, logging_config
from signoff.exceptions import AlreadyConsumed
from signoff.mcp_server import StaticIdentity, create_mcp_server
from signoff.notify import Notifier
from signoff.notify._events import Notification
from tests.conftest import AGENT, APPROVER, REFUND, World
from tests.http.conftest import auth, make_app
from tests.mcp.conftest import HUMAN, approve, call, client

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
SECRET_REASON = "the-parcel-arrived-crushed-7f3a"  # an argument value no span may carry

_EXPORTER = InMemorySpanExporter()


def _provider() -> TracerProvider:
    """One SDK provider for the test process, the global one (the MCP SDK's spans use it)."""
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    assert isinstance(current, ProxyTracerProvider), "another provider is global already"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    return provider


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _telemetry.enable_tracing(_provider())
    _EXPORTER.clear()
    yield _EXPORTER
    _telemetry.disable_tracing()
    _EXPORTER.clear()


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """signoff's loggers (stdlib and structlog) through the JSON renderer serve uses."""
    sink = io.StringIO()
    options = dict(logging_config("debug", "json")["formatters"]["signoff"])
    factory = options.pop("()")
    handler = logging.StreamHandler(sink)
    handler.setFormatter(factory(**options))
    logger = logging.getLogger("signoff")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    yield sink
    structlog.reset_defaults()
    logger.removeHandler(handler)
    logger.setLevel(level)


def _hex(span_id: int) -> str:
    return f"{span_id:016x}"


def _named(finished: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


def _children(finished: tuple[ReadableSpan, ...], parent: ReadableSpan) -> list[str]:
    assert parent.context is not None
    return [
        s.name
        for s in finished
        if s.parent is not None and s.parent.span_id == parent.context.span_id
    ]


def _ancestors(finished: tuple[ReadableSpan, ...], span: ReadableSpan) -> list[str]:
    by_id = {s.context.span_id: s for s in finished if s.context is not None}
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


def _http_flow(world: World) -> dict[str, Any]:
    """propose → approve → pick up → execute, every request carrying the agent's traceparent."""
    traced = {"traceparent": TRACEPARENT}
    agent, approver = auth(AGENT), auth(APPROVER, "decide-1")
    arguments = {**REFUND, "reason": SECRET_REASON}
    with TestClient(make_app(world)) as http:
        proposal = http.post(
            "/v1/proposals",
            json={"tool": "refund_order", "arguments": arguments},
            headers={**agent, **traced},
        )
        assert proposal.status_code == 201, proposal.text
        created = proposal.json()
        pid = created["proposal_id"]
        decided = http.post(
            f"/v1/proposals/{pid}/decision",
            json={"decision": "approve", "expected_version": created["version"]},
            headers={**approver, **traced},
        )
        assert decided.status_code == 200, decided.text
        token = http.get(
            f"/v1/proposals/{pid}/confirmation-token", headers={**agent, **traced}
        ).json()["confirmation_token"]
        executed = http.post(
            "/v1/executions",
            json={"proposal_id": pid, "confirmation_token": token},
            headers={**agent, "Idempotency-Key": "exec-1", **traced},
        )
        assert executed.status_code in (200, 201), executed.text
    return {
        "proposal_id": pid,
        "execution_id": executed.json()["execution"]["execution_id"],
        "secrets": [token, agent["Authorization"], approver["Authorization"], "decide-1", "exec-1"],
        "values": [SECRET_REASON, REFUND["order_id"]],
    }


def _attribute_text(finished: tuple[ReadableSpan, ...]) -> str:
    parts = []
    for s in finished:
        parts.append(s.name)
        parts.extend(f"{k}={v!r}" for k, v in (s.attributes or {}).items())
        parts.extend(str(e.attributes) for e in s.events)
        parts.append(str(s.status.description))
    return "\n".join(parts)


def test_an_http_flow_is_one_trace_continuing_the_agents_traceparent(
    world: World, spans: InMemorySpanExporter
) -> None:
    """Each request is a server span under the caller's span; each gate step under it, with
    its store writes and (execute) the provider call as children; the refund happened once."""
    flow = _http_flow(world)
    finished = spans.get_finished_spans()
    assert {f"{s.context.trace_id:032x}" for s in finished if s.context} == {TRACE_ID}
    servers = [s for s in finished if s.kind is SpanKind.SERVER]
    assert servers and all(s.parent is not None for s in servers)
    assert {_hex(s.parent.span_id) for s in servers if s.parent} == {PARENT_ID}
    assert {s.name for s in servers} >= {
        "POST /v1/proposals",
        "POST /v1/proposals/{proposal_id}/decision",
        "POST /v1/executions",
    }

    (propose,) = _named(finished, "signoff.propose")
    assert _ancestors(finished, propose) == ["POST /v1/proposals"]
    assert (propose.attributes or {})["signoff.tool"] == "refund_order"
    assert (propose.attributes or {})["signoff.proposal_id"] == flow["proposal_id"]
    assert (propose.attributes or {})["signoff.outcome"] == "awaiting_confirmation"
    assert _children(finished, propose) == ["signoff.store.write"]

    (decide,) = _named(finished, "signoff.decide")
    assert (decide.attributes or {})["signoff.outcome"] == "confirmed"
    assert "signoff.store.write" in _children(finished, decide)

    (execute,) = _named(finished, "signoff.execute")
    assert _ancestors(finished, execute) == ["POST /v1/executions"]
    assert (execute.attributes or {})["signoff.execution_id"] == flow["execution_id"]
    assert (execute.attributes or {})["signoff.outcome"] == "succeeded"
    assert _children(finished, execute) == [
        "signoff.store.write",
        "signoff.provider.call",
        "signoff.store.write",
    ]
    (provider,) = _named(finished, "signoff.provider.call")
    assert (provider.attributes or {})["signoff.outcome"] == "succeeded"
    assert (provider.attributes or {})["signoff.execution_id"] == flow["execution_id"]
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_no_argument_value_or_token_in_any_span(world: World, spans: InMemorySpanExporter) -> None:
    """Names, attributes, events and statuses hold ids and codes, never what was sent."""
    flow = _http_flow(world)
    text = _attribute_text(spans.get_finished_spans())
    assert flow["proposal_id"] in text  # the check below looks at real attribute text
    for value in (*flow["secrets"], *flow["values"]):
        assert value not in text, value


def test_audit_events_and_log_lines_carry_the_trace(
    world: World, spans: InMemorySpanExporter, json_log: io.StringIO
) -> None:
    """Every event the traced flow appended names the trace and a span of it; every log line
    of the requests names the trace too; neither holds a token or an argument value."""
    flow = _http_flow(world)
    finished = spans.get_finished_spans()
    span_ids = {_hex(s.context.span_id) for s in finished if s.context}
    with world.store.read() as tx:
        events = tx.audit_events(proposal_id=flow["proposal_id"])
    assert len(events) >= 4
    for event in events:
        data = json.loads(event.data)
        assert data["trace_id"] == TRACE_ID and data["span_id"] in span_ids, event.kind
    assert world.gate.verify_audit().ok

    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    requests = [line for line in lines if line.get("event") == "http.request"]
    assert len(requests) == 4
    assert {line["trace_id"] for line in requests} == {TRACE_ID}
    assert {line["span_id"] for line in requests} <= span_ids
    text = json_log.getvalue()
    for value in (*flow["secrets"], *flow["values"]):
        assert value not in text, value


def test_untraced_events_are_as_before(world: World) -> None:
    """Tracing off: a traceparent changes nothing in the events (their hashes are unchanged)."""
    with TestClient(make_app(world)) as http:
        response = http.post(
            "/v1/proposals",
            json={"tool": "refund_order", "arguments": REFUND},
            headers={**auth(AGENT), "traceparent": TRACEPARENT},
        )
    assert response.status_code == 201
    with world.store.read() as tx:
        (event,) = tx.audit_events(proposal_id=response.json()["proposal_id"])
    assert set(json.loads(event.data)) & {"trace_id", "span_id"} == set()


def test_a_notification_delivery_joins_the_trace_of_its_event(
    world: World, spans: InMemorySpanExporter
) -> None:
    """The notifier's delivery span is a child of the span that appended the event."""
    sent: list[Notification] = []

    class Inbox:
        destination = "test:inbox"
        max_attempts = 3

        def accepts(self, event_type: str, tenant: str) -> bool:
            return True

        def send(self, notification: Notification, now: datetime) -> None:
            sent.append(notification)

        def close(self) -> None:
            return None

    notifier = Notifier(world.store, [Inbox()], public_url="https://signoff.example")
    notifier.run_once()  # a new destination starts at the head
    flow = _http_flow(world)
    spans.clear()  # only the deliveries from here on
    assert notifier.run_once() >= 1
    deliveries = _named(spans.get_finished_spans(), "signoff.notify.deliver")
    assert len(deliveries) == len(sent) >= 1
    with world.store.read() as tx:
        appended = tx.audit_events(proposal_id=flow["proposal_id"])
    events = {e.seq: json.loads(e.data) for e in appended}
    for delivery, notification in zip(deliveries, sent, strict=True):
        data = events[notification.seq]
        assert delivery.context is not None and delivery.parent is not None
        assert f"{delivery.context.trace_id:032x}" == TRACE_ID
        assert _hex(delivery.parent.span_id) == data["span_id"]
        assert (delivery.attributes or {})["signoff.outcome"] == "delivered"


def test_an_mcp_tool_call_continues_the_agents_trace(
    world: World, spans: InMemorySpanExporter
) -> None:
    """The agent's context travels in params._meta.traceparent: the server's tools/call span
    and the gate's propose span under it are in the agent's trace."""
    server = create_mcp_server(world.gate, StaticIdentity(AGENT, HUMAN))
    agent_context = propagate.extract({"traceparent": TRACEPARENT})

    async def body() -> dict[str, Any]:
        async with client(server) as c:
            await c.list_tools()
            attached = otel_context.attach(agent_context)  # only around the call: _meta
            try:
                return await call(c, "request_refund_order_confirmation", REFUND)
            finally:
                otel_context.detach(attached)

    answer = anyio.run(body)
    assert answer["status"] == "awaiting_confirmation"
    finished = spans.get_finished_spans()
    (propose,) = _named(finished, "signoff.propose")
    assert propose.context is not None
    assert f"{propose.context.trace_id:032x}" == TRACE_ID
    assert "tools/call request_refund_order_confirmation" in _ancestors(finished, propose)
    (tool_call,) = _named(finished, "tools/call request_refund_order_confirmation")
    assert tool_call.kind is SpanKind.SERVER and tool_call.context is not None
    assert f"{tool_call.context.trace_id:032x}" == TRACE_ID
    approve(world, answer["proposal_id"], by=APPROVER)


def test_a_refused_step_names_its_code_and_not_its_message(
    world: World, spans: InMemorySpanExporter
) -> None:
    """A refusal marks the step's span refused with the stable code; no message, no input."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="once")
    spans.clear()
    with pytest.raises(AlreadyConsumed) as refused:
        world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="twice")
    (execute,) = _named(spans.get_finished_spans(), "signoff.execute")
    code = refused.value.code
    assert (execute.attributes or {})["signoff.refusal_code"] == code
    assert (execute.attributes or {})["signoff.outcome"] == "refused"
    assert execute.status.description == code
    assert not execute.events
    assert token not in _attribute_text((execute,))


def test_tracing_is_wanted_only_when_configured() -> None:
    """Off by default; an OTLP endpoint turns it on; SIGNOFF_TRACING decides either way."""
    assert not _telemetry.wanted(None, {})
    assert _telemetry.wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert _telemetry.wanted(None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces"})
    assert not _telemetry.wanted(False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert not _telemetry.wanted(
        None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}
    )
    assert _telemetry.wanted(True, {})
